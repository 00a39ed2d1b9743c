// Shared by every translation unit of this test program: an inline function and a class
// template, which each unit that uses them emits (one copy survives linking).
#pragma once
#define SALT_FACTOR 7
#define DOUBLE_FACTOR 2.7
namespace mixing {
struct Pair { int value, salt; };
// Taken by reference and not inlined: gcc's IPA-SRA makes a local clone (mix.isra.0)
// in each unit that calls it.
inline __attribute__((noinline)) int mix(const Pair &pair) { return pair.value * 31 + pair.salt * SALT_FACTOR; }
template <typename T> struct Scale {
    static __attribute__((noinline)) T apply(T value) {
        if constexpr (sizeof(T) == 8) return value * DOUBLE_FACTOR;
        else return value * 3 + 1;
    }
};
}  // namespace mixing
