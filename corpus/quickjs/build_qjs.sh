#!/bin/sh
# Builds QuickJS's interpreter at build/qjs in the checkout it runs in, the same way at
# every commit of the range: the objects of the Makefile's QJS_OBJS (qjs.c and the
# library: quickjs.c, dtoa.c, libregexp.c, libunicode.c, cutils.c, quickjs-libc.c; the
# list is the same at every commit of the range) compiled with the Makefile's flags for
# Linux and gcc (-fwrapv -D_GNU_SOURCE -DCONFIG_VERSION from VERSION) at -O2 -g, no LTO,
# one file per compiler call, two at a time, so ccache answers the files a commit did
# not touch.  The Makefile builds qjsc first to compile repl.js into repl.c, the
# bytecode of the interactive shell; qjs loads it only when it runs interactively, which
# no benchmark does, so repl_stub.c (an empty qjsc_repl) stands in for it and qjsc is
# not built.  HAVE_CLOSEFROM (os.exec's fallback) is left undefined: no benchmark runs it.
set -eu
export LC_ALL=C
here=$(cd "$(dirname "$0")" && pwd)
rm -rf build
mkdir -p build/obj
flags="-O2 -g -fwrapv -D_GNU_SOURCE -DCONFIG_VERSION=\"$(cat VERSION)\" -I."
export flags
printf '%s\n' quickjs.c qjs.c dtoa.c libregexp.c libunicode.c cutils.c quickjs-libc.c "$here/repl_stub.c" \
    | xargs -P 2 -I SOURCE sh -c 'gcc $flags -c SOURCE -o build/obj/$(basename SOURCE).o'
gcc -g -rdynamic -o build/qjs build/obj/qjs.c.o build/obj/repl_stub.c.o build/obj/quickjs.c.o build/obj/dtoa.c.o \
    build/obj/libregexp.c.o build/obj/libunicode.c.o build/obj/cutils.c.o build/obj/quickjs-libc.c.o -lm -ldl -lpthread
