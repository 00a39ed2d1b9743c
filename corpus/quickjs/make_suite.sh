#!/usr/bin/env bash
# Makes corpus/quickjs/suite: the build script (build_qjs.sh) and repl_stub.c, which the
# build command names through SUITE_DIR, and microbench.js: tests/microbench.js of
# 251a8b2 (the range's first commit), its last line (main's call, which sizes every
# loop by clock time) replaced by runner.js, which calls the named tests with a fixed
# iteration count.  One microbench.js for every commit: the benchmarks measure the
# interpreter built at each commit, not the edits of the benchmark file (five commits of
# the range change it: new tests, changed ones, a duplicate int_to_string removed).
# Usage: corpus/quickjs/make_suite.sh PATH-TO-QUICKJS-CLONE
set -euo pipefail
repo=$(cd "$1" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$here/suite"
mkdir -p "$here/suite"
cp "$here/build_qjs.sh" "$here/repl_stub.c" "$here/suite/"
git -C "$repo" show 251a8b2:tests/microbench.js > "$here/suite/microbench.js.orig"
last=$(tail -n 1 "$here/suite/microbench.js.orig")
if [ "$last" != 'main(scriptArgs.length, scriptArgs, this);' ]; then
    echo "make_suite.sh: microbench.js does not end with main's call" >&2
    exit 1
fi
{ sed '$d' "$here/suite/microbench.js.orig"; cat "$here/runner.js"; } > "$here/suite/microbench.js"
rm "$here/suite/microbench.js.orig"
