#!/bin/sh
# Builds LevelDB's db_bench at build/db_bench in the checkout it runs in, the same way at
# every commit of the range: the library's sources (db/, table/, util/ without the Windows
# Env, helpers/memenv) as a static archive, as CMake's leveldb target, and db_bench's own
# target: util/histogram.cc, util/testutil.cc and the driver
# (benchmarks/db_bench.cc, db/db_bench.cc before May 2019), with g++ directly, without
# CMake.  CMake's file from November 2020 on adds third_party/benchmark and googletest as
# subdirectories (git submodules, absent from a plain clone); db_bench uses neither
# (its own driver), and util/testutil.h's gmock/gtest includes are header-only uses,
# answered by Debian's googletest headers (libgmock-dev) through a shim for the
# third_party/ paths of 2019-11 to 2020-10.  port_config.h is made from
# port/port_config.h.in as CMake would on Linux, with every optional library off
# (crc32c, snappy, zstd; tcmalloc is not linked): fdatasync and O_CLOEXEC on.
# -O2 -g -DNDEBUG (CMake's RelWithDebInfo), C++17 (Debian's googletest needs C++14), no
# exceptions and no RTTI as CMake's file asks; one file per compiler call, two at a
# time, so ccache answers the files a commit did not touch; objects linked in name order.
set -eu
export LC_ALL=C
rm -rf build
mkdir -p build/include/port build/shim/third_party/googletest/googlemock/include/gmock \
         build/shim/third_party/googletest/googletest/include/gtest build/obj
sed -e 's/^#cmakedefine01 \(HAVE_FDATASYNC\|HAVE_O_CLOEXEC\)$/#define \1 1/' \
    -e 's/^#cmakedefine01 \([A-Z_0-9]*\)$/#define \1 0/' port/port_config.h.in > build/include/port/port_config.h
echo '#include <gmock/gmock.h>' > build/shim/third_party/googletest/googlemock/include/gmock/gmock.h
echo '#include <gtest/gtest.h>' > build/shim/third_party/googletest/googletest/include/gtest/gtest.h
driver=benchmarks/db_bench.cc
[ -f "$driver" ] || driver=db/db_bench.cc
library=$(ls db/*.cc table/*.cc util/*.cc helpers/memenv/*.cc \
    | grep -v -E '_test\.cc$|_bench|^db/leveldbutil\.cc$|^util/(env_windows|testharness|testutil|histogram)\.cc$')
flags="-std=c++17 -O2 -g -DNDEBUG -fno-exceptions -fno-rtti -pthread -DLEVELDB_PLATFORM_POSIX=1 -DLEVELDB_HAS_PORT_CONFIG_H=1 -Ibuild/shim -Ibuild/include -I. -Iinclude"
export flags
printf '%s\n' $library util/histogram.cc util/testutil.cc "$driver" \
    | xargs -P 2 -I SOURCE sh -c 'g++ $flags -c SOURCE -o build/obj/$(echo SOURCE | tr / _).o'
ar rcsD build/libleveldb.a $(printf 'build/obj/%s.o\n' $(echo "$library" | tr / _))
g++ -O2 -g -pthread -o build/db_bench build/obj/$(echo "$driver" | tr / _).o build/obj/util_histogram.cc.o \
    build/obj/util_testutil.cc.o build/libleveldb.a
