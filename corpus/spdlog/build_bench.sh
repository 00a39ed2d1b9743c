#!/bin/sh
# Builds corpus/spdlog's benchmark program at build/bench in the checkout it runs in, the same
# way at every commit of the range: bench.cpp from the suite (its directory is this script's)
# compiled against the checkout's headers, header-only (spdlog's default without
# SPDLOG_COMPILED_LIB, with its bundled fmt, also header-only), g++ -O2 -g -DNDEBUG, C++17,
# linked with Debian's Google Benchmark 1.7.1 (libbenchmark-dev).  spdlog's CMake build, its
# compiled library (src/) and its own bench/, tests and examples are not used.
set -eu
export LC_ALL=C
here=$(cd "$(dirname "$0")" && pwd)
rm -rf build
mkdir -p build
g++ -std=c++17 -O2 -g -DNDEBUG -Iinclude -c "$here/bench.cpp" -o build/bench.o
g++ -O2 -g -pthread -o build/bench build/bench.o -lbenchmark
