"""Collection throughput on a Dask cluster: two workers against one, in one run.

Starts local clusters on loopback (one worker process, then two), collects the sample
history (gcc builds, callgrind benchmarks and profiles) into a fresh store each time,
and prints commits per minute and the speed-up.  Run: python benchmarks/dask_scaling.py
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

from distributed import LocalCluster

from perf_selector.collectors.repository import Repository
from perf_selector.selector.collection.collect import collect
from perf_selector.selector.config import load_config
from perf_selector.selector.onboarding.sample_history import make_sample_history
from perf_selector.storage.store import Store


def main() -> None:
    with tempfile.TemporaryDirectory() as directory:
        root = Path(directory) / "project"
        make_sample_history(root)
        config = load_config(root / "selector.toml")
        commits = Repository.open(root).commits("HEAD")
        rates = {}
        for workers in (1, 2):
            with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, host="127.0.0.1",
                              dashboard_address=None, worker_dashboard_address=None) as cluster:
                store = Store(Path(directory) / f"store-{workers}")
                started = time.perf_counter()
                summary = collect(root, config, store, commits, scheduler=cluster.scheduler_address)
                elapsed = time.perf_counter() - started
            assert summary.count("ok") == len(commits)
            rates[workers] = len(commits) / elapsed * 60
            print(f"{workers} worker{'s' if workers > 1 else ' '}  {elapsed:6.1f} s  {rates[workers]:5.1f} commits/min")
    print(f"speed-up with 2 workers: {rates[2] / rates[1]:.2f}x (2 cores on this machine)")


if __name__ == "__main__":
    main()
