#!/usr/bin/env bash
# Makes corpus/lmdb/suite: the driver bench.c and its build script build_bench.sh, which
# the build command names through SUITE_DIR.  The driver makes its own data (a fixed
# LCG, a fresh environment under /tmp for each run), so nothing is read from the clone.
# Usage: corpus/lmdb/make_suite.sh PATH-TO-LMDB-CLONE
set -euo pipefail
[ -d "${1:?usage: $0 PATH-TO-LMDB-CLONE}" ]
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$here/suite"
mkdir -p "$here/suite"
cp "$here/bench.c" "$here/build_bench.sh" "$here/suite/"
