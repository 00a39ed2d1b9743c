/* A hot loop steered by code that runs once: start-up code fills a function-pointer
   table (after a cpuid-based check), main sets the loop's trip count, and the hot loop
   calls through the table.  The tests of steering features (tests/test_steering.py)
   replace the upper-case placeholders: the table's entry, the bit the CPU check tests,
   the trip count, and the body of a set-up the benchmark never runs. */
#include <cpuid.h>
#include <stdio.h>

#define ITEMS 40000

typedef unsigned (*step_fn)(unsigned acc, unsigned x);

unsigned __attribute__((noipa)) step_plain(unsigned acc, unsigned x) { return acc * 31 + x; }
unsigned __attribute__((noipa)) step_mixed(unsigned acc, unsigned x) { return (acc ^ x) * 33 + (x >> 3); }

static struct { step_fn step; } ops;  /* written once, read by the hot loop */
static unsigned data[ITEMS];
int tuning_level;  /* a set-up parameter: read at start-up and by fill, written by no code here */

static int __attribute__((noipa)) cpu_has_feature(void)
{
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d))
        return 0;
    return (c & FEATURE_BIT) != 0;
}

static void __attribute__((noipa)) choose_ops(void)
{
    int fast = cpu_has_feature() && tuning_level >= 0;
    CHOOSE
}

static void __attribute__((noipa)) other_mode(void)
{
    OTHER_MODE
}

static void __attribute__((noipa)) fill(void)
{
    for (int i = 0; i < ITEMS; i++)
        data[i] = (unsigned)i * 2654435761u + (unsigned)tuning_level;
}

static unsigned __attribute__((noipa)) kernel(int n)
{
    unsigned acc = 0;
    for (int i = 0; i < n; i++)
        acc = ops.step(acc, data[i]);
    return acc;
}

int main(int argc, char **argv)
{
    (void)argv;
    if (argc > 1)
        other_mode();
    else
        choose_ops();
    fill();
    printf("%u\n", kernel(TRIP_COUNT));
    return 0;
}
