# corpus/berry: maps with string and integer keys: insert, read, update, contains, find,
# remove, iteration over keys and values.  Fixed iteration counts; prints a checksum.
var check = 0
var m = {}
for i: 0 .. 1999 m["key" + str(i)] = i end
for i: 0 .. 3999 check += m["key" + str((i * 7) % 2000)] end
for i: 0 .. 2856 if m.contains("key" + str(i * 3)) check += 1 end end
for i: 0 .. 2856 var v = m.find("kex" + str(i), -1) check += v end
for i: 0 .. 2856 if i % 2 == 0 m.remove("key" + str(i)) end end
for k: m.keys() check += size(k) end
for v: m check += v end
var im = {}
for i: 0 .. 3713 im[i * 13] = i end
for i: 0 .. 3713 im[i * 13] = im[i * 13] + 1 end
for i: 0 .. 3713 check += im[i * 13] end
check += im.size() + m.size()
print("maps", check)
