#!/usr/bin/env bash
# Makes Git's benchmark inputs in corpus/git/suite from three other C projects' histories
# (no Git content), so anyone can remake the same trees and objects:
#   tree/      the sources of zlib 1.3, lz4 1.9.4 and zstd 1.5.5 side by side (zlib/, lz4/,
#              zstd/: 1,047 files, 17 MB), as `git archive` gives them (every file's mtime is
#              its release commit's date, so no file is ever newer than an index: never racy);
#   empty.git/ the .git of a fresh repository (no templates, branch master), which `add`
#              and `commit` copy beside a copy of tree/;
#   zlib.git/  a bare repository of zlib's history up to 1.3 (master at 09155ea, "zlib 1.3",
#              and the 75 tags it contains, packed refs and one pack, no bitmap), which
#              `diff` reads (v1.2.11 to v1.3) and `clone` clones.
# The pack is written by this machine's git with one thread (its bytes follow that git's
# version); the runs read its objects, not its bytes.
# Usage: corpus/git/make_suite.sh [PATH-TO-GIT-CLONE]   (the clone is not read)
#   ZLIB_URL, LZ4_URL, ZSTD_URL: where to clone the three projects from (default GitHub).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
zlib_url=${ZLIB_URL:-https://github.com/madler/zlib}
lz4_url=${LZ4_URL:-https://github.com/lz4/lz4}
zstd_url=${ZSTD_URL:-https://github.com/facebook/zstd}
zlib_pin=09155eaa2f9270dc4ed1fa13e2b4b2613e6e4851     # zlib 1.3 (v1.3), 2023-08-18
lz4_pin=v1.9.4
zstd_pin=v1.5.5
# Neither the caller's nor the system's git configuration shapes what is made.
export GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null HOME=/nonexistent LC_ALL=C
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
rm -rf "$here/suite.new"
mkdir -p "$here/suite.new/tree"
for project in zlib lz4 zstd; do
    url_var=${project}_url pin_var=${project}_pin
    git clone -q --bare "${!url_var}" "$scratch/$project.git"
    git -C "$scratch/$project.git" archive --format=tar --prefix="$project/" "${!pin_var}" \
        | tar -x -C "$here/suite.new/tree"
done
git -c init.defaultBranch=master init -q --template= "$scratch/empty"
mv "$scratch/empty/.git" "$here/suite.new/empty.git"
zlib="$here/suite.new/zlib.git"
git -c init.defaultBranch=master init -q --bare --template= "$zlib"
git -C "$zlib" fetch -q --no-tags "$scratch/zlib.git" "+refs/tags/*:refs/tags/*"
git -C "$zlib" update-ref refs/heads/master "$zlib_pin"
git -C "$zlib" tag --no-merged master | xargs -r git -C "$zlib" tag -d >/dev/null
git -C "$zlib" -c pack.threads=1 -c repack.writeBitmaps=false repack -q -a -d -f
git -C "$zlib" prune --expire=now
git -C "$zlib" pack-refs --all
rm -f "$zlib/FETCH_HEAD"
rm -rf "$here/suite"
mv "$here/suite.new" "$here/suite"
