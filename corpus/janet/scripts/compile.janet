# corpus/janet: the compiler and the parser: parse, compile and run generated source
# text (eval-string: symbol resolution, macros expansion, special forms), and marshal
# and unmarshal of data and functions.  Fixed iteration counts; prints a checksum.
(var check 0)
(for i 0 150
  (def src (string "(do (defn f" i " [x y] (let [z (+ x y " i ")] (if (> z 10) (* z 2) (- z 1))))"
                   " (def t @{:a 1 :b 2}) (var acc 0) (loop [k :range [0 10]] (+= acc (f" i " k (t :a))))"
                   " (when (odd? acc) (++ acc)) (case (% acc 3) 0 acc 1 (+ acc 1) (- acc 1)))"))
  (+= check (eval-string src)))
(def data @{:name "corpus" :items (seq [i :range [0 200]] {:id i :tags [:a :b] :s (string "x" i)})})
(for j 0 30
  (def b (marshal data))
  (+= check (length b))
  (def back (unmarshal b))
  (+= check (length (back :items))))
(for j 0 200
  (def p (parser/new))
  (parser/consume p "(defn g [a b] (map (fn [x] (+ x a)) [1 2 3 b]))")
  (+= check (length (parser/produce p))))
(print "compile " check)
