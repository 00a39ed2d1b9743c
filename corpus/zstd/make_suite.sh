#!/usr/bin/env bash
# Makes zstd's benchmark inputs in corpus/zstd/suite from the zstd repository itself, so
# anyone can remake the same bytes: 400 kB of C source and text (the sources and docs of
# tag v1.5.5, concatenated in name order), and that text compressed by v1.5.5's zstd -3.
# Usage: corpus/zstd/make_suite.sh PATH-TO-ZSTD-CLONE
set -euo pipefail
repo=$(cd "$1" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$here/suite"
build=$(mktemp -d)
git -C "$repo" ls-tree -r --name-only v1.5.5 -- lib programs doc \
    | grep -E '\.(c|h|md|txt)$' | sort \
    | while read -r path; do git -C "$repo" show "v1.5.5:$path"; done > "$build.text"
head -c 400000 "$build.text" > "$here/suite/data.txt"
rm "$build.text"
git -C "$repo" worktree add -q --detach "$build" v1.5.5
make -s -C "$build/programs" zstd HAVE_ZLIB=0 HAVE_LZMA=0 HAVE_LZ4=0 >/dev/null
"$build/programs/zstd" -3 --single-thread -q -f "$here/suite/data.txt" -o "$here/suite/data.zst"
git -C "$repo" worktree remove --force "$build"
