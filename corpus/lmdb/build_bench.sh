#!/bin/sh
# Builds corpus/lmdb's driver at libraries/liblmdb/bench in the checkout it runs in, the
# same way at every commit of the range: mdb.c and midl.c with the Makefile's flags
# (-pthread -O2 -g), and bench.c from the suite (its directory is this script's), one
# file per compiler call, two at a time.  The library's tools and tests are not built.
set -eu
export LC_ALL=C
here=$(cd "$(dirname "$0")" && pwd)
cd libraries/liblmdb
rm -f bench bench-obj-*.o
export here
printf '%s\n' mdb.c midl.c "$here/bench.c" \
    | xargs -P 2 -I SOURCE sh -c 'gcc -pthread -O2 -g -I. -c SOURCE -o bench-obj-$(basename SOURCE .c).o'
gcc -pthread -g -o bench bench-obj-bench.o bench-obj-mdb.o bench-obj-midl.o
