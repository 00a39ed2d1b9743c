#!/usr/bin/env bash
# Rebuilds the store of one corpus project: its clone, its suite (made again when missing
# or when a driver of the project's folder changed), calibration on the commit its range
# starts from, then the range (first parents, two jobs).  The project's folder holds a
# `recipe` (the clone URL and the range, with what they hold), its selector.toml and its
# make_suite.sh.  The configuration used is a copy in WORKDIR with the suite's path made
# absolute and put in place of SUITE_DIR, the placeholder by which a build command names
# a driver kept in the suite (the tool fills placeholders into benchmark commands only).
# SELECTOR names the command to run (default `selector`), e.g. "python3 -m perf_selector" to run
# the code PYTHONPATH points at.
# Before anything else it checks what the builds and the measurement need (gcc, g++, make,
# git, valgrind, python3, and the recipe's `packages` and `python_modules`): a commit whose
# build fails for a missing package is stored as failed, and a later run skips it.
# Usage: corpus/collect.sh PROJECT [WORKDIR [COLLECT-OPTION...]]
#        (PROJECT: lz4, zlib, cjson, yyjson, libdeflate, zstd, pcre2, libjpeg-turbo, git, leveldb, snappy, quickjs, nlohmann-json, mbedtls,
#        mujs, berry, janet, duktape, lmdb, xz, pugixml, tinyxml2, oniguruma, spdlog, zlib-timed;
#        WORKDIR default ./PROJECT, where corpus/evaluate.sh looks for it; options go to `selector collect`,
#        e.g. --retry-failed to build again the commits that failed before)
set -euo pipefail
corpus=$(cd "$(dirname "$0")" && pwd)
project=${1:?usage: $0 PROJECT [WORKDIR [COLLECT-OPTION...]]}
here="$corpus/$project"
if [ ! -f "$here/recipe" ]; then
    echo "collect.sh: no corpus project '$project' (no $here/recipe)" >&2
    exit 2
fi
source "$here/recipe"   # url, range (and calibration_rounds, default 2; packages, python_modules)
missing=()
for command in gcc g++ make git valgrind python3; do
    command -v "$command" >/dev/null || missing+=("$command")
done
if command -v dpkg-query >/dev/null; then   # Debian's packages; elsewhere the builds will say
    for package in ${packages:-}; do
        dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
    done
fi
for module in ${python_modules:-}; do
    python3 -c "import $module" 2>/dev/null || missing+=("python3's $module")
done
if [ "${#missing[@]}" -gt 0 ]; then
    echo "collect.sh: $project cannot be built and measured here, missing: ${missing[*]} (apt-get install the" \
         "commands and packages, pip install python3's modules); nothing collected" >&2
    exit 2
fi
work=${2:-$PWD/$project}
mkdir -p "$work"
work=$(cd "$work" && pwd)
[ -d "$work/$project" ] || git clone -q "$url" "$work/$project"
# A suite is whole only once its make_suite.sh has finished (the marker beside it): one cut
# off half way, by a stop or a failure, is made again from nothing.
stale=no
[ -d "$here/suite" ] && [ -f "$here/.suite-made" ] || stale=yes
for driver in "$here"/*.c "$here"/build_*.sh; do   # drivers and build scripts copied into the suite
    if [ -e "$driver" ] && ! cmp -s "$driver" "$here/suite/$(basename "$driver")"; then
        stale=yes
    fi
done
if [ "$stale" = yes ]; then
    rm -rf "$here/suite" "$here/.suite-made"
    "$here/make_suite.sh" "$work/$project"
    touch "$here/.suite-made"
fi
suite=$(printf '%s' "$here/suite" | sed 's/[\\|&]/\\&/g')     # escaped for sed's replacement
sed -e "s|SUITE_DIR|$suite|g" -e "s|^suite = \"suite\"|suite = \"$suite\"|" "$here/selector.toml" > "$work/selector.toml"
cd "$work/$project"
# Every corpus benchmark is calibrated however long its run (older selectors calibrate every one anyway)
long=(); [[ $(${SELECTOR:-selector} calibrate --help) == *--long-run* ]] && long=(--long-run 0)
${SELECTOR:-selector} calibrate "${range%%..*}" --config "$work/selector.toml" --store "$work/store" --rounds "${calibration_rounds:-2}" "${long[@]}"
time ${SELECTOR:-selector} collect "$range" --first-parent -j 2 --config "$work/selector.toml" --store "$work/store" "${@:3}"
# What the evaluation needs of the store, small enough to commit (corpus/evaluate.sh reads it
# where the store is not collected): the project's configuration as committed, not the copy.
${SELECTOR:-selector} pack "$work/store=$here/selector.toml" --out "$here/pack"
