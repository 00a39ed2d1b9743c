#!/usr/bin/env bash
# Makes corpus/janet/suite: the build script (build_janet.sh, which the build command
# names through SUITE_DIR) and the benchmark scripts of corpus/janet/scripts, written
# for this corpus (fixed iteration counts, a fixed Park-Miller generator where a
# benchmark needs varied numbers, exact in doubles; no clock, no math/random; each
# prints a checksum).  Nothing is read from the clone.
# Usage: corpus/janet/make_suite.sh PATH-TO-JANET-CLONE
set -euo pipefail
[ -d "${1:?usage: $0 PATH-TO-JANET-CLONE}" ]
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$here/suite"
mkdir -p "$here/suite"
cp "$here/build_janet.sh" "$here"/scripts/*.janet "$here/suite/"
