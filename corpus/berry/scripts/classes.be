# corpus/berry: classes, instances, members read and written, methods, inheritance and
# super calls, static members.  Fixed iteration counts; prints a checksum.
class Point
    var x, y
    def init(x, y) self.x = x self.y = y end
    def add(p) return Point(self.x + p.x, self.y + p.y) end
    def norm1() return (self.x < 0 ? -self.x : self.x) + (self.y < 0 ? -self.y : self.y) end
end
class Point3 : Point
    var z
    def init(x, y, z) super(self).init(x, y) self.z = z end
    def norm1() return super(self).norm1() + self.z end
end
class Node
    var v, l, r
    def init(v) self.v = v end
    def insert(v)
        if v < self.v
            if self.l self.l.insert(v) else self.l = Node(v) end
        else
            if self.r self.r.insert(v) else self.r = Node(v) end
        end
    end
    def sum() var s = self.v if self.l s += self.l.sum() end if self.r s += self.r.sum() end return s end
end
var check = 0
var p = Point(0, 0)
var q = Point(1, 2)
for i: 0 .. 2999 p = p.add(q) end
check += p.norm1()
for i: 0 .. 1499 var t = Point3(i, -i, 3) check += t.norm1() end
var seed = 12345
var root = Node(50000)
for i: 0 .. 1499
    seed = (seed * 1103515245 + 12345) % 2147483648
    root.insert(seed % 100000)
end
check += root.sum()
var o = Point(1, 1)
for i: 0 .. 4999 o.x = o.x + 1 o.y = o.x - o.y end
check += o.x + o.y
print("classes", check)
