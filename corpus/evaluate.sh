#!/usr/bin/env bash
# Evaluates the whole corpus and rebuilds what the package ships from it: `selector
# evaluate` on every project's store collected by collect.sh under WORKDIR (Method 4 on
# each, then leave-one-project-out), its tables written into docs/evaluation.md between
# the markers, each project's report under WORKDIR/evaluation/, and the cross-project
# model trained on all of them into selector/data/cross-project (the shipped model); then
# the day-one table: each project decided by that model trained as shipped on the other
# projects only (`selector evaluate --shipped --held-out`), beside the rules; the replay of every
# history with that held-out model among the policies (`selector evaluate --replay --held-out`);
# how many changed labels held under perturbed run contexts (corpus/perturbation_counts.py); and the
# conformal bound of the shipped model's pruning beside each project's realized miss rate
# (corpus/risk_bound.py, printed whatever policy the bundle earned).
# Usage: corpus/evaluate.sh [WORKDIR [PROJECT...]]   (default: the current directory, every corpus project)
set -euo pipefail
corpus=$(cd "$(dirname "$0")" && pwd)
top=$(dirname "$corpus")
work=$(cd "${1:-.}" && pwd)
stores=()
projects=("${@:2}")
[ "${#projects[@]}" -gt 0 ] || projects=(lz4 zlib libdeflate cjson yyjson zstd pcre2 libjpeg-turbo git leveldb snappy quickjs nlohmann-json mbedtls)
for project in "${projects[@]}"; do
    if [ -d "$work/$project/store" ]; then
        stores+=("$work/$project/store")
    else
        echo "evaluate.sh: no store for $project under $work (run corpus/collect.sh $project $work/$project)" >&2
    fi
done
if [ "${#stores[@]}" -lt 2 ]; then
    echo "evaluate.sh: leave-one-project-out needs at least two collected projects" >&2
    exit 2
fi
time selector evaluate "${stores[@]}" --out "$work/evaluation" --markdown "$top/docs/evaluation.md" \
    --write-model "$top/selector/data/cross-project" --model perphecy --jobs "$(nproc)"
time selector evaluate --shipped --held-out "${stores[@]}" --out "$work/day-one" --markdown "$top/docs/evaluation.md"
time selector evaluate --replay --held-out "${stores[@]}" --out "$work/replay" --markdown "$top/docs/evaluation.md"
python3 "$corpus/perturbation_counts.py" --markdown "${stores[@]}"
python3 "$corpus/risk_bound.py" --markdown "${stores[@]}"
