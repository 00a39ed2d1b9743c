"""Feature-building throughput on a synthetic store: tuples per second (target >= 2,000).

Generates a store of COMMITS commits x FUNCTIONS functions x BENCHMARKS benchmarks
directly (no builds): a linear history where each commit changes, adds and deletes a
few functions, with callgrind-shaped profiles and measurements.  Times loading the
store and building the feature table separately, in this one run.
Run: python benchmarks/features_speed.py [--commits 500 --functions 5000 --benchmarks 5]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from datetime import datetime, timedelta, timezone

import numpy as np
import pandas as pd

from _common import write_frame as write
from perf_selector.features.builder import build_feature_table
from perf_selector.features.tuples import closest_tuples
try:
    from perf_selector.storage.history import load_history
    from perf_selector.storage.store import Store
except ImportError:  # a checkout from before the store layer (benchmarks/side_by_side.py runs those too)
    from perf_selector.selector.evaluation.feature_table import load_history
    from perf_selector.selector.store import Store


def generate(store: Store, commits: int, functions: int, benchmarks: int, seed: int = 7) -> None:
    rng = np.random.default_rng(seed)
    names = np.array([f"function_{i}" for i in range(functions + commits * 4)], dtype=object)
    alive = np.arange(functions)
    fingerprints = rng.integers(0, 2**62, size=len(names))
    instructions = rng.integers(5, 500, size=len(names))
    next_name = functions
    start = datetime(2024, 1, 1, tzinfo=timezone.utc)
    parent = None
    for index in range(commits):
        sha = f"{index:040x}"
        if index:
            changed = rng.choice(alive, size=5, replace=False)
            fingerprints[changed] = rng.integers(0, 2**62, size=5)
            instructions[changed] += rng.integers(-3, 4, size=5)
            alive = np.concatenate([np.setdiff1d(alive, rng.choice(alive, size=2, replace=False)), np.arange(next_name, next_name + 2)])
            next_name += 2
        write(store, "functions", sha, pd.DataFrame({
            "commit": sha, "name": names[alive], "fingerprint": fingerprints[alive].astype(str),
            "instructions": instructions[alive], "callees": [[] for _ in alive], "data_refs": [[] for _ in alive],
        }))
        write(store, "objects", sha, pd.DataFrame({"commit": sha, "name": ["table"], "fingerprint": [str(index % 7)]}))
        reached = rng.choice(alive, size=200, replace=False)
        write(store, "profiles", sha, pd.DataFrame({
            "commit": sha, "benchmark": np.repeat([f"bench{b}" for b in range(benchmarks)], len(reached)),
            "function": np.tile(names[reached], benchmarks), "object": "prog", "in_binary": True,
            "calls": rng.integers(1, 10_000, size=benchmarks * len(reached)),
            "self_instructions": rng.integers(1, 10**7, size=benchmarks * len(reached)),
            "inclusive_instructions": rng.integers(1, 10**8, size=benchmarks * len(reached)), "samples": pd.NA,
        }))
        write(store, "measurements", sha, pd.DataFrame({
            "commit": sha, "benchmark": np.repeat([f"bench{b}" for b in range(benchmarks)], 3), "repetition": np.tile([0, 1, 2], benchmarks),
            "status": "ok", "value": rng.normal(1.0, 0.01, size=3 * benchmarks),
        }))
        write(store, "commits", sha, pd.DataFrame([{
            "sha": sha, "parents": [parent] if parent else [], "author_time": start + timedelta(hours=index),
            "build_status": "ok", "build_config": "a", "toolchain": "gcc", "binary_sha256": "",
        }]))
        parent = sha


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--commits", type=int, default=500)
    parser.add_argument("--functions", type=int, default=5000)
    parser.add_argument("--benchmarks", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=3)
    arguments = parser.parse_args()
    with tempfile.TemporaryDirectory() as directory:
        store = Store(directory)
        generate(store, arguments.commits, arguments.functions, arguments.benchmarks)
        started = time.perf_counter()
        history = load_history(store)
        loaded = time.perf_counter()
        benchmarks = [f"bench{b}" for b in range(arguments.benchmarks)]
        tuples = closest_tuples(history, benchmarks)
        paired = time.perf_counter()
        builds = []
        for _ in range(arguments.rounds):  # the machine is shared: report the median of a few rounds
            begun = time.perf_counter()
            table = build_feature_table(history, tuples)
            builds.append(time.perf_counter() - begun)
    count, build = len(table), statistics.median(builds)
    print(f"store          {arguments.commits} commits x {arguments.functions} functions x {arguments.benchmarks} benchmarks")
    print(f"load store     {loaded - started:.2f} s")
    print(f"find tuples    {paired - loaded:.2f} s  ({count} tuples)")
    print(f"features       {build:.2f} s (median of {arguments.rounds}; rounds {', '.join(f'{b:.2f}' for b in builds)})"
          f"  -> {count / build:,.0f} tuples/s  (target >= 2,000 tuples/s)")
    print(f"end to end     {count / (loaded - started + paired - loaded + build):,.0f} tuples/s including loading the store")


if __name__ == "__main__":
    main()
