#!/usr/bin/env bash
# Makes libjpeg-turbo's benchmark inputs in corpus/libjpeg-turbo/suite from the repository
# itself, so anyone can remake the same bytes: the test image testimages/testorig.ppm of
# tag 3.1.0 (227 x 149) tiled 4 x 4 (908 x 596), compressed by that tag's cjpeg (C code,
# no SIMD) four ways: baseline at quality 90, progressive, arithmetic-coded, 4:4:4.
# Usage: corpus/libjpeg-turbo/make_suite.sh PATH-TO-LIBJPEG-TURBO-CLONE
set -euo pipefail
repo=$(cd "$1" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$here/suite"
build=$(mktemp -d)
git -C "$repo" show 3.1.0:testimages/testorig.ppm > "$build/testorig.ppm"
python3 - "$build/testorig.ppm" "$build/tiled.ppm" <<'PY'
import sys
data = open(sys.argv[1], "rb").read()
fields, position = [], 0
while len(fields) < 4:  # P6, width, height, maxval (no comments in this file)
    while data[position:position + 1].isspace():
        position += 1
    end = position
    while not data[end:end + 1].isspace():
        end += 1
    fields.append(data[position:end])
    position = end
pixels = data[position + 1:]
width, height = int(fields[1]), int(fields[2])
rows = [pixels[3 * width * y:3 * width * (y + 1)] for y in range(height)]
tiled = b"".join(row * 4 for _ in range(4) for row in rows)
open(sys.argv[2], "wb").write(b"P6\n%d %d\n255\n" % (4 * width, 4 * height) + tiled)
PY
git -C "$repo" worktree add -q --detach "$build/src" 3.1.0
cmake -S "$build/src" -B "$build/out" -DWITH_SIMD=0 -DENABLE_SHARED=0 -DWITH_TURBOJPEG=0 -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$build/out" --target cjpeg-static -j2 >/dev/null
cjpeg="$build/out/cjpeg-static"
"$cjpeg" -quality 90 -outfile "$here/suite/baseline.jpg" "$build/tiled.ppm"
"$cjpeg" -quality 90 -progressive -outfile "$here/suite/progressive.jpg" "$build/tiled.ppm"
"$cjpeg" -quality 90 -arithmetic -outfile "$here/suite/arithmetic.jpg" "$build/tiled.ppm"
"$cjpeg" -quality 95 -sample 1x1 -outfile "$here/suite/444.jpg" "$build/tiled.ppm"
git -C "$repo" worktree remove --force "$build/src"
rm -rf "$build"
