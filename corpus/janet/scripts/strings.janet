# corpus/janet: strings and buffers: string/format, buffer pushes, string/split,
# string/find, string/replace-all, case, slicing, string/join, comparison, describe.
# Fixed iteration counts; prints a checksum.
(var check 0)
(def words @[])
(for i 0 250 (array/push words (string "word" i (string/from-bytes (+ 97 (% i 26))))))
(def text (string/join words " "))
(for j 0 5
  (def buf @"")
  (for i 0 1000 (buffer/push-string buf (words (% i 250)) ";"))
  (+= check (length buf)))
(for i 0 2000 (+= check (length (string/format "%d:%s:%.3f:%5x" i (words (% i 250)) (/ i 3) i))))
(for j 0 100 (+= check (or (string/find (string "word" j "x") text) 0) (or (string/find (string "word" (* j 2)) text) 0)))
(for j 0 15 (+= check (length (string/split " " text)) (length (string/find-all "word" text))))
(for j 0 15 (+= check (length (string/ascii-upper text)) (get (string/ascii-lower text) j)))
(for j 0 10 (+= check (length (string/replace-all "word" "w" text))))
(for j 0 2500 (+= check (length (string/slice text (% j 1500) (+ (% j 1500) 20)))))
(for i 1 250 (if (< (words (- i 1)) (words i)) (++ check)))
(for i 0 3000 (+= check (length (string (* i 7) (/ i 3)))))
(print "strings " check)
