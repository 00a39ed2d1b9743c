/* Straight-line work against code that steers (tests/test_straight_line.py): start-up code that
   runs once (setup), a hot function run a million times (mix), and a mode chosen once in main
   whose other side carries the run.  The tests replace the upper-case placeholders: the work of
   setup's block, that of mix's block, and main's mode condition. */
#include <stdio.h>

#define ROUNDS 1000000

unsigned long setup_sum, setup_xor;  /* written once at start-up, for a debugger: no code reads them */
unsigned long hot_sum;

static void __attribute__((noipa)) settled(void) { __asm__ volatile(""); }

static void __attribute__((noipa)) setup(unsigned long seed)
{
    SETUP_WORK
    settled();  /* what setup leaves in its registers is no value it returns */
}

static void __attribute__((noipa)) mix(unsigned long x)
{
    unsigned long value = x;
    MIX_WORK
    hot_sum += value;
}

static void __attribute__((noipa)) walk_slow(void)
{
    for (unsigned long i = 0; i < ROUNDS; i++)
        mix(i);
}

static void __attribute__((noipa)) walk_fast(void)
{
    for (unsigned long i = 0; i < ROUNDS / 8; i++)
        mix(i);
}

int main(int argc, char **argv)
{
    (void) argv;
    setup((unsigned long) argc * 17);
    if (MODE_CONDITION)
        walk_slow();
    else
        walk_fast();
    printf("%lu\n", hot_sum);
    return 0;
}
