#!/bin/sh
# Builds build/bench in the Mbed TLS checkout it runs in, the same way at every commit of
# the range: the cryptography modules of library/ (every library/*.c but the TLS, X.509,
# PKCS#7, networking, debug, MPS and timing ones) compiled at -O2 -g with the default
# configuration and bench_config.h of this folder as MBEDTLS_USER_CONFIG_FILE (no AES-NI,
# AESCE or PadLock), gathered into build/libmbedcrypto.a, and bench.c of this folder
# linked with it.  No make or CMake: library/Makefile's list of objects changes with the
# history, and make would build the TLS and X.509 libraries and the programs too.  One
# file per compiler call, two at a time, so ccache answers the files a commit did not touch.
# The library's generated sources (error.c, version_features.c,
# psa_crypto_driver_wrappers*.h/.c: not committed on development) are made first by the
# project's own `make -C library generated_files` (perl, and python3 with jinja2 and
# jsonschema), after removing the untracked files of library/ that an earlier build left.
set -eu
export LC_ALL=C
here=$(cd "$(dirname "$0")" && pwd)
rm -rf build
mkdir -p build/obj
git clean -qfdx library
make -s -C library generated_files >/dev/null
flags="-O2 -g -Iinclude -Ilibrary -DMBEDTLS_USER_CONFIG_FILE=\"$here/bench_config.h\""
export flags
ls library/*.c | grep -v -E '^library/(ssl_|x509|pkcs7|net_sockets|debug|mps_|timing)' \
    | xargs -P 2 -I SOURCE sh -c 'gcc $flags -c SOURCE -o build/obj/$(basename SOURCE).o'
ar rcsD build/libmbedcrypto.a build/obj/*.o
gcc $flags -c "$here/bench.c" -o build/bench.o
gcc -g -o build/bench build/bench.o build/libmbedcrypto.a
