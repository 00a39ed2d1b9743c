"""Measurement bias (Mytkowicz et al., ASPLOS 2009): a program whose instruction count
depends on its stack's alignment.  Today's A/A (one context) calls it exact; calibration
that perturbs the environment's size and the paths' length does not, and a commit that
only moves its stack is not labelled a change, while a real change still is.  Real gcc,
git and valgrind through the real CLI."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from perf_selector.selector.onboarding.sample_history import commit_all
from perf_selector.storage.labels import label_pair
from perf_selector.storage.store import Store
from tests.helpers import run_selector
from tests.helpers.stack_alignment import CONFIG, PROGRAM

pytestmark = pytest.mark.slow

def write_program(root: Path, moved: int, rounds: int) -> None:
    (root / "prog.c").write_text(PROGRAM.replace("MOVED", str(moved)).replace("ROUNDS", str(rounds)))


def test_layout_only_changes_are_not_labelled_and_real_ones_are(tmp_path):
    root = tmp_path / "project"
    root.mkdir()
    subprocess.run(["git", "init", "-q", "-b", "main", str(root)], check=True)
    (root / "selector.toml").write_text(CONFIG)
    (root / ".gitignore").write_text("prog\n.selector/\n")
    write_program(root, moved=16, rounds=20000)
    first = commit_all(root, "strlen of a stack buffer")
    write_program(root, moved=64, rounds=20000)
    layout_only = commit_all(root, "a larger frame: the buffer moves")
    write_program(root, moved=64, rounds=24000)
    real = commit_all(root, "20% more work")

    calibrated = run_selector("calibrate", first, "--repo", str(root), "--rounds", "2", "--format", "json")
    assert calibrated.returncode == 0, calibrated.stderr
    (row,) = json.loads(calibrated.stdout)
    # One context: identical counts, so A/A alone would call it exact ...
    assert row["exact"] and row["tolerance"] == 0
    # ... but another environment size or path length moves the count by more than min_effect.
    assert row["layout_spread"] > 0.01, row["contexts"]
    assert row["spread"] == row["layout_spread"]

    collected = run_selector("collect", "-n", "3", "--repo", str(root), "--format", "json")
    assert collected.returncode == 0, collected.stderr
    labels = {row["new"]: row for row in Store(root / ".selector").read("labels").to_pylist()}
    moved = labels[layout_only]
    # The rule before contexts were perturbed (exact, no spread) called this a change.
    assert label_pair([moved["median_old"]], [moved["median_new"]], 0.05, 0.01, exact=True).label is True
    assert moved["label"] is None and "within the spread" in moved["reason"]
    assert moved["spread"] == pytest.approx(row["spread"])
    assert labels[real]["label"] is True and labels[real]["decided_by"] == "exact"
    assert labels[real]["effect"] > row["spread"]
