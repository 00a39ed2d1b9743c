// A Google Benchmark binary whose benchmarks take captured arguments (BENCHMARK_CAPTURE: the
// function takes them after the state) and whose names hold spaces and a '-' (tests/test_suites.py).
#include <benchmark/benchmark.h>

__attribute__((noipa)) long body_b(int n) {
    long state = 1;
    for (int i = 0; i < n; i++) state ^= state * 31 + i;
    return state;
}

__attribute__((noipa)) static void BM_cap(benchmark::State& state, int n) {
    for (auto _ : state) benchmark::DoNotOptimize(body_b(n));
}
BENCHMARK_CAPTURE(BM_cap, small, 300);
BENCHMARK_CAPTURE(BM_cap, with space / -, 3000);

BENCHMARK_MAIN();
