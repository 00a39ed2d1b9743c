#!/usr/bin/env bash
# Makes corpus/snappy/suite: the build script (build_snappy_benchmark.sh), which the build
# command names through SUITE_DIR, and the benchmarks' inputs, testdata/ of 4ebd8b2 (the
# range's first commit; its files have not changed since 2014), which the benchmarks read
# through $srcdir (selector.toml's [run] environment) instead of the checkout's copy.
# Usage: corpus/snappy/make_suite.sh PATH-TO-SNAPPY-CLONE
set -euo pipefail
repo=$(cd "$1" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$here/suite"
mkdir -p "$here/suite"
cp "$here/build_snappy_benchmark.sh" "$here/suite/"
git -C "$repo" archive 4ebd8b2 testdata | tar -x -C "$here/suite"
