// corpus/duktape: regular expressions (duk_regexp_compiler.c, duk_regexp_executor.c):
// test, exec with groups, global match, replace by a pattern and by a function, split by
// a pattern, case-insensitive matching.  Fixed iteration counts; prints a checksum.
var check = 0, i, j;
var lines = [];
for (i = 0; i < 60; i++)
    lines.push("2024-" + (1 + i % 12) + "-" + (1 + i % 28) + " user" + i + "@example.com GET /path/" + (i * 7) + " 200 " + (i * 13 % 5000));
var text = lines.join("\n");
var date = /^(\d{4})-(\d+)-(\d+) (\w+)@([a-z.]+) (GET|POST) (\S+) (\d{3}) (\d+)$/;
for (j = 0; j < 3; j++)
    for (i = 0; i < lines.length; i++) { var m = date.exec(lines[i]); if (m) check += +m[3] + m[7].length; }
for (j = 0; j < 3; j++) check += text.match(/user\d+/g).length + text.match(/\d+/g).length;
for (j = 0; j < 2; j++) check += text.replace(/[aeiou]/g, "_").length;
for (j = 0; j < 2; j++) check += text.replace(/(\w+)@(\w+)/g, function (all, u, h) { return h + "#" + u; }).length;
for (j = 0; j < 2; j++) check += text.split(/\s+/).length;
var re = /EXAMPLE\.(com|org)/i;
for (i = 0; i < lines.length; i++) if (re.test(lines[i])) check++;
var g = /(a|b)*c/;
var s = "";
for (i = 0; i < 80; i++) s += (i & 1) ? "a" : "b";
for (i = 0; i < 60; i++) if (g.test(s + "c")) check++;
print("regexp " + check);
