// corpus/duktape: number to string (String, toString with radix, toFixed, toPrecision,
// toExponential: duk_numconv.c) and string to number (Number, parseInt, parseFloat),
// Math (duk_bi_math.c).  Fixed iteration counts; prints a checksum.
var check = 0, i;
for (i = 0; i < 700; i++) check += String(i * 37).length + String(i / 7).length;
for (i = 0; i < 300; i++) check += (i * 1.5).toString(16).length + i.toString(2).length;
for (i = 0; i < 300; i++) { var x = i * 3.14159; check += x.toFixed(3).length + x.toPrecision(6).length + x.toExponential(4).length; }
for (i = 0; i < 800; i++) check += parseInt("" + i * 11, 10) + parseFloat(i + ".25e1") + Number("0x" + (i & 0xfff));
for (i = 0; i < 2400; i++) check += Math.floor(Math.sqrt(i) * Math.sin(i) + Math.pow(1.0001, i % 100) + Math.abs(-i) % 3);
print("numbers " + check);
