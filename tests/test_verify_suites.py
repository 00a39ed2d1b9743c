"""`--run-benchmarks` on a suite: the selected members (stored as "<suite>/<name>") are listed
from the commit's build and run alone, as collect runs them, and compared with the ancestor's
stored runs, with real values; what cannot be compared says why.  A command suite on a
db_bench-like driver built with gcc, in a temporary git repository, by hand and through the
pre-push hook."""

from __future__ import annotations

import json
import subprocess

import jsonschema
import pytest

from perf_selector.selector.onboarding.sample_history import commit_all
from tests.helpers import new_project, program_text, run_selector
from tests.helpers.schema import SCHEMA

CONFIG = """
[project]
binary = "prog"

[build]
command = "gcc -O2 -g -o prog prog.c"
timeout = 60

[profile]
tool = "callgrind"

[select]
policy = "rule"

[[suite]]
name = "db"
framework = "command"
command = "{binary} --benchmarks=fill,{name}"
metric = "instructions"
names = ["sum", {name = "scan", isolate = "scan_table"}]
isolate = "run_{name}"
repetitions = 2
warmup = 0
"""
SCAN = "found += table[i] > 500;"
SCAN_MORE = "found += (table[i] > 500) + (table[i] > 250) + (table[i] > 750);"  # scan's own work grows


def git(root, *arguments: str) -> str:
    return subprocess.run(["git", *arguments], cwd=root, check=True, capture_output=True, text=True).stdout.strip()


@pytest.fixture
def suite_project(tmp_path):
    """The driver collected at its first commit; a second commit changes scan's own code."""
    root = new_project(tmp_path / "project", CONFIG)
    source = program_text("suite_driver.c")
    assert SCAN in source
    (root / "prog.c").write_text(source)
    first = commit_all(root, "the driver")
    collected = run_selector("collect", "--repo", str(root), "--format", "json")
    assert collected.returncode == 0, collected.stderr
    (root / "prog.c").write_text(source.replace(SCAN, SCAN_MORE))
    second = commit_all(root, "scan counts three thresholds")
    return root, first, second


def test_run_benchmarks_runs_the_selected_suite_members_and_compares_them(suite_project):
    root, first, second = suite_project
    result = run_selector("select", second, "--repo", str(root), "--run-benchmarks", "--format", "json")
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    jsonschema.validate(document, SCHEMA)
    assert document["run"] == ["db/scan"], document  # sum's own code did not change
    [row] = document["compared"]
    assert row["benchmark"] == "db/scan" and first.startswith(row["against"]), row
    assert row["old"] > 20_000 and row["new"] > row["old"] * 1.2, row  # scan_table's own loop, measured on both sides
    assert row["effect"] == pytest.approx(row["new"] / row["old"] - 1)
    assert row["changed"] is True and row["regression"] is True and row["note"] == "", row

    text = run_selector("select", second, "--repo", str(root), "--run-benchmarks")
    assert text.returncode == 0, text.stderr
    table = text.stdout.split("the selected benchmarks against the ancestor")[1]
    assert "db/scan" in table and "True" in table and "nan" not in table and "None" not in table, text.stdout
    assert "regression: db/scan" in text.stdout


def test_a_suite_member_that_cannot_be_compared_says_why(suite_project):
    """With no calibration and no ancestor (a store of its own), every member runs: each row has
    its new value and the reason it has nothing to compare with, not nan."""
    root, first, second = suite_project
    (root / "empty-store").mkdir()
    result = run_selector("select", second, "--repo", str(root), "--store", str(root / "empty-store"), "--run-benchmarks",
                          "--format", "json")
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    jsonschema.validate(document, SCHEMA)
    rows = {row["benchmark"]: row for row in document["compared"]}
    assert set(rows) == {"db/sum", "db/scan"}, document
    for row in rows.values():
        assert row["new"] > 20_000 and row["old"] is None and row["changed"] is None, row
        assert row["note"].startswith("nothing to compare with: no ancestor"), row


def test_the_hook_with_run_benchmarks_compares_a_suites_members(suite_project, tmp_path):
    root, first, second = suite_project
    git(tmp_path, "init", "-q", "--bare", str(tmp_path / "remote.git"))
    git(root, "remote", "add", "origin", str(tmp_path / "remote.git"))
    installed = run_selector("hook", "install", "--repo", str(root), "--run-benchmarks")
    assert installed.returncode == 0, installed.stderr
    push = subprocess.run(["git", "push", "-q", "origin", "main"], cwd=root, capture_output=True, text=True)
    output = push.stdout + push.stderr
    assert push.returncode == 0, output
    table = output.split("the selected benchmarks against the ancestor")[1]
    scan = next(line for line in table.splitlines() if "db/scan" in line)
    assert first[:10] in scan and "True" in scan and "nan" not in table and "None" not in table, output
    assert "regression: db/scan" in output
