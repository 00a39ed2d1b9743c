#!/usr/bin/env bash
# Rebuilds zlib's store: clone, suite, calibration, then 202 first-parent commits of the
# develop branch, from the one after the zlib 1.2.12 release (a4c1758, 2022-03-27) to
# d201f04 (2024-03-22), the newest commit of develop when the range was chosen.  126 of
# them change only unaffected paths (minizip, configure, CMake, docs) and take their
# parent's build; the others build in about 2 s of CPU.
# Usage: corpus/zlib/collect.sh [WORKDIR]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
work=${1:-$PWD/zlib-corpus}
[ -d "$work/zlib" ] || git clone -q https://github.com/madler/zlib "$work/zlib"
[ -f "$here/suite/data.gz" ] || "$here/make_suite.sh" "$work/zlib"
cd "$work/zlib"
selector calibrate a4c1758^ --config "$here/selector.toml" --store "$work/store" --rounds 2
time selector collect a4c1758^..d201f04 --first-parent -j 2 --config "$here/selector.toml" --store "$work/store"
