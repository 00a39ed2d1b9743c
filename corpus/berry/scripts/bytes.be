# corpus/berry: byte buffers (bytes): add of 1, 2 and 4 byte values, get and set,
# item and setitem, hex text to and from bytes, base64, string conversion, merge, copy,
# equality.  Fixed iteration counts; prints a checksum.
var check = 0
var b = bytes()
for i: 0 .. 6666 b.add(i & 0xff, 1) end
for i: 0 .. 1666 b.add(i * 7, 2) b.add(i * 40503, 4) end
for i: 0 .. b.size() - 1 check += b[i] end
for i: 0 .. 1666 check += b.get(i * 2, 2) + b.get(i * 4, 4) + b.geti(i, 1) end
for i: 0 .. 3332 b[i] = (b[i] + 1) & 0xff end
for i: 0 .. 1666 b.set(i * 2, i, 2) end
var hex = b.tostring(0)
for j: 0 .. 6 var h = bytes("00112233445566778899AABBCCDDEEFF" + str(j % 10) + "0") check += h.size() + h[j % 16] end
for j: 0 .. 2 var s = b.tob64() check += size(s) var d = bytes().fromb64(s) check += d.size() end
var t = bytes().fromstring("the quick brown fox jumps over the lazy dog")
for j: 0 .. 666 var m = t + t check += m.size() var c = m.copy() if c == m check += 1 end end
for j: 0 .. 666 check += size(t.asstring()) end
print("bytes", check)
