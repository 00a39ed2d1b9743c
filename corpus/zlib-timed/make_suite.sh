#!/usr/bin/env bash
# The same inputs as corpus/zlib (its make_suite.sh, into this folder's suite/).
# Usage: corpus/zlib-timed/make_suite.sh PATH-TO-ZLIB-CLONE
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
"$here/../zlib/make_suite.sh" "$1"
mkdir -p "$here/suite"
cp "$here/../zlib/suite/data.txt" "$here/../zlib/suite/data.gz" "$here/suite/"
