#!/bin/sh
# Builds corpus/tinyxml2's driver at build/bench in the checkout it runs in, the same way
# at every commit of the range: tinyxml2.cpp and bench.cpp from the suite (its directory
# is this script's), g++ -O2 -g, one file per compiler call, two at a time.  xmltest and
# the CMake and make builds are not used.
set -eu
export LC_ALL=C
here=$(cd "$(dirname "$0")" && pwd)
rm -rf build
mkdir -p build
export here
printf '%s\n' tinyxml2.cpp "$here/bench.cpp" \
    | xargs -P 2 -I SOURCE sh -c 'g++ -O2 -g -I. -c SOURCE -o build/$(basename SOURCE .cpp).o'
g++ -g -o build/bench build/bench.o build/tinyxml2.o
