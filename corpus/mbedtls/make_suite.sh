#!/usr/bin/env bash
# Makes corpus/mbedtls/suite: the benchmark driver bench.c, the user configuration
# bench_config.h and the build script build_mbedtls_bench.sh, which the build command
# names through SUITE_DIR.  The benchmarks have no input files (bench.c makes its data);
# nothing of the clone is read, it is taken for the same usage as the other corpora.
# Usage: corpus/mbedtls/make_suite.sh PATH-TO-MBEDTLS-CLONE
set -euo pipefail
[ -d "${1:?usage: $0 PATH-TO-MBEDTLS-CLONE}" ]
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$here/suite"
mkdir -p "$here/suite"
cp "$here/bench.c" "$here/bench_config.h" "$here/build_mbedtls_bench.sh" "$here/suite/"
