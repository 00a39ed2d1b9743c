
#include <cstdio>
#include <vector>
namespace geo {
struct Shape { virtual ~Shape() {} virtual double area() const = 0; };
struct Square : Shape {
    double side;
    explicit Square(double s) : side(s) {}
    double area() const override;
};
%s
double Square::area() const { return side * side; }
template <typename T> __attribute__((noinline)) T total(const std::vector<T> &values)
{
    T sum = T();
    for (const T &v : values) sum += v;
    return sum;
}
double scaled(double x) { return x * 2.0; }
int scaled(int x) { return x * 3; }
}
int main()
{
    geo::Square square(3.0);
    std::vector<double> values{square.area(), geo::scaled(1.5)};
    std::printf("%%f %%d\n", geo::total(values), geo::scaled(2));
    return 0;
}
