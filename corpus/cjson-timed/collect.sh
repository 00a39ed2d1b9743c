#!/usr/bin/env bash
# corpus/cjson-timed/collect.sh [WORKDIR]: cJSON's chosen pairs timed (issue 26).
#
# Needs WORKDIR/cjson (corpus/collect.sh cjson WORKDIR/cjson): its clone and its callgrind
# store, whose pairs pick_pairs.py chooses (every pair whose instruction count changed by
# 5% or more, and a seeded sample of pairs of different binaries with identical counts).
# Collects both sides of each pair, one commit at a time (so each new commit's closest
# collected ancestor is its parent, as in the callgrind store), then confirms the chosen
# pairs by interleaved runs in one session.  corpus/timed_vs_counted.py then sets the two
# stores' labels side by side.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=${1:-$HOME/corpus-work}
work="$root/cjson-timed"
mkdir -p "$work"
suite=$(printf '%s' "$here/../cjson/suite" | sed 's/[\\|&]/\\&/g')
sed -e "s|SUITE_DIR|$suite|g" -e "s|^suite = \"suite\"|suite = \"$suite\"|" "$here/selector.toml" > "$work/selector.toml"
{ read -r commits; read -r news; } < <(python3 "$here/pick_pairs.py" "$root/cjson/store")
cd "$root/cjson/cjson"
options=(--config "$work/selector.toml" --store "$work/store")
first=${commits%% *}
${SELECTOR:-selector} calibrate "$first" --rounds 6 "${options[@]}"
for commit in $commits; do
    ${SELECTOR:-selector} collect "$commit" -n 1 --no-calibrate "${options[@]}"
done
${SELECTOR:-selector} confirm --commits "$news" "${options[@]}"
# and the changes the unpaired runs decided: drift beyond what calibration saw can make them too
${SELECTOR:-selector} confirm --all --commits "$news" "${options[@]}"
