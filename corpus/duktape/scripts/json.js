// corpus/duktape: JSON.stringify and JSON.parse of generated records (numbers, strings
// with escapes, nested arrays and objects), with and without indentation and a reviver
// (duk_bi_json.c).  Fixed iteration counts and a fixed LCG; prints a checksum.
var seed = 42;
function rand() { seed = (seed * 1103515245 + 12345) % 2147483648; return seed; }
var records = [];
for (var i = 0; i < 100; i++)
    records.push({ id: i, name: "item \"" + i + "\"\n\t", price: (rand() % 100000) / 100,
                   tags: ["a" + (i % 7), "b" + (i % 11), "\u00e9"], ok: (i & 1) == 0, none: null,
                   nested: { depth: [1, 2, [3, 4, { x: rand() % 1000 }]] } });
var check = 0;
for (var j = 0; j < 3; j++) {
    var text = JSON.stringify(records);
    check += text.length;
    var back = JSON.parse(text);
    check += back.length + back[j].id;
}
check += JSON.stringify(records, null, 2).length;
check += JSON.parse(JSON.stringify(records), function (k, v) { return typeof v === "number" ? v + 1 : v; }).length;
print("json " + check);
