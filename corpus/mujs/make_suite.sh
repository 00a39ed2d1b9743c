#!/usr/bin/env bash
# Makes corpus/mujs/suite: the build script (build_mujs.sh, which the build command names
# through SUITE_DIR) and the benchmark scripts of corpus/mujs/scripts, written for this
# corpus (ES5, which every MuJS of the range runs; fixed iteration counts, a fixed LCG
# where a benchmark needs varied numbers, no clock, no Math.random; each prints a
# checksum).  Nothing is read from the clone.
# Usage: corpus/mujs/make_suite.sh PATH-TO-MUJS-CLONE
set -euo pipefail
[ -d "${1:?usage: $0 PATH-TO-MUJS-CLONE}" ]
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$here/suite"
mkdir -p "$here/suite"
cp "$here/build_mujs.sh" "$here"/scripts/*.js "$here/suite/"
