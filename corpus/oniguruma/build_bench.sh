#!/bin/sh
# Builds corpus/oniguruma's driver at build/bench in the checkout it runs in: the library
# by its own CMake build (static, no POSIX API, CMAKE_BUILD_TYPE=None so that the flags
# are -O2 -g alone), then bench.c from the suite (its directory is this script's) linked
# with it.
set -eu
export LC_ALL=C
here=$(cd "$(dirname "$0")" && pwd)
cmake -S . -B build -DCMAKE_BUILD_TYPE=None -DCMAKE_C_FLAGS='-O2 -g' -DBUILD_SHARED_LIBS=OFF -DENABLE_POSIX_API=OFF >/dev/null
cmake --build build -j2 --target onig
gcc -O2 -g -Isrc -Ibuild -o build/bench "$here/bench.c" build/libonig.a
