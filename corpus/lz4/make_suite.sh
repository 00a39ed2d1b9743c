#!/usr/bin/env bash
# Makes lz4's benchmark inputs in corpus/lz4/suite from the lz4 repository itself, so
# anyone can remake the same bytes: 400 kB of C source and text (the sources of tag
# v1.9.4, concatenated in name order), and that text compressed by v1.9.4's lz4 -1.
# Usage: corpus/lz4/make_suite.sh PATH-TO-LZ4-CLONE
set -euo pipefail
repo=$(cd "$1" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$here/suite"
build=$(mktemp -d)
git -C "$repo" ls-tree -r --name-only v1.9.4 -- lib programs tests doc \
    | grep -E '\.(c|h|md|txt)$' | sort \
    | while read -r path; do git -C "$repo" show "v1.9.4:$path"; done > "$build.text"
head -c 400000 "$build.text" > "$here/suite/data.txt"
rm "$build.text"
git -C "$repo" worktree add -q --detach "$build" v1.9.4
make -s -C "$build" lz4 >/dev/null
"$build/lz4" -1 -f -q "$here/suite/data.txt" "$here/suite/data.lz4"
git -C "$repo" worktree remove --force "$build"
