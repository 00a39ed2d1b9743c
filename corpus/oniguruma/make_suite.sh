#!/usr/bin/env bash
# Makes corpus/oniguruma/suite: the driver bench.c and its build script build_bench.sh,
# which the build command names through SUITE_DIR, and text.txt, 500 kB of Oniguruma's
# own text at tag v6.9.4 (the .c and .h files of src/ and the files of doc/, without the
# generated Unicode tables and the encodings' folder, concatenated in name order, cut at
# the last whole line): C source and English and Japanese documentation in UTF-8.
# Usage: corpus/oniguruma/make_suite.sh PATH-TO-ONIGURUMA-CLONE
set -euo pipefail
repo=$(cd "$1" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$here/suite"
mkdir -p "$here/suite"
cp "$here/bench.c" "$here/build_bench.sh" "$here/suite/"
git -C "$repo" ls-tree -r --name-only v6.9.4 -- doc src | grep -E '(\.c|\.h|\.txt|doc/[A-Z_a-z.]+)$' \
    | grep -v -E 'unicode_(fold|unfold|property|egcb|wb)|unicode_data|enc/' | LC_ALL=C sort \
    | while read -r path; do git -C "$repo" show "v6.9.4:$path"; done > "$here/suite/all.txt"
head -c 500000 "$here/suite/all.txt" | sed '$d' > "$here/suite/text.txt"
rm "$here/suite/all.txt"
