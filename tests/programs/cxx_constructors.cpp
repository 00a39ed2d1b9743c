#include <cstdio>
namespace shapes {
struct Named { const char *label; explicit Named(const char *l) : label(l) {} virtual ~Named() {} };
struct Counted : virtual Named {
    int count;
    __attribute__((noinline)) explicit Counted(int c);
    __attribute__((noinline)) ~Counted() override;
};
struct Tally : Counted { int extra; explicit Tally(int c) : Named("tally"), Counted(c), extra(c * 2) {} };
Counted::Counted(int c) : Named("counted"), count(c * 3 + 1) { std::printf("made %d\n", count); }
Counted::~Counted() { std::printf("gone %d\n", count); }
}
int main(int argc, char **) {
    shapes::Counted plain(argc);
    shapes::Tally derived(argc + 1);
    return plain.count + derived.extra;
}
