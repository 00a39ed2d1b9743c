#!/usr/bin/env bash
# Makes corpus/spdlog/suite: the benchmark program bench.cpp (a Google Benchmark program
# written for this corpus, on spdlog 1.5 to 1.8's API) and its build script build_bench.sh,
# which the build command names through SUITE_DIR.  Nothing is read from the clone: the
# benchmarks log to null sinks, to memory and to /dev/null, and format messages made in
# bench.cpp.
# Usage: corpus/spdlog/make_suite.sh PATH-TO-SPDLOG-CLONE
set -euo pipefail
[ -d "${1:?usage: $0 PATH-TO-SPDLOG-CLONE}" ]
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$here/suite"
mkdir -p "$here/suite"
cp "$here/bench.cpp" "$here/build_bench.sh" "$here/suite/"
