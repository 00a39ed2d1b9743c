#!/usr/bin/env bash
# Rebuilds cJSON's store: clone, suite, calibration, then 198 first-parent commits of
# master, from the one after the v1.5.4 release (9189b33, 2017-06-04) to a29814f
# (2026-02-07), the newest commit of master when the range was chosen.  87 of them change
# only unaffected paths and take their parent's build; of the others, all build (about
# 1 s) but c06d826 ("improve compare_double function", 2019-12-06), whose cJSON_Utils.c
# uses a macro its cJSON.h no longer defines; the next commit fixes it.
# selector.toml names the benchmark driver through the placeholder SUITE_DIR (the tool
# fills no placeholders into the build command): the configuration used is a copy in
# the work directory with SUITE_DIR, and the suite path, made absolute.
# Usage: corpus/cjson/collect.sh [WORKDIR]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
work=${1:-$PWD/cjson-corpus}
mkdir -p "$work"
work=$(cd "$work" && pwd)
[ -d "$work/cjson" ] || git clone -q https://github.com/DaveGamble/cJSON "$work/cjson"
# made again when missing, or when bench.c changed since it was copied
{ [ -f "$here/suite/numbers.json" ] && cmp -s "$here/bench.c" "$here/suite/bench.c"; } || "$here/make_suite.sh" "$work/cjson"
suite=$(printf '%s' "$here/suite" | sed 's/[\\|&]/\\&/g')     # escaped for sed's replacement
sed -e "s|SUITE_DIR|$suite|g" -e "s|^suite = \"suite\"|suite = \"$suite\"|" "$here/selector.toml" > "$work/selector.toml"
cd "$work/cjson"
selector calibrate 9189b33 --config "$work/selector.toml" --store "$work/store" --rounds 2
time selector collect 9189b33..a29814f --first-parent -j 2 --config "$work/selector.toml" --store "$work/store"
