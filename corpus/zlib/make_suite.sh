#!/usr/bin/env bash
# Makes zlib's benchmark inputs in corpus/zlib/suite from the zlib repository itself, so
# anyone can remake the same bytes: 400 kB of C source and text (the .c, .h and .txt
# files of tag v1.3.1 outside contrib/, concatenated in C-locale name order: the library's
# sources, then RFCs 1950-1952 and the examples), and that text compressed by v1.3.1's
# minigzip -6 (a gzip stream: deflate output is fixed by zlib's version and level, and
# minigzip writes no file name or time stamp into the header).
# Usage: corpus/zlib/make_suite.sh PATH-TO-ZLIB-CLONE
set -euo pipefail
repo=$(cd "$1" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
tag=v1.3.1
mkdir -p "$here/suite"
build=$(mktemp -d)
git -C "$repo" ls-tree -r --name-only "$tag" | grep -E '\.(c|h|txt)$' | grep -v '^contrib/' | LC_ALL=C sort \
    | while read -r path; do git -C "$repo" show "$tag:$path"; done > "$build.text"
head -c 400000 "$build.text" > "$here/suite/data.txt"     # a file, not a pipe: no SIGPIPE
rm "$build.text"
git -C "$repo" worktree add -q --detach "$build" "$tag"
(cd "$build" && cc -O2 -D_LARGEFILE64_SOURCE=1 -DHAVE_HIDDEN -DHAVE_UNISTD_H -DHAVE_STDARG_H -I. -o minigzip \
    adler32.c compress.c crc32.c deflate.c gzclose.c gzlib.c gzread.c gzwrite.c infback.c inffast.c inflate.c \
    inftrees.c trees.c uncompr.c zutil.c test/minigzip.c)
"$build/minigzip" -6 -c "$here/suite/data.txt" > "$here/suite/data.gz"
git -C "$repo" worktree remove --force "$build"
