#!/usr/bin/env bash
# Makes corpus/tinyxml2/suite: the driver bench.cpp and its build script build_bench.sh,
# which the build command names through SUITE_DIR, and two documents made by
# corpus/pugixml/make_xml.py (a fixed LCG: the same bytes for anyone) without its
# processing instruction (TinyXML-2 parses "<?...?>" as a declaration, and from 2017
# rejects one that is not first): catalog.xml of 3,000 records (1 MB) and small.xml of
# 500 records (175 kB).  Nothing is read from the clone.
# Usage: corpus/tinyxml2/make_suite.sh PATH-TO-TINYXML2-CLONE
set -euo pipefail
[ -d "${1:?usage: $0 PATH-TO-TINYXML2-CLONE}" ]
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$here/suite"
mkdir -p "$here/suite"
cp "$here/bench.cpp" "$here/build_bench.sh" "$here/suite/"
python3 "$here/../pugixml/make_xml.py" "$here/suite/catalog.xml.in" 3000
python3 "$here/../pugixml/make_xml.py" "$here/suite/small.xml.in" 500
grep -v '^<?stylesheet' "$here/suite/catalog.xml.in" > "$here/suite/catalog.xml"
grep -v '^<?stylesheet' "$here/suite/small.xml.in" > "$here/suite/small.xml"
rm "$here/suite/catalog.xml.in" "$here/suite/small.xml.in"
