#!/usr/bin/env bash
# Makes corpus/nlohmann-json/suite: the build script (build_json_benchmarks.sh), which
# the build command names through SUITE_DIR and which points the benchmark program's
# TEST_DATA_DIRECTORY at suite/json_test_data, and that folder's eight JSON documents,
# written by make_inputs.py (generated, the same bytes everywhere: see there; the
# project's json_test_data download is not reachable, and nothing of the clone is read).
# Usage: corpus/nlohmann-json/make_suite.sh PATH-TO-JSON-CLONE
set -euo pipefail
[ -d "${1:?usage: $0 PATH-TO-JSON-CLONE}" ]
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$here/suite"
mkdir -p "$here/suite"
cp "$here/build_json_benchmarks.sh" "$here/suite/"
python3 "$here/make_inputs.py" "$here/suite"
