// Catch2 (2.x) benchmarks in a test binary, linked with a main built apart (CATCH_CONFIG_MAIN):
// two test cases, the first holding two BENCHMARKs.  -DFIB_EXTRA adds work to fib (its own
// code), -DSETUP_N=... to the set-up every test case runs before its benchmarks.
#define CATCH_CONFIG_ENABLE_BENCHMARKING
#include <catch2/catch.hpp>

#ifndef SETUP_N
#define SETUP_N 1000
#endif

static unsigned long fib(unsigned n) {
#ifdef FIB_EXTRA
    volatile unsigned extra = n * 3;
    (void)extra;
#endif
    return n < 2 ? n : fib(n - 1) + fib(n - 2);
}

static unsigned long sum_to(unsigned long n) {
    volatile unsigned long total = 0;
    for (unsigned long i = 0; i < n; ++i) total = total + i;
    return total;
}

static unsigned long set_up() { return sum_to(SETUP_N); }

TEST_CASE("Fibonacci", "[!benchmark]") {
    REQUIRE(set_up() > 0);
    BENCHMARK("fib") { return fib(15); };
    BENCHMARK("sum") { return sum_to(1000); };
}

TEST_CASE("Summing", "[!benchmark]") {
    REQUIRE(set_up() > 0);
    BENCHMARK("sum 5000") { return sum_to(5000); };
}

TEST_CASE("a plain test") { REQUIRE(sum_to(3) == 3); }
