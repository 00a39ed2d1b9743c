#!/usr/bin/env bash
# Makes libdeflate's benchmark inputs in corpus/libdeflate/suite from the libdeflate
# repository itself, so anyone can remake the same bytes: 400 kB of C source and text
# (the .c, .h and .md files of tag v1.15, concatenated in C-locale name order: NEWS,
# README, the library and the programs), and that text compressed by v1.15's
# libdeflate-gzip -6 (a gzip stream: the output is fixed by libdeflate's version and
# level, and the header carries no name and no time stamp).
# Usage: corpus/libdeflate/make_suite.sh PATH-TO-LIBDEFLATE-CLONE
set -euo pipefail
repo=$(cd "$1" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
tag=v1.15
mkdir -p "$here/suite"
build=$(mktemp -d)
git -C "$repo" ls-tree -r --name-only "$tag" | grep -E '\.(c|h|md)$' | LC_ALL=C sort \
    | while read -r path; do git -C "$repo" show "$tag:$path"; done > "$build.text"
head -c 400000 "$build.text" > "$here/suite/data.txt"     # a file, not a pipe: no SIGPIPE
rm "$build.text"
git -C "$repo" worktree add -q --detach "$build" "$tag"
(cd "$build" && cc -O2 -DNDEBUG -I. -o libdeflate-gzip lib/*.c lib/*/*.c programs/gzip.c programs/prog_util.c programs/tgetopt.c)
"$build/libdeflate-gzip" -6 -c "$here/suite/data.txt" > "$here/suite/data.gz"
git -C "$repo" worktree remove --force "$build"
