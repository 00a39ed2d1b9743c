"""The collector's own cost: time per commit beyond the build, benchmark and profiler
processes it waits for, as a share of the total.  Target: at most 5%.

Collects the sample history (real gcc builds, callgrind-measured benchmarks and
profiles, labels) with one job, timing the whole run and summing the wall time of the
child processes; git worktrees, static analysis, the store and labelling are the
tool's own time.  Run: python benchmarks/collect_overhead.py [--commits N]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from perf_selector.collectors.repository import Repository
from perf_selector.selector.collection.calibrate import calibrate
from perf_selector.selector.collection.collect import collect
from perf_selector.selector.config import load_config
from perf_selector.selector.onboarding.sample_history import make_sample_history
from perf_selector.storage.store import Store


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.parse_args()
    with tempfile.TemporaryDirectory() as directory:
        root = Path(directory) / "project"
        make_sample_history(root)
        config = load_config(root / "selector.toml")
        store = Store(Path(directory) / "store")
        commits = Repository.open(root).commits("HEAD")
        calibrate(root, config, store, commits[0].sha, rounds=1)
        started = time.perf_counter()
        summary = collect(root, config, store, commits, jobs=1)
        total = time.perf_counter() - started
    children = sum(outcome.child_seconds for outcome in summary.outcomes)
    own = total - children
    print(f"commits                 {len(commits)} (builds, 4 benchmarks x 3 callgrind runs, callgrind profiles, labels)")
    print(f"total                   {total:.2f} s  ({total / len(commits):.2f} s per commit)")
    print(f"child processes         {children:.2f} s  (build, benchmark and profiler processes)")
    print(f"the tool's own time     {own:.2f} s  ({own / len(commits):.3f} s per commit)")
    print(f"own share of the total  {own / total:.1%}  (target <= 5%)")


if __name__ == "__main__":
    main()
