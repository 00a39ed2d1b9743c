/* A loop bound in code run once (tests/test_loop_bound.py): a hot function run a million times
   (mix) carries the run; a tally main calls once runs a loop of TALLY_ROUNDS, which the tests
   change, across the width of an immediate (a byte's -128..127 against four bytes). */
#include <stdio.h>

#define ROUNDS 1000000

static unsigned long hot_sum;

static void __attribute__((noipa)) mix(unsigned long x)
{
    hot_sum = hot_sum * 31 + x;
}

static unsigned long __attribute__((noipa)) tally(unsigned long a, unsigned long b)
{
    unsigned long total = 0;
    for (unsigned long i = 0; i < TALLY_ROUNDS; i++) {
        if ((i & a) != 0)
            total += i * a;
        else
            total ^= i + b;
    }
    return total;
}

int main(int argc, char **argv)
{
    (void) argv;
    for (unsigned long i = 0; i < ROUNDS; i++)
        mix(i);
    printf("%lu %lu\n", hot_sum, tally((unsigned long) argc, 7));
    return 0;
}
