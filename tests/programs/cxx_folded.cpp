// Identical bodies: gcc's identical code folding (-fipa-icf, on at -O2) keeps one copy
// and makes the other names aliases of it.
#include <cstdio>
#define FACTOR 3
namespace folding {
struct Meter { virtual int reading(int x) const; virtual ~Meter() {} };
struct Gauge { virtual int level(int x) const; virtual ~Gauge() {} };
__attribute__((noinline)) int Meter::reading(int x) const { int s = 0; for (int i = 0; i < x; i++) s += i * FACTOR + 1; return s; }
__attribute__((noinline)) int Gauge::level(int x) const { int s = 0; for (int i = 0; i < x; i++) s += i * FACTOR + 1; return s; }
}  // namespace folding
int main(int argc, char **) {
    folding::Meter meter;
    folding::Gauge gauge;
    const folding::Meter *m = &meter;
    const folding::Gauge *g = &gauge;
    std::printf("%d %d\n", m->reading(argc * 1000), g->level(argc * 2000));
    return 0;
}
