#!/usr/bin/env bash
# Makes corpus/berry/suite: the benchmark scripts of corpus/berry/scripts, written for
# this corpus (Berry of 2021-12, which every commit of the range runs; fixed iteration
# counts, a fixed LCG where a benchmark needs varied numbers, no clock, no random
# module; each prints a checksum).  Nothing is read from the clone.
# Usage: corpus/berry/make_suite.sh PATH-TO-BERRY-CLONE
set -euo pipefail
[ -d "${1:?usage: $0 PATH-TO-BERRY-CLONE}" ]
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$here/suite"
mkdir -p "$here/suite"
cp "$here"/scripts/*.be "$here/suite/"
