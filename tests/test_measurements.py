"""The dynamic half end to end: calibrate, collect with benchmarks and profiles, labels."""

from __future__ import annotations

import json

import pytest

from perf_selector.selector.onboarding.sample_history import make_sample_history
from perf_selector.storage.store import Store
from tests.helpers import run_selector


def cli_json(*arguments: str) -> dict:
    result = run_selector(*arguments, "--format", "json")
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


@pytest.mark.slow
def test_labels_follow_the_planted_changes(collected_sample):
    root, commits, calibration, report = collected_sample
    assert {row["benchmark"]: row["exact"] for row in calibration} == {"checksum": True, "sort": True, "fib": True, "weights": True}
    assert report["summary"]["profiled"] == len(commits)
    store = Store(root / ".selector")
    labels = store.read("labels").to_pandas()
    by_kind = {commit.step.kind: commit.sha for commit in commits}

    def positives(kind: str) -> set[str]:
        rows = labels[labels["new"] == by_kind[kind]]
        assert len(rows) == 4 and (rows["old"] != rows["new"]).all()
        return set(rows.loc[rows["label"] == True, "benchmark"])  # noqa: E712

    assert positives("hot") == {"checksum"}  # the benchmark that reaches checksum(), and only it
    assert positives("neutral") == set()  # a comment changes nothing, measured exactly
    assert positives("cold") == set()
    assert positives("data") == {"weights"}  # a .data-only change, caught by measurement
    hot = labels[(labels["new"] == by_kind["hot"]) & (labels["benchmark"] == "checksum")].iloc[0]
    assert hot["old"] == by_kind["neutral"] and hot["exact"] and hot["effect"] > 0.1 and hot["regression"]
    summary = {row["benchmark"]: row for row in report["labels"]}
    assert summary["checksum"]["positive"] >= 1 and summary["sort"]["pairs"] == len(commits) - 1

    profiles = store.read("profiles").to_pandas()
    hot_profile = profiles[(profiles["commit"] == by_kind["hot"]) & profiles["in_binary"]]
    top = hot_profile[hot_profile["benchmark"] == "checksum"].sort_values("self_instructions").iloc[-1]
    assert top["function"] == "checksum" and top["calls"] == 40 and top["profiler"] == "callgrind"
    measurements = store.read("measurements").to_pandas()
    assert {"cpu_model", "aslr", "load_1min", "run_order"} <= set(measurements.columns)
    assert (measurements.groupby(["commit", "benchmark"]).size() == 3).all()


def test_failing_benchmarks_are_recorded_and_nothing_is_lost(tmp_path):
    root = tmp_path / "project"
    commits = make_sample_history(root, benchmarks=False)
    config = root / "failing.toml"
    config.write_text((root / "selector.toml").read_text() + """
[[benchmark]]
name = "good"
command = "{binary} fib 10"
metric = "wall_time"
repetitions = 2
warmup = 0

[[benchmark]]
name = "crash"
command = "sh -c 'kill -SEGV $$'"
repetitions = 1
warmup = 0

[[benchmark]]
name = "hang"
command = "sleep 20"
repetitions = 1
timeout = 1
warmup = 0

[[benchmark]]
name = "silent"
command = "{binary} fib 5"
metric = "throughput=([0-9.]+)"
repetitions = 1
warmup = 0
""")
    arguments = ("collect", "--no-calibrate", "--repo", str(root), "--config", str(config), "-n", "2")
    first = cli_json(*arguments)
    assert first["summary"]["built"] == 2 and first["summary"]["failed_runs"] == 6
    store = Store(root / ".selector")
    row = store.read_one("commits", commits[-1].sha).to_pandas().iloc[0]
    assert "crash: killed by SIGSEGV" in row["run_failures"] and "hang: timed out after 1 s" in row["run_failures"]
    assert "silent: no match for /throughput=([0-9.]+)/" in row["run_failures"]
    # and a command lists them with their reasons (issue 48: the Parquet file was read by hand)
    listed = cli_json("collect", "--failures", "--repo", str(root), "--config", str(config))["failures"]
    assert {(f["commit"], f["what"]) for f in listed if f["what"] == "run"} == {(c.sha, "run") for c in commits[-2:]}
    assert any(f["reason"] == "crash: killed by SIGSEGV" for f in listed if f["commit"] == commits[-1].sha)
    measurements = store.read_one("measurements", commits[-1].sha).to_pandas()
    assert list(measurements.loc[measurements["benchmark"] == "good", "status"]) == ["ok", "ok"]
    labels = store.read_one("labels", commits[-1].sha).to_pandas().set_index("benchmark")
    assert set(labels.index) == {"good"}  # no label where a side has no successful run
    before = {table: store.read(table) for table in ("commits", "measurements", "profiles")}
    again = cli_json(*arguments)
    assert again["summary"]["already_stored"] == 2 and again["summary"]["built"] == 0
    for table, frame in before.items():
        assert store.read(table).equals(frame), table


def test_a_warm_up_is_told_by_its_column_and_in_older_stores_by_repetition():
    """measured_runs, the one rule for a run that counts: the warmup column decides; rows of
    stores written before the column (no column, or null where tables mix) fall back to
    repetition -1, as those stores wrote warm-ups."""
    import pandas as pd
    import pyarrow as pa

    from perf_selector.storage.history import measured_runs, not_warmups

    arrow = lambda frame: pa.Table.from_pandas(frame, preserve_index=False)  # noqa: E731
    older = pd.DataFrame({"repetition": [-1, 0, 1, 2], "status": ["ok", "ok", "failed", "ok"], "value": [9.0, 1.0, None, 2.0]})
    assert measured_runs(arrow(older))["value"].to_pylist() == [1.0, 2.0]
    assert not_warmups(arrow(older))["repetition"].to_pylist() == [0, 1, 2]
    newer = older.assign(warmup=[True, True, False, False])  # the column rules, whatever the repetition
    assert measured_runs(arrow(newer))["value"].to_pylist() == [2.0]
    mixed = older.assign(warmup=pd.array([None, None, False, True], dtype="boolean"))
    assert measured_runs(arrow(mixed))["value"].to_pylist() == [1.0]
