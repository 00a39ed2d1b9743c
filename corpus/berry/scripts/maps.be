# corpus/berry: maps with string and integer keys: insert, read, update, contains, find,
# remove, iteration over keys and values.  Fixed iteration counts; prints a checksum.
var check = 0
var m = {}
for i: 0 .. 6999 m["key" + str(i)] = i end
for i: 0 .. 13999 check += m["key" + str((i * 7) % 7000)] end
for i: 0 .. 9999 if m.contains("key" + str(i * 3)) check += 1 end end
for i: 0 .. 9999 var v = m.find("kex" + str(i), -1) check += v end
for i: 0 .. 9999 if i % 2 == 0 m.remove("key" + str(i)) end end
for k: m.keys() check += size(k) end
for v: m check += v end
var im = {}
for i: 0 .. 12999 im[i * 13] = i end
for i: 0 .. 12999 im[i * 13] = im[i * 13] + 1 end
for i: 0 .. 12999 check += im[i * 13] end
check += im.size() + m.size()
print("maps", check)
