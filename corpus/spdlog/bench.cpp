// corpus/spdlog/bench.cpp: spdlog's benchmark program for the corpus, a Google Benchmark
// program built with the headers of each commit (build_bench.sh, header-only, the bundled
// fmt).  spdlog's own bench/latency.cpp and bench/formatter-bench.cpp register their
// benchmarks under names that are not their functions' (RegisterBenchmark with a lambda:
// "null_sink_st" runs bench_logger), so the tool could not isolate them, and one iteration of
// one log call is a few hundred instructions; formatter-bench also refuses any argument but
// one pattern.  Here every benchmark is a BM_ function of its own, registered with a fixed
// iteration count (which Google Benchmark keeps whatever --benchmark_min_time says), each
// 25-50 million instructions in its timed loop: the logger's front end (fmt formatting of the
// message, level checks, the backtrace ring) through null sinks, sinks that format with a
// pattern and write to /dev/null or to memory, and the pattern formatter itself on a message
// of fixed time and source location.  The formatter's message has a fixed time (1.6e9 s after
// the epoch, in the TZ the run sets), so its benchmarks are exact.  A logger stamps each message
// with the clock, and the formatter of these versions calls localtime again whenever the second
// changes, flags or not: the three sink benchmarks (file_dev_null, ostream, ringbuffer) vary by
// a few hundred instructions a second of run time (about 0.002%); their patterns have no time
// flag, so the clock's digits are not formatted.  No thread or process id is formatted (its
// digits vary from run to run).  Only API of spdlog 1.6 to 1.8 is used.
#include <benchmark/benchmark.h>

#include <chrono>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "spdlog/spdlog.h"
#include "spdlog/fmt/bin_to_hex.h"
#include "spdlog/pattern_formatter.h"
#include "spdlog/sinks/basic_file_sink.h"
#include "spdlog/sinks/null_sink.h"
#include "spdlog/sinks/ostream_sink.h"
#include "spdlog/sinks/ringbuffer_sink.h"

namespace {

const char *long_text =
    "Lorem ipsum dolor sit amet, consectetur adipiscing elit. Vestibulum pharetra metus cursus "
    "lacus placerat congue. Nulla egestas, mauris a tincidunt tempus, enim lectus volutpat mi, "
    "eu consequat sem libero nec massa. In dapibus ipsum a diam rhoncus gravida. Etiam non "
    "dapibus eros. Donec fringilla dui sed augue pretium, nec scelerisque est maximus. Nullam "
    "convallis, sem nec blandit maximus, nisi turpis ornare nisl, sit amet volutpat neque massa "
    "eu odio. Maecenas malesuada quam ex, posuere congue nibh turpis duis.";

std::shared_ptr<spdlog::logger> null_logger_st() {
    return std::make_shared<spdlog::logger>("bench", std::make_shared<spdlog::sinks::null_sink_st>());
}

// A message as a logger would make it, with a fixed time and source location.
spdlog::details::log_msg fixed_message(const std::string &name, const char *text) {
    spdlog::source_loc where{"/home/user/project/src/network/connection.cpp", 123, "handle_request"};
    spdlog::details::log_msg msg(where, name, spdlog::level::warn, text);
    msg.time = spdlog::log_clock::time_point(std::chrono::seconds(1600000000)) +
               std::chrono::microseconds(123456);
    msg.thread_id = 4242;
    return msg;
}

// The pattern formatter alone, on one message of fixed time; `pattern` null: the default ("%+").
void format_pattern(benchmark::State &state, const char *pattern) {
    auto formatter = pattern ? std::make_unique<spdlog::pattern_formatter>(pattern)
                             : std::make_unique<spdlog::pattern_formatter>();
    std::string name = "network-logger";
    auto msg = fixed_message(name, "Connection accepted from 10.0.0.17, 3 requests queued");
    spdlog::memory_buf_t dest;
    for (auto _ : state) {
        dest.clear();
        formatter->format(msg, dest);
        benchmark::DoNotOptimize(dest.data());
    }
}

}  // namespace

// The logger's front end: the message formatted by fmt, then a sink that drops it.
static void BM_null_st(benchmark::State &state) {
    auto logger = null_logger_st();
    int i = 0;
    for (auto _ : state) logger->info("Hello logger: msg number {}...............", ++i);
}
BENCHMARK(BM_null_st)->Iterations(60000);

static void BM_null_mt(benchmark::State &state) {  // the same with the sink's mutex
    auto logger = std::make_shared<spdlog::logger>("bench", std::make_shared<spdlog::sinks::null_sink_mt>());
    int i = 0;
    for (auto _ : state) logger->info("Hello logger: msg number {}...............", ++i);
}
BENCHMARK(BM_null_mt)->Iterations(60000);

static void BM_null_cstr(benchmark::State &state) {  // a 500-byte message without arguments
    auto logger = null_logger_st();
    for (auto _ : state) logger->info(long_text);
}
BENCHMARK(BM_null_cstr)->Iterations(300000);

static void BM_null_args(benchmark::State &state) {  // integers, reals, strings, widths, bases
    auto logger = null_logger_st();
    std::string user = "alice";
    int i = 0;
    for (auto _ : state) {
        ++i;
        logger->info("user={} id={:08d} ratio={:.3f} mask={:#x} name={:>12} ok={} size={:e}", user, i,
                     i * 0.001, static_cast<unsigned>(i * 2654435761u), "connection", (i & 1) == 0, i * 1024.5);
    }
}
BENCHMARK(BM_null_args)->Iterations(8000);

static void BM_disabled(benchmark::State &state) {  // below the logger's level
    auto logger = null_logger_st();
    logger->set_level(spdlog::level::warn);
    int i = 0;
    for (auto _ : state) {
        logger->info("Hello logger: msg number {}...............", ++i);
        benchmark::DoNotOptimize(i);
    }
}
BENCHMARK(BM_disabled)->Iterations(600000);

static void BM_backtrace(benchmark::State &state) {  // the ring of the last 64 messages
    auto logger = null_logger_st();
    logger->enable_backtrace(64);
    int i = 0;
    for (auto _ : state) logger->debug("Hello logger: msg number {}...............", ++i);
}
BENCHMARK(BM_backtrace)->Iterations(40000);

static void BM_default_logger(benchmark::State &state) {  // spdlog::info through the registry
    spdlog::set_default_logger(null_logger_st());
    int i = 0;
    for (auto _ : state) spdlog::info("Hello logger: msg number {}...............", ++i);
}
BENCHMARK(BM_default_logger)->Iterations(60000);

static void BM_to_hex(benchmark::State &state) {  // spdlog::to_hex of 64 bytes
    auto logger = null_logger_st();
    std::vector<unsigned char> bytes(64);
    for (size_t k = 0; k < bytes.size(); k++) bytes[k] = static_cast<unsigned char>(k * 37 + 11);
    for (auto _ : state) logger->info("packet {}", spdlog::to_hex(bytes.begin(), bytes.end()));
}
BENCHMARK(BM_to_hex)->Iterations(6000);

// Sinks that format each message with a pattern (no time flags) and write it.
static void BM_file_dev_null(benchmark::State &state) {  // basic_file_sink on /dev/null
    auto logger = std::make_shared<spdlog::logger>(
        "file", std::make_shared<spdlog::sinks::basic_file_sink_st>("/dev/null"));
    logger->set_pattern("[%n] [%l] %v");
    int i = 0;
    for (auto _ : state) logger->info("Hello logger: msg number {}...............", ++i);
}
BENCHMARK(BM_file_dev_null)->Iterations(30000);

static void BM_ostream(benchmark::State &state) {  // ostream_sink on an ofstream of /dev/null
    std::ofstream out("/dev/null");
    auto logger = std::make_shared<spdlog::logger>(
        "ostream", std::make_shared<spdlog::sinks::ostream_sink_st>(out));
    logger->set_pattern("%L %n: %v");
    int i = 0;
    for (auto _ : state) logger->warn("Hello logger: msg number {}...............", ++i);
}
BENCHMARK(BM_ostream)->Iterations(30000);

static void BM_ringbuffer(benchmark::State &state) {  // ringbuffer_sink: the last 128 in memory
    auto logger = std::make_shared<spdlog::logger>(
        "ring", std::make_shared<spdlog::sinks::ringbuffer_sink_st>(128));
    logger->set_pattern("[%^%l%$] [%-10n] %v");
    int i = 0;
    for (auto _ : state) logger->info("Hello logger: msg number {}...............", ++i);
}
BENCHMARK(BM_ringbuffer)->Iterations(40000);

// The pattern formatter alone, on one message of fixed time.
static void BM_format_default(benchmark::State &state) {  // "%+", the default pattern
    format_pattern(state, nullptr);
}
BENCHMARK(BM_format_default)->Iterations(40000);

static void BM_format_iso(benchmark::State &state) {
    format_pattern(state, "[%Y-%m-%d %H:%M:%S.%e] [%l] [%n] %v");
}
BENCHMARK(BM_format_iso)->Iterations(25000);

static void BM_format_names(benchmark::State &state) {  // names of days and months, %c, %D %T, %z
    format_pattern(state, "%a %A %b %B %c | %D %T %p %r %z %C | %v");
}
BENCHMARK(BM_format_names)->Iterations(12000);

static void BM_format_fraction(benchmark::State &state) {  // ms, us, ns, epoch, level forms
    format_pattern(state, "%E.%e %f %F [%L|%l] %v");
}
BENCHMARK(BM_format_fraction)->Iterations(30000);

static void BM_format_source(benchmark::State &state) {  // source location: %@ %s %g %# %!
    format_pattern(state, "[%@] [%s:%#] [%g] [%!] %v");
}
BENCHMARK(BM_format_source)->Iterations(30000);

static void BM_format_padding(benchmark::State &state) {  // padding and truncation of flags
    format_pattern(state, "[%-20n] [%=9l] [%-4#] [%12!!] [%6!v] %v");
}
BENCHMARK(BM_format_padding)->Iterations(30000);

BENCHMARK_MAIN();
