#!/usr/bin/env bash
# Makes PCRE2's benchmark input in corpus/pcre2/suite from the PCRE2 repository itself, so
# anyone can remake the same bytes: 400 kB of C source and documentation (src/*.c, *.h,
# then doc/*.txt of tag pcre2-10.44, each in name order).
# Usage: corpus/pcre2/make_suite.sh PATH-TO-PCRE2-CLONE
set -euo pipefail
repo=$(cd "$1" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$here/suite"
text=$(mktemp)
trap 'rm -f "$text"' EXIT
# The whole text first, then its head: `head -c` closing a pipe early kills the writer with
# SIGPIPE, which pipefail turns into a failure.
{ git -C "$repo" ls-tree -r --name-only pcre2-10.44 -- src | grep -E '\.(c|h)$' | sort
  git -C "$repo" ls-tree -r --name-only pcre2-10.44 -- doc | grep -E '\.txt$' | sort; } \
    | while read -r path; do git -C "$repo" show "pcre2-10.44:$path"; done > "$text"
head -c 400000 "$text" > "$here/suite/data.txt"
