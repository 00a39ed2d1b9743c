#!/usr/bin/env bash
# Makes xz's benchmark inputs in corpus/xz/suite from the xz repository itself, so anyone
# can remake the same bytes: the text of tag v5.4.0's sources and docs (.c, .h, .txt, .1
# and .sh files of src/ and doc/, concatenated in name order: 1.6 MB, all.txt), its first
# 400 kB (data.txt) and first 100 kB (data100k.txt), and all.txt compressed by the xz of
# 419f55f9 (the range's first commit, built here with CMake) with -6 as .xz (CRC64, the
# default check), as .xz with a SHA-256 check, and as .lzma.
# Usage: corpus/xz/make_suite.sh PATH-TO-XZ-CLONE
set -euo pipefail
repo=$(cd "$1" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$here/suite"
mkdir -p "$here/suite"
git -C "$repo" ls-tree -r --name-only v5.4.0 -- src doc | grep -E '\.(c|h|txt|1|sh)$' | LC_ALL=C sort \
    | while read -r path; do git -C "$repo" show "v5.4.0:$path"; done > "$here/suite/all.txt"
head -c 400000 "$here/suite/all.txt" > "$here/suite/data.txt"
head -c 100000 "$here/suite/all.txt" > "$here/suite/data100k.txt"
build=$(mktemp -d)
git -C "$repo" worktree add -q --detach "$build" 419f55f9
cmake -S "$build" -B "$build/build" -DCMAKE_BUILD_TYPE=None -DCMAKE_C_FLAGS='-O2' -DBUILD_SHARED_LIBS=OFF >/dev/null
cmake --build "$build/build" -j2 --target xz >/dev/null
"$build/build/xz" -6 -T1 -c "$here/suite/all.txt" > "$here/suite/all.xz"
"$build/build/xz" -6 -T1 --check=sha256 -c "$here/suite/all.txt" > "$here/suite/all-sha256.xz"
"$build/build/xz" --format=lzma -6 -c "$here/suite/all.txt" > "$here/suite/all.lzma"
git -C "$repo" worktree remove --force "$build"
