"""The same source built in two directories compares equal: `__FILE__` strings and assert
messages name the build's directory (absolute or relative), the code is the same.  Real
gcc -O2 -g output, both implementations of the analysis, through the real CLI."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from perf_selector.collectors import native_analysis
from perf_selector.collectors.address_resolver import without_source_directories
from tests.helpers import program_text, run_selector

SOURCE = program_text("source_paths.c")
IMPLEMENTATIONS = ["python"] + (["native"] if native_analysis.available() else [])


def _build(directory: Path, source: str, absolute: bool) -> Path:
    """gcc -O2 -g of `source` in `directory`, naming the source by its absolute or relative path."""
    directory.mkdir(parents=True)
    (directory / "prog.c").write_text(source)
    named = str(directory / "prog.c") if absolute else "prog.c"
    subprocess.run(["gcc", "-O2", "-g", "-o", "prog", named], cwd=directory, check=True, capture_output=True)
    return directory / "prog"


def _diff(old: Path, new: Path, implementation: str) -> dict:
    result = run_selector("diff", str(old), str(new), "--format", "json",
                          env={"SELECTOR_NATIVE": "1" if implementation == "native" else "0"})
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def _fingerprints(binary: Path, implementation: str) -> dict[str, str]:
    result = run_selector("functions", str(binary), "--format", "json",
                          env={"SELECTOR_NATIVE": "1" if implementation == "native" else "0"})
    assert result.returncode == 0, result.stderr
    rows = json.loads(result.stdout)
    rows = rows["functions"] if isinstance(rows, dict) else rows
    return {row["name"]: row["fingerprint"] for row in rows}


@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
def test_builds_in_two_directories_have_the_same_fingerprints_and_an_edit_still_shows(tmp_path, implementation):
    here = _build(tmp_path / "a", SOURCE, absolute=True)
    there = _build(tmp_path / "a much longer" / "directory" / "of the other build", SOURCE, absolute=False)
    assert str(tmp_path / "a" / "prog.c").encode() in here.read_bytes()  # the paths differ in the binaries
    assert str(tmp_path / "a" / "prog.c").encode() not in there.read_bytes()

    same = _diff(here, there, implementation)
    assert same["summary"]["changed_functions"] == 0 and same["functions"] == [], same
    assert same["summary"]["changed_objects"] == 0, same
    assert _fingerprints(here, implementation) == _fingerprints(there, implementation)

    edited = _build(tmp_path / "edited", SOURCE.replace("table[x] * 3 + 1", "table[x] * 5 + 1"), absolute=False)
    changed = _diff(here, edited, implementation)
    assert [row["name"] for row in changed["functions"] if row["status"] == "changed"] == ["checked"], changed


@pytest.mark.parametrize(("text", "expected"), [
    ("/home/me/project/src/x.c", "x.c"),
    ("../src/x.cc:12: %s", "x.cc:12: %s"),
    ("[src/lib/table.h] (see /usr/include/stdio.h:3)", "[table.h] (see stdio.h:3)"),
    ("x >= 0 && x < 64", "x >= 0 && x < 64"),
    ("a/b path/to/dir/ /x/.c /x/y.txt x.c", "a/b path/to/dir/ /x/.c /x/y.txt x.c"),
])
def test_a_source_file_s_path_in_a_literal_is_cut_to_its_name(text, expected):
    assert without_source_directories(text) == expected
