#!/bin/sh
# Builds Snappy's Google Benchmark program at build/snappy_benchmark in the checkout it runs
# in, the same way at every commit of the range: the library (snappy.cc,
# snappy-sinksource.cc, snappy-stubs-internal.cc, snappy-c.cc) as a static archive, the
# benchmark support (snappy-test.cc, snappy_test_data.cc) and snappy_benchmark.cc, linked
# with Debian's Google Benchmark 1.7.1 (libbenchmark-dev: benchmark_main and benchmark)
# in place of the third_party/benchmark submodule, which a plain clone does not have; no
# CMake (its file adds the submodules as subdirectories).  config.h and
# snappy-stubs-public.h are made from their .in files as CMake makes them on Linux with
# gcc's default x86-64 target: the headers and builtins found, no SSSE3, BMI2 or CRC32
# code (CMake's checks compile without -mssse3, -mbmi2 or -msse4.2, so they fail), and
# no zlib, LZO or LZ4 comparisons (HAVE_LIBZ and the others 0).  -O2 -g -DNDEBUG (CMake's
# RelWithDebInfo), no exceptions and no RTTI as CMake's file asks, C++17 (CMake asks for
# C++11, which 766d24c's designated initializers broke until 4e693db; gcc accepts them
# in C++17); one file per compiler call, two at a time, so ccache answers the files a
# commit did not touch.
set -eu
export LC_ALL=C
rm -rf build
mkdir -p build/obj
ones=' HAVE_ATTRIBUTE_ALWAYS_INLINE HAVE_BUILTIN_CTZ HAVE_BUILTIN_EXPECT HAVE_BUILTIN_PREFETCH HAVE_FUNC_MMAP HAVE_FUNC_SYSCONF HAVE_SYS_MMAN_H HAVE_SYS_RESOURCE_H HAVE_SYS_TIME_H HAVE_SYS_UIO_H HAVE_UNISTD_H '
while IFS= read -r line; do
    case $line in
        '#cmakedefine01 '*)
            name=${line#'#cmakedefine01 '}; name=${name%% *}
            case $ones in *" $name "*) echo "#define $name 1" ;; *) echo "#define $name 0" ;; esac ;;
        '#cmakedefine '*)
            name=${line#'#cmakedefine '}; name=${name%% *}
            case $ones in *" $name "*) echo "#define $name 1" ;; *) echo "/* #undef $name */" ;; esac ;;
        *) printf '%s\n' "$line" ;;
    esac
done < cmake/config.h.in > build/config.h
version=$(sed -n 's/^project(Snappy VERSION \([0-9.]*\).*/\1/p' CMakeLists.txt)
major=${version%%.*}; rest=${version#*.}; minor=${rest%%.*}; patch=${rest#*.}
sed -e 's/\${HAVE_SYS_UIO_H_01}/1/g' -e "s/\${PROJECT_VERSION_MAJOR}/$major/" \
    -e "s/\${PROJECT_VERSION_MINOR}/$minor/" -e "s/\${PROJECT_VERSION_PATCH}/$patch/" \
    snappy-stubs-public.h.in > build/snappy-stubs-public.h
flags="-std=c++17 -O2 -g -DNDEBUG -fno-exceptions -fno-rtti -DHAVE_CONFIG_H -Ibuild -I."
export flags
printf '%s\n' snappy.cc snappy-sinksource.cc snappy-stubs-internal.cc snappy-c.cc snappy-test.cc \
        snappy_test_data.cc snappy_benchmark.cc \
    | xargs -P 2 -I SOURCE sh -c 'g++ $flags -c SOURCE -o build/obj/SOURCE.o'
ar rcsD build/libsnappy.a build/obj/snappy.cc.o build/obj/snappy-sinksource.cc.o \
    build/obj/snappy-stubs-internal.cc.o build/obj/snappy-c.cc.o
g++ -O2 -g -pthread -o build/snappy_benchmark build/obj/snappy_benchmark.cc.o build/obj/snappy-test.cc.o \
    build/obj/snappy_test_data.cc.o build/libsnappy.a -lbenchmark_main -lbenchmark
