# corpus/berry: lists: push, pop, index read and write, insert, remove, find, concat
# (join), copy, reverse, iteration; a quicksort in Berry.  Fixed iteration counts and a
# fixed LCG; prints a checksum.
var seed = 12345
def rand() seed = (seed * 1103515245 + 12345) % 2147483648 return seed end
def qsort(a, lo, hi)
    if lo >= hi return end
    var p = a[(lo + hi) / 2]
    var i = lo
    var j = hi
    while i <= j
        while a[i] < p i += 1 end
        while a[j] > p j -= 1 end
        if i <= j var t = a[i] a[i] = a[j] a[j] = t i += 1 j -= 1 end
    end
    qsort(a, lo, j)
    qsort(a, i, hi)
end
var check = 0
var a = []
for i: 0 .. 1666 a.push(rand() % 100000) end
for j: 0 .. 3 for i: 0 .. a.size() - 1 a[i] = (a[i] + j * i) % 100003 end end
for x: a check += x end
var b = a.copy()
qsort(b, 0, b.size() - 1)
check += b[0] + b[-1]
var head = []
for i: 0 .. 499 head.push(a[i]) end
for j: 0 .. 1 check += size(head.concat(",")) end
for j: 0 .. 16 var k = a.find(a[(j * 97) % a.size()]) if k != nil check += k end end
var q = []
for i: 0 .. 1666 q.push(i) end
while q.size() > 800 check += q.pop() end
for i: 0 .. 32 q.insert(i * 3, i) q.remove(i * 5) end
q.reverse()
check += q[0] + q[1] + q.size()
print("lists", check)
