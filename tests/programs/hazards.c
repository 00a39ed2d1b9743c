/* Three hazards a model trained on other projects may not have seen, each steering what a
   hot loop runs while its own changed code runs once or a few times (tests/test_hazards.py
   replaces the upper-case placeholders): the CPU-feature check that picks the summing routine
   (cpuid), a start-up call in main that switches a global mode the hot loop reads, and the size
   below which `process` takes the simple path. */
#include <cpuid.h>
#include <stdio.h>

#define ITEMS 4096
#define ROUNDS 40

static unsigned data[ITEMS];
static int checking;  /* the mode: read by the hot loop, set at start-up */
static int wide;      /* set by the CPU-feature check */

static int __attribute__((noipa)) detect_wide(void)
{
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d))
        return 0;
    return DISPATCH;
}

static void __attribute__((noipa)) enable_checking(void) { checking = 1; }

static unsigned __attribute__((noipa)) sum_wide(const unsigned *p, int n)
{
    unsigned s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    for (int i = 0; i + 3 < n; i += 4) {
        s0 += p[i]; s1 += p[i + 1]; s2 += p[i + 2]; s3 += p[i + 3];
    }
    return s0 + s1 + s2 + s3;
}

static unsigned __attribute__((noipa)) sum_narrow(const unsigned *p, int n)
{
    unsigned s = 0;
    for (int i = 0; i < n; i++) {
        s += p[i];
        if (checking && s == 0xdeadbeefu)
            puts("checked");
    }
    return s;
}

static unsigned __attribute__((noipa)) sum_simple(const unsigned *p, int n)
{
    unsigned s = 0;
    for (int i = 0; i < n; i++) {
        s = s * 31 + (p[i] ^ (s >> 7));
        s ^= (s << 5) + (s >> 11) + p[(i * 7) % n];
    }
    return s;
}

static unsigned __attribute__((noipa)) process(const unsigned *p, int n)
{
    if (n < CUTOFF)
        return sum_simple(p, n);
    return wide ? sum_wide(p, n) : sum_narrow(p, n);
}

int main(void)
{
    for (int i = 0; i < ITEMS; i++)
        data[i] = (unsigned)i * 2654435761u;
    wide = detect_wide();
    MODE
    unsigned acc = 0;
    for (int r = 0; r < ROUNDS; r++)
        acc += process(data, ITEMS - r);
    printf("%u\n", acc);
    return 0;
}
