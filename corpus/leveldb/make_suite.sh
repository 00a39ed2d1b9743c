#!/usr/bin/env bash
# Makes corpus/leveldb/suite: only the build script (build_db_bench.sh), which the build
# command names through SUITE_DIR.  db_bench makes its own data (fixed seeds), so there
# are no inputs.
# Usage: corpus/leveldb/make_suite.sh PATH-TO-LEVELDB-CLONE
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$here/suite"
cp "$here/build_db_bench.sh" "$here/suite/"
