/* A harness that sizes its loop by the clock, as Google Benchmark, lz4's fullbench, tjbench and
   many hand-written benchmarks do: ten times more iterations until a batch takes 20 ms.  On one
   machine the count it settles on repeats (the steps are far apart), but it depends on how fast
   the clock runs against the work.  tests/test_clock.py. */
#include <stdio.h>
#include <time.h>

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

static long __attribute__((noipa)) work(long seed)
{
    long sum = seed;
    for (int i = 0; i < 1000; i++)
        sum = sum * 31 + i;
    return sum;
}

int main(void)
{
    long iterations = 1, sum = 0;
    for (;;) {
        double start = now();
        for (long i = 0; i < iterations; i++)
            sum += work(i);
        if (now() - start >= 0.02 || iterations >= 100000000)
            break;
        iterations *= 10;
    }
    printf("%ld iterations (%ld)\n", iterations, sum & 1);
    return 0;
}
