/* A harness that runs its work until a time has passed, as lz4's fullbench, tjbench, Catch2's
   sampling and many hand-written benchmarks do: batches of ten calls until 50 ms have gone.
   Its count follows how fast the clock runs against the work, so it differs on every run of a
   loaded machine, and a quarter-speed clock gives about four times the iterations whatever the
   load (tests/test_clock.py).  Under a fixed clock that advances a second at each reading, one
   batch runs, every time. */
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
    long iterations = 0, sum = 0;
    double start = now();
    do {
        for (int i = 0; i < 10; i++)
            sum += work(iterations++);
    } while (now() - start < 0.05 && iterations < 100000000);
    printf("%ld iterations (%ld)\n", iterations, sum & 1);
    return 0;
}
