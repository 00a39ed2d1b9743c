// corpus/duktape: string concatenation, charAt/charCodeAt, indexOf/lastIndexOf, substring,
// slice, split and join by a string, toUpperCase/toLowerCase, replace by a string,
// String.fromCharCode, comparison (duk_bi_string.c, duk_heap_stringtable.c).  Fixed
// iteration counts; prints a checksum.
var check = 0, i, j;
var words = [];
for (i = 0; i < 143; i++) words.push("word" + i + String.fromCharCode(97 + i % 26));
var text = words.join(" ");
for (j = 0; j < 3; j++) {
    var s = "";
    for (i = 0; i < 571; i++) s += words[i % words.length] + ";";
    check += s.length;
}
for (i = 0; i < text.length; i += 15) check += text.charCodeAt(i) + (text.charAt(i) == "w" ? 1 : 0);
for (j = 0; j < 11; j++) check += text.indexOf("word" + j + "x") + text.lastIndexOf("word" + (j * 2));
for (j = 0; j < 8; j++) check += text.split(" ").length + text.split("word").length;
for (j = 0; j < 8; j++) check += text.toUpperCase().length + text.toLowerCase().charCodeAt(j);
for (j = 0; j < 71; j++) check += text.substring(j, j + 20).length + text.slice(-j - 5, -j).length;
for (j = 0; j < 114; j++) check += ("abc" + j).replace("c", "cc").length;
var sorted = words.slice(0).sort();
for (i = 1; i < sorted.length; i++) if (sorted[i - 1] < sorted[i]) check++;
var codes = [];
for (i = 0; i < 1143; i++) codes.push(String.fromCharCode(32 + i % 90));
check += codes.join("").length;
var u = "\u00e9\u4e2d\u00fc";
for (i = 0; i < 286; i++) check += (u + i).charCodeAt(1) + (u + i).length;
print("strings " + check);
