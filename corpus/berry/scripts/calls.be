# corpus/berry: function calls, recursion, closures, variadic calls, integer and real
# arithmetic in loops.  Fixed iteration counts; prints a checksum.
def fib(n) if n < 2 return n end return fib(n - 1) + fib(n - 2) end
def make_counter()
    var c = 0
    return def (d) c += d return c end
end
def sum3(a, b, c) return a + b + c end
var check = 0
check += fib(20)
var counter = make_counter()
for i: 0 .. 14999 counter(i & 7) end
check += counter(0)
for i: 0 .. 14999 check += sum3(i, 1, 2) end
var f = 0.5
var i = 0
while i < 60000
    f = f * 1.0000001 + (i % 13) / 7.0
    check = (check + (i ^ (i >> 3))) & 0x3fffffff
    i += 1
end
check += int(f)
var l = def (x) return x * 2 + 1 end
for j: 0 .. 14999 check += l(j) % 5 end
print("calls", check)
