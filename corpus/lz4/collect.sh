#!/usr/bin/env bash
# Rebuilds lz4's store: clone, suite, calibration, then the evaluation range of
# docs/evaluation.md (81 first-parent commits).  Usage: corpus/lz4/collect.sh [WORKDIR]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
work=${1:-$PWD/lz4-corpus}
[ -d "$work/lz4" ] || git clone -q https://github.com/lz4/lz4 "$work/lz4"
[ -f "$here/suite/data.lz4" ] || "$here/make_suite.sh" "$work/lz4"
cd "$work/lz4"
selector calibrate 4b407c3f^ --config "$here/selector.toml" --store "$work/store" --rounds 2
time selector collect 4b407c3f^..18e055e1 --first-parent -j 2 --config "$here/selector.toml" --store "$work/store"
