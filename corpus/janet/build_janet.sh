#!/bin/sh
# Builds Janet's interpreter at build/janet in the checkout it runs in, by the Makefile's
# own rules (build/janet_boot at -O0 from src/core and src/boot, which runs boot.janet to
# write the amalgamation build/c/janet.c with the boot image in it; then janet.c and
# shell.c at the Makefile's CFLAGS, -O2 -g), two jobs.  JANET_BUILD, which the Makefile
# takes from `git log` (the commit's short hash, compiled into the binary as a string),
# is fixed to "corpus", so two commits whose code and image are the same build the same
# binary.
set -eu
export LC_ALL=C
make -j2 build/janet JANET_BUILD='"\"corpus\""' CFLAGS='-O2 -g'
