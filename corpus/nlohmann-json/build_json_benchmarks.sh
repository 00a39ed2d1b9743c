#!/bin/sh
# Builds JSON for Modern C++'s Google Benchmark program at build/json_benchmarks in the
# checkout it runs in, the same way at every commit of the range:
# tests/benchmarks/src/benchmarks.cpp against the single header
# (single_include/nlohmann/json.hpp, as tests/benchmarks/CMakeLists.txt includes it),
# linked with Debian's Google Benchmark 1.7.1 (libbenchmark-dev) in place of the
# FetchContent download of google/benchmark, at -O2 -g -DNDEBUG (CMake's file asks for
# -O3 -flto), C++11 as CMake's file asks; no CMake.  test_data.hpp, which CMake writes
# with the directory its download_test_data step fills, is written here with the
# json_test_data folder of the suite this script sits in (made by make_suite.sh).
# The Dump benchmarks are named "Dump/jeopardy / -" and "Dump/jeopardy / 4" (the macro
# stringizes `jeopardy / -`): a name with spaces and '-' cannot be selected alone, since
# the tool escapes names for --benchmark_filter with Python's re.escape ('\ ', '\-'),
# which Google Benchmark's std::regex (POSIX extended) rejects.  The source is compiled
# from build/benchmarks.cpp, a copy in which ` / -,` and ` / 4,` of those names become
# `_compact,` and `_indent4,` (Dump/jeopardy_compact, Dump/jeopardy_indent4): only the
# names change.  (The tool isolates a BENCHMARK_CAPTURE benchmark to the captured
# function, `ParseFile(benchmark::State&, char const*)`; a wrapper of the same name, which
# this script once force-included, would nest two matching functions, and callgrind's
# toggle turns collection off in the inner one.)
set -eu
export LC_ALL=C
here=$(cd "$(dirname "$0")" && pwd)
rm -rf build
mkdir -p build/include
printf '#define TEST_DATA_DIRECTORY "%s/json_test_data"\n' "$here" > build/include/test_data.hpp
sed -e 's| / -,|_compact,|' -e 's| / 4,|_indent4,|' tests/benchmarks/src/benchmarks.cpp > build/benchmarks.cpp
g++ -std=c++11 -O2 -g -DNDEBUG -Isingle_include -Ibuild/include -c build/benchmarks.cpp -o build/benchmarks.o
g++ -O2 -g -pthread -o build/json_benchmarks build/benchmarks.o -lbenchmark
