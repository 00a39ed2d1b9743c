// A Google Benchmark binary for the suite tests.  SETUP_N sizes a set-up every benchmark
// shares (a static initializer, before main); A_PREPARE what BM_a prepares before its
// timed loop; A_STEPS is BM_a's own work; WITH_C adds a benchmark and drops BM_b/500.
// Only BM_a runs body_a and prepare_a, and only BM_b runs body_b.
#include <benchmark/benchmark.h>

#ifndef SETUP_N
#define SETUP_N 1000
#endif
#ifndef A_PREPARE
#define A_PREPARE 100
#endif
#ifndef A_STEPS
#define A_STEPS 1
#endif

static long shared_table(int n) {
    long sum = 0;
    for (int i = 0; i < n; i++) sum += (i * 7) % 13;
    return sum;
}
static volatile long shared = shared_table(SETUP_N);

__attribute__((noipa)) long body_a(int n) {
    long sum = 0;
    for (int i = 0; i < n; i++)
        for (int step = 0; step < A_STEPS; step++) sum += (i + step) % 7;
    return sum;
}

__attribute__((noipa)) long body_b(int n) {
    long state = 1;
    for (int i = 0; i < n; i++) state ^= state * 31 + i;
    return state;
}

__attribute__((noipa)) long prepare_a(int n) {
    long sum = 0;
    for (int i = 0; i < n; i++) sum += (i * 11) % 17;
    return sum;
}

static void BM_a(benchmark::State& state) {
    volatile long prepared = prepare_a(A_PREPARE);
    (void)prepared;
    for (auto _ : state) benchmark::DoNotOptimize(body_a(2000));
}
BENCHMARK(BM_a);

static void BM_b(benchmark::State& state) {
    for (auto _ : state) benchmark::DoNotOptimize(body_b(state.range(0)));
}
#ifdef WITH_C
BENCHMARK(BM_b)->Arg(5000);
static void BM_c(benchmark::State& state) {
    for (auto _ : state) benchmark::DoNotOptimize(body_b(100) + body_a(100));
}
BENCHMARK(BM_c);
#else
BENCHMARK(BM_b)->Arg(500)->Arg(5000);
#endif

BENCHMARK_MAIN();
