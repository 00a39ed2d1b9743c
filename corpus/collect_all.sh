#!/usr/bin/env bash
# Rebuilds every corpus project's store under WORKDIR, the quick C histories first, one after
# the other (each collection already uses both cores of a 2-core machine): corpus/collect.sh
# PROJECT WORKDIR/PROJECT for each, a project done when WORKDIR/PROJECT/DONE exists.  Run it
# again after a stop and it goes on where it was: finished projects are skipped, and a
# collection stopped half way resumes (`selector collect` skips the commits it stored).  A
# project that fails is logged and the next one starts.  Then: corpus/evaluate.sh WORKDIR.
# A clone already at WORKDIR/PROJECT/PROJECT is used as it is (a mirror cloned there by hand,
# where the machine cannot reach the project's URL).
# Usage: corpus/collect_all.sh [WORKDIR [PROJECT...]]   (default: the current directory, every project of the
#        corpus: each folder of corpus/ with a recipe, the timed variants of zlib and cJSON aside)
set -uo pipefail
corpus=$(cd "$(dirname "$0")" && pwd)
work=$(mkdir -p "${1:-.}" && cd "${1:-.}" && pwd)
projects=("${@:2}")
[ "${#projects[@]}" -gt 0 ] || projects=(lz4 zlib libdeflate cjson yyjson zstd pcre2 libjpeg-turbo snappy leveldb git
                                        quickjs nlohmann-json mbedtls mujs berry janet duktape lmdb xz oniguruma
                                        pugixml tinyxml2 spdlog)
for project in "${projects[@]}"; do
    if [ -f "$work/$project/DONE" ]; then
        echo "$project: done before"
        continue
    fi
    mkdir -p "$work/$project"
    echo "$project: collecting ($(date -u +%H:%M), log in $work/$project.log)"
    if "$corpus/collect.sh" "$project" "$work/$project" >> "$work/$project.log" 2>&1; then
        touch "$work/$project/DONE"
        echo "$project: done ($(date -u +%H:%M))"
    else
        echo "$project: failed (exit $?; the end of $work/$project.log says why)" >&2
    fi
done
