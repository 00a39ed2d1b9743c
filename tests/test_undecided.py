"""Labels a collection cannot decide say why and how to fix it, and follow a calibration
made afterwards without a new collection.  Real gcc, git and valgrind."""

from __future__ import annotations

import json
import subprocess

import pytest

from perf_selector.selector.onboarding.sample_history import commit_all, make_sample_history
from perf_selector.storage.store import Store
from tests.helpers import selector_command

pytestmark = pytest.mark.slow


def selector(*arguments: str) -> subprocess.CompletedProcess:
    return subprocess.run(selector_command(*arguments), capture_output=True, text=True)


def test_undecided_labels_say_why_and_calibrate_decides_them(tmp_path):
    root = tmp_path / "project"
    make_sample_history(root)
    config = root / "selector.toml"
    config.write_text(config.read_text().replace("repetitions = 3", "repetitions = 1"))  # as the README suggests for counts
    result = selector("collect", "--no-calibrate", "-n", "3", "--repo", str(root), "--format", "json")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert all(row["undecided"] == row["pairs"] == 2 for row in report["labels"])
    assert set(report["undecided"]) == {"checksum", "sort", "fib", "weights"}
    assert all("run selector calibrate" in why for why in report["undecided"].values())
    text = selector("collect", "--no-calibrate", "-n", "3", "--repo", str(root))
    assert "undecided labels of fib" in text.stderr and "selector calibrate" in text.stderr
    # ... and said before it starts, with what decides them
    assert text.stderr.index("labels of fib will be undecided: 1 run a side cannot reach alpha 0.05; set repetitions = 4 "
                             "or `selector calibrate`") < text.stderr.index("undecided labels of fib")
    untrained = selector("train", "--repo", str(root), "--no-tracking")  # nothing decided: no bundle "trained" on 0
    assert untrained.returncode == 2 and "none of its 8 labelled pairs is decided" in untrained.stderr, untrained.stderr
    assert not (root / ".selector" / "models").exists()

    # The newest commit does not build: calibration takes the newest stored one that did.
    (root / "src" / "kernels.c").write_text((root / "src" / "kernels.c").read_text() + "\nthis is not C;\n")
    broken = commit_all(root, "Break the build")
    calibrated = selector("calibrate", "--repo", str(root), "--rounds", "1", "--format", "json")
    assert calibrated.returncode == 0, calibrated.stderr
    head = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD~1"], capture_output=True, text=True).stdout.strip()
    assert {row["commit"] for row in json.loads(calibrated.stdout)} == {head} != {broken}
    labels = Store(root / ".selector").read("labels").to_pandas()
    assert len(labels) == 8 and labels["label"].notna().all() and labels["exact"].all()  # decided, no collect needed


def test_a_first_collection_calibrates_first_and_decides_its_labels(tmp_path):
    """The trap of a first collection: with one repetition of a count nothing is decided until
    calibration says the count is exact.  collect calibrates a store that has none, first."""
    root = tmp_path / "project"
    make_sample_history(root)
    config = root / "selector.toml"
    config.write_text(config.read_text().replace("repetitions = 3", "repetitions = 1"))
    result = selector("collect", "-n", "3", "--repo", str(root), "--format", "json")
    assert result.returncode == 0, result.stderr
    assert "the store has no calibration: calibrating on" in result.stderr
    assert "collected: 1/3 after" in result.stderr and "collected: 3/3 after" in result.stderr  # a log's progress
    report = json.loads(result.stdout)
    assert all(row["undecided"] == 0 and row["pairs"] == 2 for row in report["labels"]) and not report["undecided"]
    calibrated = Store(root / ".selector").read("calibration").to_pandas()
    assert sorted(calibrated["benchmark"]) == ["checksum", "fib", "sort", "weights"] and calibrated["exact"].all()
    again = selector("collect", "-n", "4", "--repo", str(root), "--format", "json")  # calibrated now: not again
    assert again.returncode == 0 and "calibrating" not in again.stderr


def test_two_runs_a_side_cannot_be_called_unchanged_by_the_test():
    from perf_selector.storage.labels import label_pair, smallest_p_value

    assert smallest_p_value(2, 2) == pytest.approx(1 / 3) and smallest_p_value(4, 4) < 0.05
    undecided = label_pair([100.0, 101.0], [150.0, 151.0], alpha=0.05, min_effect=0.01)
    assert undecided.label is None and "too few for the Mann-Whitney test" in undecided.reason
    decided = label_pair([100.0, 101.0, 100.5, 100.2, 99.9], [150.0, 151.0, 149.0, 150.5, 150.2], alpha=0.05, min_effect=0.01)
    assert decided.label is True
