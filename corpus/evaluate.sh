#!/usr/bin/env bash
# Evaluates the whole corpus and rebuilds what the package ships from it, what the issues ask
# to be shown first: (1) the cross-project model, its learner chosen by the projects held out in
# turn, trained on all of them into selector/data/cross-project (the shipped bundle), with the
# conformal bound of its pruning beside each project's realized miss rate (corpus/risk_bound.py
# --model auto); (2) the day-one table: each project decided by that model trained as shipped
# on the other projects only (`selector evaluate --shipped --held-out`), beside the rules;
# (3) the replay of every history with that held-out model and the project's own, retrained as
# it walks, among the policies (`selector evaluate --replay --held-out`); (4) how many changed
# labels held under perturbed run contexts (corpus/perturbation_counts.py); then, the longest,
# (5) `selector evaluate` of every model on every project (Method 4 on each, then
# leave-one-project-out), its tables written into docs/evaluation.md between the markers and
# each project's report under WORKDIR/evaluation/.
# Every step keeps the fits of projects held out in turn in WORKDIR/fits and takes those an
# earlier step or run made (selector/evaluation/held_out_fits.py), and step 5 its finished
# parts: after a stop, run it again and it goes on.  On 24 projects and two cores it is hours.
# Every step but the replay reads each project's committed evaluation pack (corpus/PROJECT/pack,
# written by collect.sh with `selector pack`), or its store under WORKDIR where it has none, so
# the evaluation and the shipped bundle rebuild on any machine without the stores; the replay
# walks the stores under WORKDIR, each with a bundle trained on every other project (its store,
# else its pack).
# Usage: corpus/evaluate.sh [WORKDIR [PROJECT...]]   (default: the current directory, every corpus project)
set -euo pipefail
corpus=$(cd "$(dirname "$0")" && pwd)
top=$(dirname "$corpus")
work=$(cd "${1:-.}" && pwd)
stores=()   # the replay's: a project's store where it is collected here, else its pack (training only)
projects=("${@:2}")
[ "${#projects[@]}" -gt 0 ] || projects=(lz4 zlib libdeflate cjson yyjson zstd pcre2 libjpeg-turbo git leveldb snappy quickjs nlohmann-json mbedtls mujs berry janet duktape lmdb xz oniguruma pugixml tinyxml2 spdlog)
packed=()   # a project's committed evaluation pack, else its store where it is collected here
# Every step but the replay reads a project's committed pack where there is one: the same figures
# as its store (collect.sh packs each store when its collection ends), without building every
# tuple's features again at each step; the replay walks the stores.
walked=0
for project in "${projects[@]}"; do
    if [ -d "$work/$project/store" ]; then
        stores+=("$work/$project/store"); walked=$((walked + 1))
    elif [ -f "$corpus/$project/pack/pack.json" ]; then
        stores+=("$corpus/$project/pack")
    fi
    if [ -f "$corpus/$project/pack/pack.json" ]; then
        packed+=("$corpus/$project/pack")
        [ -d "$work/$project/store" ] || echo "evaluate.sh: $project from its evaluation pack (corpus/$project/pack); its replay needs the store" >&2
    elif [ -d "$work/$project/store" ]; then
        packed+=("$work/$project/store")
    else
        echo "evaluate.sh: no store for $project under $work and no pack (run corpus/collect.sh $project $work/$project)" >&2
    fi
done
if [ "${#packed[@]}" -lt 2 ]; then
    echo "evaluate.sh: leave-one-project-out needs at least two collected or packed projects" >&2
    exit 2
fi
fits="$work/fits"   # the fits of projects held out in turn, shared by every step below (and kept: a stop resumes)
time python3 "$corpus/risk_bound.py" --markdown --model auto --write-model "$top/selector/data/cross-project" \
    --jobs "$(nproc)" --fits "$fits" "${packed[@]}"
time selector evaluate --shipped --held-out "${packed[@]}" --out "$work/day-one" --markdown "$top/docs/evaluation.md" \
    --jobs "$(nproc)" --fits "$fits"
if [ "$walked" -ge 1 ] && [ "${#stores[@]}" -ge 2 ]; then   # the replay walks the stores; packs train their bundles
    time selector evaluate --replay --held-out "${stores[@]}" --out "$work/replay" --markdown "$top/docs/evaluation.md" \
        --jobs "$(nproc)" --fits "$fits"
fi
python3 "$corpus/perturbation_counts.py" --markdown "${packed[@]}"
time selector evaluate "${packed[@]}" --out "$work/evaluation" --markdown "$top/docs/evaluation.md" \
    --jobs "$(nproc)" --fits "$fits"
