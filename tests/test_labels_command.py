"""`selector labels` on a real collected history: the store's labels as a table, JSON or CSV,
filtered by commit, benchmark and state."""

from __future__ import annotations

import csv
import io
import json

import pytest

from perf_selector.storage.store import Store
from tests.helpers import run_selector


@pytest.mark.slow
def test_labels_lists_filters_and_exports_the_stores_labels(evolved_sample):
    root, _ = evolved_sample
    stored = Store(root / ".selector", create=False).read("labels").to_pylist()
    every = json.loads(run_selector("labels", "--repo", str(root), "--format", "json").stdout)
    assert len(every) == len(stored) > 10
    assert {row["label"] for row in every} <= {"changed", "unchanged", "undecided"}
    changed = json.loads(run_selector("labels", "--repo", str(root), "--state", "changed", "--format", "json").stdout)
    assert len(changed) == sum(row["label"] is True for row in stored) > 0
    assert all(row["label"] == "changed" and abs(row["effect"]) >= 0.01 and row["decided_by"] for row in changed)
    first = changed[0]
    one = json.loads(run_selector("labels", "--repo", str(root), "--commit", first["new"][:8], "--benchmark",
                                  first["benchmark"], "--format", "json").stdout)
    assert one and all(row["new"] == first["new"] and row["benchmark"] == first["benchmark"] for row in one)
    table = list(csv.DictReader(io.StringIO(run_selector("labels", "--repo", str(root), "--format", "csv").stdout)))
    assert len(table) == len(stored) and {"new", "old", "benchmark", "effect", "label", "reason"} <= set(table[0])
    text = run_selector("labels", "--repo", str(root), "--state", "changed")
    assert text.returncode == 0 and f"{len(changed)} changed" in text.stdout


def test_labels_of_a_missing_store_is_one_line(tmp_path):
    result = run_selector("labels", "--repo", str(tmp_path), "--store", str(tmp_path / "nowhere"))
    assert result.returncode == 2 and "Traceback" not in result.stderr
