#!/usr/bin/env bash
# Rebuilds yyjson's store: clone, suite, calibration, then 199 first-parent commits of
# master, from the one after 8ffa6f5 (2023-02-18, shortly after the 0.6.0 release) to
# 12797c6, the newest commit of master when the range was chosen.  85 of them change
# only unaffected paths (docs, tests) and take their parent's build; the others build
# src/yyjson.c, about 12 s of CPU each.
# selector.toml names the benchmark driver through the placeholder SUITE_DIR (the tool
# fills no placeholders into the build command): the configuration used is a copy in
# the work directory with SUITE_DIR, and the suite path, made absolute.
# Usage: corpus/yyjson/collect.sh [WORKDIR]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
work=${1:-$PWD/yyjson-corpus}
mkdir -p "$work"
work=$(cd "$work" && pwd)
[ -d "$work/yyjson" ] || git clone -q https://github.com/ibireme/yyjson "$work/yyjson"
# made again when missing, or when bench.c changed since it was copied
{ [ -f "$here/suite/numbers.json" ] && cmp -s "$here/bench.c" "$here/suite/bench.c"; } || "$here/make_suite.sh" "$work/yyjson"
suite=$(printf '%s' "$here/suite" | sed 's/[\\|&]/\\&/g')     # escaped for sed's replacement
sed -e "s|SUITE_DIR|$suite|g" -e "s|^suite = \"suite\"|suite = \"$suite\"|" "$here/selector.toml" > "$work/selector.toml"
cd "$work/yyjson"
selector calibrate 8ffa6f5 --config "$work/selector.toml" --store "$work/store" --rounds 2
time selector collect 8ffa6f5..12797c6 --first-parent -j 2 --config "$work/selector.toml" --store "$work/store"
