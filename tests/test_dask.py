"""Collection on a real Dask distributed cluster (two worker processes on loopback)."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from perf_selector.selector.onboarding.sample_history import make_sample_history
from perf_selector.storage.store import Store
from tests.helpers import comparable_tables, run_selector

pytestmark = pytest.mark.slow


def test_a_cluster_collects_the_same_store_as_local_processes(tmp_path):
    from distributed import LocalCluster

    root = tmp_path / "project"
    make_sample_history(root)
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                      dashboard_address=None, worker_dashboard_address=None) as cluster:
        address = cluster.scheduler_address
        assert address.startswith("tcp://127.0.0.1:")
        result = run_selector("collect", "--no-calibrate", "--repo", str(root), "--store", str(tmp_path / "cluster"),
                              "--scheduler", address, "--format", "json")
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)["summary"]
    local = run_selector("collect", "--no-calibrate", "--repo", str(root), "--store", str(tmp_path / "local"), "--format", "json")
    assert local.returncode == 0, local.stderr
    assert summary["built"] == json.loads(local.stdout)["summary"]["built"] > 0
    # Two workers build in two worktree slots, one local job in one: same code, other debug paths.
    on_cluster, on_local = (comparable_tables(Store(tmp_path / name), same_slots=False) for name in ("cluster", "local"))
    for table in on_cluster:
        pd.testing.assert_frame_equal(on_cluster[table], on_local[table], check_like=True)
    for table in ("measurements", "profiles", "labels"):
        assert len(Store(tmp_path / "cluster").read(table)) == len(Store(tmp_path / "local").read(table)) > 0


def test_an_unreachable_scheduler_is_one_clear_line(tmp_path):
    root = tmp_path / "project"
    make_sample_history(root, benchmarks=False)
    result = run_selector("collect", "--repo", str(root), "-n", "1", "--scheduler", "tcp://127.0.0.1:9")
    assert result.returncode == 2 and "cannot reach the Dask scheduler at tcp://127.0.0.1:9" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
