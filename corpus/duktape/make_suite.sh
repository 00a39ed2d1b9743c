#!/usr/bin/env bash
# Makes corpus/duktape/suite: the build script (build_duk.sh, which the build command names
# through SUITE_DIR) and the benchmark scripts of corpus/duktape/scripts, written for this
# corpus (ES5, which every Duktape of the range runs; fixed iteration counts, a fixed LCG
# where a benchmark needs varied numbers, no clock, no Math.random; each prints a
# checksum).  Nothing is read from the clone.
# Usage: corpus/duktape/make_suite.sh PATH-TO-DUKTAPE-CLONE
set -euo pipefail
[ -d "${1:?usage: $0 PATH-TO-DUKTAPE-CLONE}" ]
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$here/suite"
mkdir -p "$here/suite"
cp "$here/build_duk.sh" "$here"/scripts/*.js "$here/suite/"
