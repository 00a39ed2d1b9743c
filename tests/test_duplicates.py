"""No code written twice: the `duplicates` command (the project's tool library; on this
machine's PATH) over the whole tree finds no pair of places sharing six or more lines,
but for the pairs below, each kept for the reason given.  Skipped where the command is
not installed, unless SELECTOR_REQUIRE_DUPLICATES=1 (.ci/run sets it when it finds it)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
ROW = re.compile(r"^D\d+ (\S+):\d+-\d+ ~ (\S+):\d+-\d+")

ACCEPTED = {
    frozenset({"features/catalogue.py"}): "one documented function per feature is the catalogue's contract "
                                          "(docs/features.md is written from them); sibling features read alike",
    frozenset({"corpus/libdeflate/make_suite.sh", "corpus/zlib/make_suite.sh"}): "the corpus recipes' shell preambles: "
        "each recipe stands alone, so anyone can rebuild one suite without the others",
    frozenset({"corpus/yyjson/bench.c"}): "benchmark drivers: changing them changes what the collected stores measured",
    frozenset({"corpus/cjson/bench.c", "corpus/yyjson/bench.c"}): "benchmark drivers (as above)",
    frozenset({"corpus/mbedtls/bench.c"}): "benchmark drivers (as above): one fixed-round loop per primitive",
    frozenset({"storage/schema.py"}): "the store's schemas are declarations, a Column(name, type, meaning) a "
                                             "line: tables with like columns read alike",
    frozenset({"tests/helpers/loop_program.py", "tests/helpers/scripted_history.py"}): "two programs' configurations: "
        "a [[benchmark]] table each, which read alike",
}
# A corpus project's folder stands alone (anyone rebuilds one suite without the others), and its
# driver fixes what its store measured: recipes' scripts, drivers and inputs may read like each other's.
CORPUS_RECIPE = re.compile(r"^corpus/[^/]+/.")  # a project's folder: its recipe, scripts, drivers, inputs


def accepted(pair: frozenset) -> bool:
    return pair in ACCEPTED or all(CORPUS_RECIPE.match(path) for path in pair)


def test_no_code_is_written_twice():
    if shutil.which("duplicates") is None:
        if os.environ.get("SELECTOR_REQUIRE_DUPLICATES") == "1":
            pytest.fail("SELECTOR_REQUIRE_DUPLICATES=1 but the duplicates command is not on PATH")
        pytest.skip("the duplicates command (the project's tool library) is not installed here")
    output = subprocess.run(["duplicates", "--repo", str(ROOT), "--most", "200", "--seconds", "120"], cwd=ROOT,
                            capture_output=True, text=True, check=True).stdout
    assert "incomplete:" not in output, output
    pairs = [frozenset(ROW.match(line).groups()) for line in output.splitlines() if ROW.match(line)]
    assert [sorted(pair) for pair in pairs if not accepted(pair)] == [], output
