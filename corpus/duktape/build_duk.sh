#!/bin/sh
# Builds Duktape's command-line program at build/duk in the checkout it runs in, the same
# way at every commit of the range: util/make_dist.sh (the Python 2 tools of the time
# generate the built-ins, the Unicode tables and the combined dist/src/duktape.c; the
# init JavaScript is left unminified, --minify none, so no Java or closure compiler is
# needed), then gcc -std=c99 -O2 -g on dist/src/duktape.c and the dist's
# examples/cmdline/duk_cmdline.c, with no DUK_OPT_* feature option (the defaults a user
# of the dist gets) and without readline (no benchmark reads standard input).
# make_dist.sh ends with a line count by cloc-1.60.pl (a download of the repository's
# Makefile, absent here) and an SPDX file: it fails there, after duktape.c is written, so
# a build goes on when combine_src.py wrote duktape.c (make_dist.sh stops at the first
# failing step, and echoes "CLOC report on combined duktape.c" only after that one).
# Python 2: DUK_PYTHON2 if set, else python2 or python2.7 if they run, else pyenv's 2.7.
set -eu
export LC_ALL=C
py2=
for candidate in "${DUK_PYTHON2:-}" python2 python2.7 "${PYENV_ROOT:-$HOME/.pyenv}"/versions/2.7*/bin/python2.7; do
    [ -n "$candidate" ] || continue
    if "$candidate" -c 'import sys; sys.exit(sys.version_info[0] != 2)' >/dev/null 2>&1; then
        py2=$(command -v "$candidate")
        break
    fi
done
if [ -z "$py2" ]; then
    echo "build_duk.sh: no working Python 2 (util/make_dist.sh needs one; set DUK_PYTHON2)" >&2
    exit 2
fi
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
ln -s "$py2" "$bin/python"    # make_dist.sh runs `python`
rm -rf dist build
mkdir -p build
PATH="$bin:$PATH" sh util/make_dist.sh --minify none >build/make_dist.log 2>&1 || true
if [ ! -s dist/src/duktape.c ] || ! grep -q "^CLOC report on combined duktape.c" build/make_dist.log; then
    cat build/make_dist.log >&2
    echo "build_duk.sh: util/make_dist.sh did not write dist/src/duktape.c" >&2
    exit 1
fi
gcc -std=c99 -O2 -g -Idist/src -o build/duk dist/src/duktape.c dist/examples/cmdline/duk_cmdline.c -lm
