// corpus/duktape: object literals, property read/write/update/delete, prototype chains,
// for-in, Object.keys, hasOwnProperty, getters and setters (duk_hobject_props.c,
// duk_hobject_enum.c, duk_bi_object.c).  Fixed iteration counts; prints a checksum.
var check = 0;
function Base(a) { this.a = a; }
Base.prototype.get = function () { return this.a; };
function Derived(a, b) { Base.call(this, a); this.b = b; }
Derived.prototype = Object.create(Base.prototype);
Derived.prototype.both = function () { return this.get() + this.b; };
var objs = [];
for (var i = 0; i < 200; i++) objs.push({ id: i, name: "n" + (i % 50), x: i * 2, y: i & 15, z: null });
for (var r = 0; r < 6; r++)
    for (i = 0; i < objs.length; i++) { var o = objs[i]; o.x += o.y; check += o.id + o.x; o["k" + (i & 31)] = r; }
for (i = 0; i < objs.length; i++) { for (var k in objs[i]) check += k.length; check += Object.keys(objs[i]).length; }
for (i = 0; i < objs.length; i++) { delete objs[i].z; if (!objs[i].hasOwnProperty("z")) check++; }
var d;
for (i = 0; i < 800; i++) { d = new Derived(i, 1); check += d.both(); }
var big = {};
for (i = 0; i < 1000; i++) big["key" + i] = i;
for (i = 0; i < 1000; i++) check += big["key" + ((i * 7) % 1000)];
for (i = 0; i < 1000; i += 2) delete big["key" + i];
for (k in big) check += 1;
var acc = { v: 0, get double() { return this.v * 2; }, set value(x) { this.v = x; } };
for (i = 0; i < 500; i++) { acc.value = i; check += acc.double; }
print("objects " + check);
