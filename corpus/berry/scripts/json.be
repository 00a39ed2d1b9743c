# corpus/berry: json.dump (compact and formatted) and json.load of generated records
# (integers, reals, strings with escapes, nested lists and maps, booleans, nil).  Fixed
# iteration counts and a fixed LCG; prints a checksum.
import json
var seed = 42
def rand() seed = (seed * 1103515245 + 12345) % 2147483648 return seed end
var records = []
for i: 0 .. 119
    records.push({"id": i, "name": "item \"" + str(i) + "\"\n\t", "price": (rand() % 100000) / 100.0,
                  "tags": ["a" + str(i % 7), "b" + str(i % 11)], "ok": i % 2 == 0, "none": nil,
                  "nested": {"depth": [1, 2, [3, 4, {"x": rand() % 1000}]]}})
end
var check = 0
for j: 0 .. 2
    var text = json.dump(records)
    check += size(text)
    var back = json.load(text)
    check += back.size() + back[j]["id"]
end
check += size(json.dump(records, "format"))
print("json", check)
