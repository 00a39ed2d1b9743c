# corpus/janet: tables and structs: put, get, update, keyword, string and number keys,
# iteration with pairs and eachk, prototypes (table/setproto), struct construction and
# lookup.  Fixed iteration counts; prints a checksum.
(var check 0)
(def t @{})
(for i 0 2000 (put t (string "key" i) i))
(for i 0 4000 (+= check (get t (string "key" (% (* i 7) 2000)))))
(for i 0 2000 (if (= nil (get t (string "kex" i))) (++ check)))
(for i 0 2000 (if (even? i) (put t (string "key" i) nil)))
(eachk k t (+= check (length k)))
(eachp [k v] t (+= check v))
(def n @{})
(for i 0 3333 (put n (* i 13) i))
(for i 0 3333 (update n (* i 13) inc))
(for i 0 3333 (+= check (n (* i 13))))
(def proto @{:kind :base :scale 3})
(for i 0 2222
  (def o (table/setproto @{:x i :y (* 2 i)} proto))
  (+= check (+ (o :x) (o :y) (o :scale))))
(for i 0 2222
  (def s {:a i :b (+ i 1) :c "c" :d [1 2]})
  (+= check (+ (s :a) (s :b) (length (s :d)))))
(+= check (length t) (length n))
(print "tables " check)
