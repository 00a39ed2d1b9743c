# corpus/janet: PEG matching (peg/compile and peg/match): a log-line grammar with
# captures, numbers and a CSV splitter, peg/find-all and peg/replace-all.  Fixed
# iteration counts; prints a checksum.
(var check 0)
(def lines @[])
(for i 0 250
  (array/push lines (string "2024-" (+ 1 (% i 12)) "-" (+ 1 (% i 28)) " user" i "@example.com GET /path/" (* i 7) " 200 " (% (* i 13) 5000))))
(def text (string/join lines "\n"))
(def log-line
  (peg/compile
    '{:num (number :d+)
      :date (* :num "-" :num "-" :num)
      :user (* (<- (some (+ :w "_"))) "@" (<- (some (+ :w "."))))
      :method (<- (+ "GET" "POST"))
      :path (<- (some (if-not :s 1)))
      :main (* :date " " :user " " :method " " :path " " :num " " :num -1)}))
(for j 0 8
  (each l lines
    (def m (peg/match log-line l))
    (when m (+= check (m 2) (length (m 6))))))
(def csv (peg/compile '{:field (<- (any (if-not (set ",\n") 1))) :main (* :field (any (* "," :field)))}))
(def row (string/join (map |(string "f" $) (range 40)) ","))
(for j 0 250 (+= check (length (peg/match csv row))))
(for j 0 8 (+= check (length (peg/find-all '(* "user" :d+) text))))
(for j 0 4 (+= check (length (peg/replace-all '(set "aeiou") "_" text))))
(print "peg " check)
