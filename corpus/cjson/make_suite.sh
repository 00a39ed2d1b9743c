#!/usr/bin/env bash
# Makes cJSON's benchmark inputs in corpus/cjson/suite, so anyone can remake the same
# bytes: three JSON documents written by the generator below (a fixed 64-bit LCG, no
# random module, numbers written as exact decimal text or as Python's shortest repr of a
# correctly rounded division, so the bytes do not depend on the platform or Python 3
# version), and a copy of the benchmark driver bench.c that the build command compiles.
#   records.json           400 records (310 kB, indented by 2): objects, nested arrays,
#                          strings with escapes, raw UTF-8 and \u escapes (surrogate
#                          pairs too), integers, decimals, exponents, booleans, null
#   records-modified.json  the same with every 16th record changed (a score, a tag, a key
#                          added and one removed): the JSON Patch benchmark's target
#   numbers.json           118 kB of numbers on one line: integers, 19-digit integers,
#                          decimals, 17-digit doubles, exponents, a matrix
# cJSON's own history holds no JSON large enough to benchmark, so nothing is read from
# the clone; it is taken for the same usage as the other corpora.
# Usage: corpus/cjson/make_suite.sh PATH-TO-CJSON-CLONE
set -euo pipefail
[ -d "${1:?usage: $0 PATH-TO-CJSON-CLONE}" ]
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$here/suite"
cp "$here/bench.c" "$here/suite/bench.c"
python3 "$here/../json_documents.py" "$here/suite" 400
