# corpus/berry: strings: concatenation, format, find, split, count, case, byte and char,
# slicing, comparison, and the string pool of short strings.  Fixed iteration counts;
# prints a checksum.
import string
var check = 0
var words = []
for i: 0 .. 199 words.push("word" + str(i) + string.char(97 + i % 26)) end
var text = words.concat(" ")
for j: 0 .. 9
    var s = ""
    for i: 0 .. 799 s += words[i % 200] + ";" end
    check += size(s)
end
for i: 0 .. 1199 check += size(string.format("%d:%s:%.3f:%5x", i, words[i % 200], i / 3.0, i)) end
for j: 0 .. 79 check += string.find(text, "word" + str(j) + "x") + string.find(text, "word" + str(j * 2)) end
for j: 0 .. 11 check += size(string.split(text, " ")) + string.count(text, "word") end
for j: 0 .. 11 check += size(string.toupper(text)) + string.byte(string.tolower(text)[j]) end
for j: 0 .. 2999 check += size(text[j % 1000 .. j % 1000 + 20]) end
for i: 1 .. 199 if words[i - 1] < words[i] check += 1 end end
for i: 0 .. 2399 check += size(str(i * 7) + str(i / 3.0)) end
print("strings", check)
