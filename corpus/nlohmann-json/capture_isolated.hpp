// corpus/nlohmann-json: force-included (g++ -include) by build_json_benchmarks.sh before
// tests/benchmarks/src/benchmarks.cpp.  selector isolates a Google Benchmark named
// "ParseFile/jeopardy" to the function '*ParseFile(benchmark::State&)', the signature of
// a BENCHMARK() function; BENCHMARK_CAPTURE registers a lambda that calls
// ParseFile(benchmark::State&, const char*) instead, which that pattern does not match.
// This BENCHMARK_CAPTURE registers, in its place, a static member function of a struct of
// its own that has that name and signature and makes the same call
// ((anonymous namespace)::corpus_capture_<line>::ParseFile(benchmark::State&)), not
// inlined and not left by a tail call, so callgrind finds the benchmark's function and counts its timed loop.
// Names and what runs are unchanged.
#include <benchmark/benchmark.h>

#define CORPUS_CAPTURE_CAT2(a, b) a##b
#define CORPUS_CAPTURE_CAT(a, b) CORPUS_CAPTURE_CAT2(a, b)
#undef BENCHMARK_CAPTURE
#define BENCHMARK_CAPTURE(func, test_case_name, ...)                                      \
    namespace {                                                                            \
    struct CORPUS_CAPTURE_CAT(corpus_capture_, __LINE__) {                                 \
        static __attribute__((noinline)) void func(::benchmark::State& st) {               \
            ::func(st, __VA_ARGS__);                                                       \
            ::benchmark::ClobberMemory(); /* no tail call: the function stays on the stack */ \
        }                                                                                  \
    };                                                                                     \
    }                                                                                      \
    BENCHMARK_PRIVATE_DECLARE(func) = (::benchmark::internal::RegisterBenchmarkInternal(   \
        new ::benchmark::internal::FunctionBenchmark(#func "/" #test_case_name,            \
                                                     &CORPUS_CAPTURE_CAT(corpus_capture_, __LINE__)::func)))
