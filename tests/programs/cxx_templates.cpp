// Template instances whose names demangle to a few hundred characters.
#include <cstdio>
template <typename First, typename Second> struct Couple { First first; Second second; };
template <typename T> struct Ledger {
    __attribute__((noinline)) static long total(const T *items, int count) {
        long sum = 0;
        for (int i = 0; i < count; i++) sum += (long) sizeof(items[i]) * i;
        return sum;
    }
};
using Entry = Couple<Couple<long, Couple<short, unsigned char>>, Couple<Couple<int, long>, Couple<unsigned, short>>>;
using Other = Couple<Couple<Couple<char, char>, Couple<long long, double>>, Couple<Couple<int, int>, float>>;
int main(int argc, char **) {
    Entry entries[4] = {};
    Other others[2] = {};
    std::printf("%ld %ld\n", Ledger<Entry>::total(entries, argc + 3), Ledger<Other>::total(others, argc));
    return 0;
}
