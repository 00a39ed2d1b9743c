#!/usr/bin/env bash
# Makes corpus/pugixml/suite: the driver bench.cpp and its build script build_bench.sh,
# which the build command names through SUITE_DIR, and catalog.xml, a 1 MB document of
# 3,000 generated records (make_xml.py: a fixed LCG, so the bytes are the same for
# anyone; a declaration, a DOCTYPE, comments, a processing instruction, attributes,
# entities, CDATA, nested elements).  Nothing is read from the clone.
# Usage: corpus/pugixml/make_suite.sh PATH-TO-PUGIXML-CLONE
set -euo pipefail
[ -d "${1:?usage: $0 PATH-TO-PUGIXML-CLONE}" ]
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$here/suite"
mkdir -p "$here/suite"
cp "$here/bench.cpp" "$here/build_bench.sh" "$here/suite/"
python3 "$here/make_xml.py" "$here/suite/catalog.xml" 3000
