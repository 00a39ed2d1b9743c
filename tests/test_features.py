"""Every feature of the catalogue, with its exact value on tuples of the scripted history."""

from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np
import pytest

from perf_selector.features.catalogue import ALLOCATORS, CATALOGUE, FEATURE_NAMES
from perf_selector.features.docs import render
from perf_selector.features.scaling import MaxAbsScaler, distance_weights
from perf_selector.features.tuples import ancestor_pairs, closest_tuples
from perf_selector.selector.evaluation.feature_table import feature_table
from perf_selector.storage.history import load_history
from perf_selector.selector.onboarding.sample_history import commit_all, make_sample_history
from perf_selector.storage.store import Store
from tests.helpers import run_selector

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def table(collected_sample):
    root, commits, _, _ = collected_sample
    store = Store(root / ".selector")
    frame = feature_table(store)
    kind_of = {c.sha: c.step.kind for c in commits}
    frame["kind"] = frame["new"].map(kind_of)
    return frame.set_index(["kind", "benchmark"]), store, {c.step.kind: c.sha for c in commits}


def value(table, kind: str, benchmark: str, name: str) -> float:
    return float(table[0].loc[(kind, benchmark), name])


def static(store: Store, sha: str):
    return store.read_one("functions", sha).to_pandas().set_index("name")


def test_hot_change_ranks_the_changed_function_for_the_benchmark_that_reaches_it(table):
    frame, store, sha = table
    old, new = static(store, sha["neutral"]), static(store, sha["hot"])
    delta = abs(new.loc["checksum", "instructions"] - old.loc["checksum", "instructions"])
    length = 100.0 * delta / old.loc["checksum", "instructions"]
    expected_reached = {"checksum": 100.0, "sort": 0.0, "fib": 0.0, "weights": 0.0}
    for benchmark, rank in expected_reached.items():
        assert value(table, "hot", benchmark, "top_changed_rank_by_instructions") == rank
        assert value(table, "hot", benchmark, "top_changed_rank_by_calls") == rank
        assert value(table, "hot", benchmark, "top_changed_rank_by_calls_big_change") == (rank if length >= 10 else 0.0)
        assert value(table, "hot", benchmark, "relevance_by_calls") == rank
        assert value(table, "hot", benchmark, "relevance_by_instructions") == rank
        assert value(table, "hot", benchmark, "changed_in_top_calls") == (1.0 if rank else 0.0)
        assert value(table, "hot", benchmark, "changed_in_top_instructions") == (1.0 if rank else 0.0)
        assert value(table, "hot", benchmark, "reached_instruction_difference") == (delta if rank else 0.0)
        assert value(table, "hot", benchmark, "top_reached_function_length_change") == pytest.approx(length if rank else 0.0)
        assert value(table, "hot", benchmark, "changed_functions") == 1.0
        assert value(table, "hot", benchmark, "instruction_difference") == delta
        assert value(table, "hot", benchmark, "top_function_length_change") == pytest.approx(length)
    profile = store.read_one("profiles", sha["neutral"]).to_pandas()
    profile = profile[(profile["benchmark"] == "checksum") & profile["in_binary"]].set_index("function")
    share = profile.loc["checksum", "inclusive_instructions"] / profile["inclusive_instructions"].max()
    assert value(table, "hot", "checksum", "changed_inclusive_share") == pytest.approx(share)
    assert value(table, "hot", "sort", "changed_inclusive_share") == 0.0


def test_added_and_deleted_functions(table):
    frame, store, sha = table
    assert value(table, "add-top", "fib", "new_functions") == 1.0
    assert value(table, "add-top", "fib", "instruction_difference") == static(store, sha["add-top"]).loc["clamp_value", "instructions"]
    assert value(table, "add-top", "fib", "changed_functions") == 0.0
    assert value(table, "delete", "fib", "deleted_functions") == 1.0
    assert value(table, "delete", "fib", "reached_functions_deleted") == 0.0  # legacy_scale never ran
    # report_result printed the results of fib and weights only
    for benchmark, reached in {"fib": 1.0, "weights": 1.0, "checksum": 0.0, "sort": 0.0}.items():
        assert value(table, "delete-reached", benchmark, "reached_functions_deleted") == reached
        assert value(table, "delete-reached", benchmark, "deleted_in_top_calls") == reached
        assert value(table, "delete-reached", benchmark, "deleted_in_top_instructions") == reached


def test_data_only_change_is_caught_by_the_data_feature_and_nothing_that_reads_code(table):
    code_features = [f.name for f in CATALOGUE if f.source != "extension"] + ["changed_inclusive_share"]
    for benchmark in ("checksum", "sort", "fib", "weights"):
        assert all(value(table, "data", benchmark, name) == 0.0 for name in code_features)
        assert value(table, "data", benchmark, "changed_data_reached") == (1.0 if benchmark == "weights" else 0.0)


def test_build_distance_history_noise_and_allocation_features(table):
    frame, store, sha = table
    assert all(value(table, "flags", b, "build_config_changed") == 1.0 for b in ("checksum", "fib"))
    assert value(table, "hot", "fib", "build_config_changed") == 0.0
    assert value(table, "hot", "fib", "commit_hops") == 1.0
    assert value(table, "hot", "fib", "commit_days") == pytest.approx(1 / 24)  # the sample commits are an hour apart
    # labels of checksum known when the cold commit is predicted: neutral (no change), hot (change)
    assert value(table, "cold", "checksum", "benchmark_recent_change_rate") == 0.5
    assert value(table, "neutral", "checksum", "benchmark_recent_change_rate") == 0.0
    assert value(table, "hot", "checksum", "benchmark_noise") == 0.0  # callgrind counts: exact
    assert value(table, "alloc", "sort", "changed_calls_allocator") == 1.0
    assert value(table, "hot", "sort", "changed_calls_allocator") == 0.0
    profile = store.read_one("profiles", sha["delete-reached"]).to_pandas()
    allocations = profile[(profile["benchmark"] == "sort") & profile["function"].isin(ALLOCATORS)]
    assert value(table, "alloc", "sort", "allocator_calls") == float(allocations["calls"].sum())
    assert set(allocations["function"]) >= {"malloc", "mmap"}  # stdio's buffer, the loader's mappings


def test_labels_sit_beside_the_features_and_the_docs_are_current(table):
    frame, _, _ = table
    assert bool(frame.loc[("hot", "checksum"), "label"]) and not bool(frame.loc[("hot", "sort"), "label"])
    assert set(FEATURE_NAMES) <= set(frame.columns)
    assert (Path(__file__).resolve().parent.parent / "docs" / "features.md").read_text() == render()
    assert all(f.definition and f.rationale and f.source for f in CATALOGUE)


def test_features_command_writes_parquet_and_csv(collected_sample, tmp_path):
    root, commits, _, _ = collected_sample
    for name in ("tuples.parquet", "tuples.csv"):
        result = run_selector("features", "--store", str(root / ".selector"), "--output", str(tmp_path / name), "--format", "json")
        assert result.returncode == 0, result.stderr
    import json
    import pandas as pd

    summary = json.loads(result.stdout)
    assert summary["tuples"] == 4 * (len(commits) - 1)
    assert "relevance_by_cycles" in summary["constant_features"]  # callgrind profiles have no cycles
    parquet, csv = pd.read_parquet(tmp_path / "tuples.parquet"), pd.read_csv(tmp_path / "tuples.csv")
    assert list(parquet.columns[:3]) == ["new", "old", "benchmark"] and len(parquet) == len(csv)
    missing = run_selector("features", "--store", str(tmp_path / "empty"), "--output", str(tmp_path / "x.csv"))
    assert missing.returncode == 2 and "no store here" in missing.stderr
    (tmp_path / "empty").mkdir()
    empty = run_selector("features", "--store", str(tmp_path / "empty"), "--output", str(tmp_path / "x.csv"))
    assert empty.returncode == 2 and "no commits" in empty.stderr
    # Without --store, the repository's store, from anywhere inside it.
    inside = run_selector("features", "--output", str(tmp_path / "again.parquet"), "--format", "json", cwd=root / "src")
    assert inside.returncode == 0 and json.loads(inside.stdout)["tuples"] == summary["tuples"]


def test_scaling_keeps_zeros_and_weights_favour_close_pairs(table):
    frame, _, _ = table
    scaled = MaxAbsScaler().fit_transform(frame[FEATURE_NAMES].to_numpy())
    assert np.abs(scaled).max() <= 1.0 and ((frame[FEATURE_NAMES].to_numpy() == 0) == (scaled == 0)).all()
    assert list(distance_weights([1, 2, 4])) == [1.0, 0.5, 0.25]
    with pytest.raises(ValueError):
        distance_weights([0])


def test_closest_ancestor_through_merges_and_failed_builds(tmp_path):
    """X builds; F1 and F2 break the build; H (child of F2) fixes it: its c_o is X, 3 hops.
    M merges side branch S into F2 and fixes the build: its first parent failed, so c_o is S."""
    root = tmp_path / "project"
    commits = make_sample_history(root, benchmarks=False)
    config = root / "selector.toml"
    config.write_text(config.read_text() + '\n[[benchmark]]\nname = "fib"\ncommand = "{binary} fib 5"\n'
                      'metric = "instructions"\nrepetitions = 1\nwarmup = 0\n')
    git = lambda *a: subprocess.run(["git", *a], cwd=root, check=True, capture_output=True, text=True).stdout.strip()
    git("add", "-A")
    x = commit_all(root, "X: add a benchmark")
    kernels = root / "src" / "kernels.c"
    clean = kernels.read_text()
    kernels.write_text(clean + "\nbroken code;\n")
    commit_all(root, "F1: break the build")
    kernels.write_text(clean + "\nbroken code;\nmore;\n")
    f2 = commit_all(root, "F2: still broken")
    git("checkout", "-q", "-b", "side", x)
    (root / "NOTES").write_text("side\n")
    s = commit_all(root, "S: side branch")
    git("checkout", "-q", "-b", "fix", f2)
    kernels.write_text(clean)
    h = commit_all(root, "H: fix the build")
    git("checkout", "-q", "main")
    git("-c", "user.name=a", "-c", "user.email=a@b", "merge", "-q", "--no-ff", "--no-commit", "side")
    kernels.write_text(clean)
    m = commit_all(root, "M: merge side, fixing the build")
    for branch in ("side", "fix"):
        result = run_selector("collect", "--no-calibrate", branch, "--repo", str(root), "--format", "json")
        assert result.returncode == 0, result.stderr
    result = run_selector("collect", "--no-calibrate", "--repo", str(root), "--format", "json")
    assert result.returncode == 0, result.stderr
    history = load_history(Store(root / ".selector"))
    tuples = closest_tuples(history, ["fib"]).set_index("new")
    assert (tuples.loc[h, "old"], tuples.loc[h, "hops"]) == (x, 3)
    assert (tuples.loc[m, "old"], tuples.loc[m, "hops"]) == (s, 1)
    assert f2 not in tuples.index  # a failed build has no tuple of its own
    pairs = ancestor_pairs(history, ["fib"])
    assert {(n, o) for n, o in zip(pairs["new"], pairs["old"])} >= {(h, x), (m, s), (m, x), (m, commits[0].sha)}


def test_cycle_features_from_a_perf_profile(tmp_path):
    """With perf as the profiler, "cycles" are samples: the hot commit's changed checksum()
    is the hottest function of the checksum benchmark."""
    root = tmp_path / "project"
    commits = make_sample_history(root, benchmarks=False)
    config = root / "perf.toml"
    config.write_text(config.parent.joinpath("selector.toml").read_text().replace('tool = "callgrind"', 'tool = "perf"')
                      + '\n[[benchmark]]\nname = "checksum"\ncommand = "{binary} checksum 3000"\nrepetitions = 2\nwarmup = 0\n')
    hot = next(c.sha for c in commits if c.step.kind == "hot")
    result = run_selector("collect", "--no-calibrate", hot, "-n", "2", "--repo", str(root), "--config", str(config), "--format", "json")
    assert result.returncode == 0, result.stderr
    store = Store(root / ".selector")
    assert set(store.read("profiles").to_pandas()["profiler"]) == {"perf"}
    row = feature_table(store).set_index("new").loc[hot]
    assert row["top_changed_rank_by_counter"] == 100.0
    assert row["relevance_by_cycles"] == 100.0
    assert row["changed_in_top_cycles"] == 1.0
    assert row["deleted_in_top_cycles"] == 0.0
    assert row["relevance_by_calls"] == 0.0  # perf counts no calls
    # block level from samples: checksum's changed blocks took samples, a share of the run's samples
    assert set(store.read("profiles").to_pandas()["count_kind"]) == {"samples"}
    assert 0 < row["executed_changed_share"] < 1
    from perf_selector.models.registry import MODELS  # the executed-changed baseline runs the benchmark (a rule: fit learns nothing)
    rows = row[FEATURE_NAMES].to_frame().T.astype(float)
    rows.loc["unchanged"] = 0.0
    assert MODELS["executed-changed"].build(0).fit(rows, [True, False]).predict(rows).tolist() == [True, False]


def test_ties_among_the_hottest_functions_do_not_depend_on_which_commits_are_loaded():
    """Training builds features from every stored commit, `select` from a few: a tie at the
    TOP_N boundary must be broken the same way in both (by name), or the model sees
    other features than it was trained on."""
    import pandas as pd
    import pyarrow as pa

    from perf_selector.features.builder import FeatureBuilder
    from perf_selector.features.catalogue import TOP_N
    from perf_selector.storage.history import History

    def arrow(frame: pd.DataFrame) -> pa.Table:
        times = [column for column in frame.columns if isinstance(frame[column].dtype, pd.DatetimeTZDtype)]
        # times as Arrow timestamps directly: pyarrow reads a tz-aware pandas column through a deprecated path
        table = pa.Table.from_pandas(frame.drop(columns=times), preserve_index=False)
        for column in times:
            table = table.append_column(column, pa.array(frame[column].dt.to_pydatetime(), pa.timestamp("us", tz="UTC")))
        return table

    names = [f"f{i:02d}" for i in range(TOP_N + 2)]  # all tied: the top TOP_N are f00..f09 by name

    def functions(commit: str, order: list[str], changed: str | None = None) -> pd.DataFrame:
        return pd.DataFrame({"commit": commit, "name": order, "fingerprint": [n + ("*" if n == changed else "") for n in order],
                             "instructions": 10, "callees": [[] for _ in order], "data_refs": [[] for _ in order]})

    day = pd.Timestamp("2024-01-01", tz="UTC")
    commits = pd.DataFrame({"sha": ["other", "old", "new"], "parents": [[], ["other"], ["old"]],
                            "author_time": [day, day + pd.Timedelta(days=1), day + pd.Timedelta(days=2)],
                            "build_status": "ok", "build_config": "x", "toolchain": "cc"})
    # "other" lists the functions in another order, so numbering by first appearance would differ
    every = pd.concat([functions("other", names[::-1]), functions("old", names), functions("new", names, changed=names[-1])])
    profile = pd.DataFrame({"commit": "old", "benchmark": "b", "function": names, "in_binary": True, "calls": 5,
                            "self_instructions": 100, "inclusive_instructions": 100, "samples": 0})
    measurements = pd.DataFrame({"commit": "old", "benchmark": "b", "repetition": [0, 1], "status": "ok", "value": [1.0, 1.0]})
    tuples = pd.DataFrame({"new": ["new"], "old": ["old"], "benchmark": ["b"], "hops": [1]})

    def features(loaded: list[str]) -> pd.Series:
        history = History(commits=arrow(commits[commits["sha"].isin(loaded)]), functions=arrow(every[every["commit"].isin(loaded)]),
                          objects=arrow(pd.DataFrame({"commit": [], "name": [], "fingerprint": []})), profiles=arrow(profile),
                          measurements=arrow(measurements))
        return FeatureBuilder(history).table(tuples).iloc[0]

    everything, pair_only = features(["other", "old", "new"]), features(["old", "new"])
    assert everything["changed_in_top_calls"] == pair_only["changed_in_top_calls"] == 0.0  # f11 is 12th by name
    assert everything[FEATURE_NAMES].equals(pair_only[FEATURE_NAMES])
