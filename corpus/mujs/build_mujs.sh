#!/bin/sh
# Builds MuJS's shell at build/mujs in the checkout it runs in, the same way at every
# commit of the range: main.c and one.c (the committed file that #includes every source
# of the library) compiled by gcc with the Makefile's language flags (-std=c99) at -O2 -g,
# without readline (main.c has its own line reader when HAVE_READLINE is not defined; no
# benchmark reads standard input), two compiler calls at a time.
set -eu
export LC_ALL=C
rm -rf build
mkdir -p build
printf '%s\n' one.c main.c | xargs -P 2 -I SOURCE sh -c 'gcc -std=c99 -O2 -g -c SOURCE -o build/SOURCE.o'
gcc -g -o build/mujs build/main.c.o build/one.c.o -lm
