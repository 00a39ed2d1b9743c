// corpus/duktape: function calls, recursion, closures, arguments, call/apply,
// constructors, loops with integer and float arithmetic (duk_js_call.c,
// duk_js_executor.c), and compiling generated source with eval (duk_lexer.c,
// duk_js_compiler.c).  Fixed iteration counts; prints a checksum.
function fib(n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }
function make_counter() { var c = 0; return function (d) { c += d; return c; }; }
function sum_args() { var s = 0; for (var i = 0; i < arguments.length; i++) s += arguments[i]; return s; }
function Point(x, y) { this.x = x; this.y = y; }
Point.prototype.add = function (p) { return new Point(this.x + p.x, this.y + p.y); };
var check = 0, i;
check += fib(17);
var counter = make_counter();
for (i = 0; i < 1200; i++) counter(i & 7);
check += counter(0);
for (i = 0; i < 400; i++) check += sum_args(i, 1, 2, 3);
for (i = 0; i < 400; i++) check += sum_args.call(null, i, 2) + sum_args.apply(null, [i, 3, 4]);
var p = new Point(0, 0), q = new Point(1, 2);
for (i = 0; i < 600; i++) p = p.add(q);
check += p.x + p.y;
var f = 0.5;
for (i = 0; i < 2400; i++) { f = f * 1.0000001 + (i % 13) / 7; check = (check + (i ^ (i >> 3))) | 0; }
check += Math.floor(f);
var src = [];
for (i = 0; i < 40; i++)
    src.push("function g" + i + "(a, b) { var t = a * " + i + " + b; /* step " + i + " */ if (t > 100) { t = t % 97; } return t + 'x'.length; }");
src.push("g0(1, 2) + g39(3, 4);");
var text = src.join("\n");
for (i = 0; i < 3; i++) check += eval(text);
print("calls " + check);
