#!/bin/sh
# Builds corpus/pugixml's driver at build/bench in the checkout it runs in, the same way at
# every commit of the range: src/pugixml.cpp (the library, default configuration) and
# bench.cpp from the suite (its directory is this script's), g++ -O2 -g, one file per
# compiler call, two at a time.  The tests and the CMake and Premake builds are not used.
set -eu
export LC_ALL=C
here=$(cd "$(dirname "$0")" && pwd)
rm -rf build
mkdir -p build
export here
printf '%s\n' src/pugixml.cpp "$here/bench.cpp" \
    | xargs -P 2 -I SOURCE sh -c 'g++ -O2 -g -Isrc -c SOURCE -o build/$(basename SOURCE .cpp).o'
g++ -g -o build/bench build/bench.o build/pugixml.o
