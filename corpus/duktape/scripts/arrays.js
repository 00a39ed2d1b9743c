// corpus/duktape: dense array element read and write (the array part of duk_hobject),
// push/pop/shift, sort with and without a comparator, join, slice, concat, splice,
// indexOf, forEach/map/filter/reduce, sparse arrays (duk_bi_array.c, duk_hobject_props.c).
// Fixed iteration counts and a fixed LCG (no Math.random); prints a checksum.
var seed = 12345;
function rand() { seed = (seed * 1103515245 + 12345) % 2147483648; return seed; }
var check = 0, i, j;
var a = [];
for (i = 0; i < 700; i++) a.push(rand() % 100000);
for (j = 0; j < 4; j++) for (i = 0; i < a.length; i++) a[i] = (a[i] + j * i) % 100003;
for (i = 0; i < a.length; i++) check += a[i];
var b = a.slice(0, 400);
b.sort(function (x, y) { return x - y; });
check += b[0] + b[b.length - 1];
var c = a.slice(0, 300).map(String);
c.sort();
check += c[0].length + c[c.length - 1].length;
for (j = 0; j < 2; j++) check += a.join(",").length;
var m = a.map(function (x) { return x * 2; }).filter(function (x) { return x % 3 == 0; });
check += m.reduce(function (s, x) { return s + x; }, 0);
a.forEach(function (x, k) { if (k % 100 == 0) check += x; });
for (j = 0; j < 16; j++) check += a.indexOf(a[(j * 97) % a.length]);
var q = [];
for (i = 0; i < 700; i++) q.push(i);
while (q.length > 350) check += q.pop();
for (i = 0; i < 12; i++) check += q.shift();
for (i = 0; i < 5; i++) { var s = q.splice(i * 5, 3); check += s[0]; q.splice(i * 5, 0, 1, 2); }
var cat = [];
for (i = 0; i < 40; i++) cat = cat.concat([i, i + 1, i + 2]);
check += cat.length;
var holes = [];
for (i = 0; i < 700; i += 3) holes[i] = i;
for (i = 0; i < holes.length; i++) if (holes[i] !== undefined) check += holes[i];
print("arrays " + check);
