#!/usr/bin/env bash
# Rebuilds libdeflate's store: clone, suite, calibration, then 190 first-parent commits
# of master, from the one after the v1.15 release (0201338, 2022-12-04) to 28e88e9
# (2026-04-03), the newest commit of master when the range was chosen.  63 of them
# change only unaffected paths (CMake, scripts, tests, docs) and take their parent's
# build; the others build in about 4 s of CPU.
# Usage: corpus/libdeflate/collect.sh [WORKDIR]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
work=${1:-$PWD/libdeflate-corpus}
[ -d "$work/libdeflate" ] || git clone -q https://github.com/ebiggers/libdeflate "$work/libdeflate"
[ -f "$here/suite/data.gz" ] || "$here/make_suite.sh" "$work/libdeflate"
cd "$work/libdeflate"
selector calibrate 0201338 --config "$here/selector.toml" --store "$work/store" --rounds 2
time selector collect 0201338..28e88e9 --first-parent -j 2 --config "$here/selector.toml" --store "$work/store"
