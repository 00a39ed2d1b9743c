"""What integrity costs: reading a 2,500-file store and `selector select`, with every file's
digest and page checksums verified, as a ratio to a version that verified nothing.
Goal: at most 1.1 for both.

The baseline (default: 1d814bf, main before verification) is checked out beside this
tree and both run from their own code, side by side in one run, rounds interleaved:
- *read*: each version writes the synthetic store of benchmarks/features_speed.py
  (500 commits x 5 tables = 2,500 files), then reads every table file by file (the
  many-file reader, no snapshots) and loads the history the way the feature builder
  does; a round is one fresh process per version, timed inside from after the imports.
- *select*: the store, repository and bundle of benchmarks/select_latency.py (libpython
  as the binary), written once by this version; `python -m perf_selector select --binary`
  run by each version from start to exit.

    python benchmarks/integrity_cost.py [--baseline REV] [--rounds 9]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import libpython, median  # noqa: E402

HERE = Path(__file__).resolve().parent.parent
TABLES = ["commits", "functions", "objects", "measurements", "profiles"]

GENERATE = """
import sys
sys.path.insert(0, "benchmarks")
from features_speed import generate
try:
    from perf_selector.storage.store import Store
except ImportError:  # a checkout from before the store layer
    from perf_selector.selector.store import Store
generate(Store(sys.argv[1]), 500, 5000, 5)
"""

READ = """
import json, sys, time
try:
    from perf_selector.storage.history import load_history
    from perf_selector.storage.store import Store
except ImportError:  # a checkout from before the store layer
    from perf_selector.selector.evaluation.feature_table import load_history
    from perf_selector.selector.store import Store
store = Store(sys.argv[1])
started = time.perf_counter()
for table in {tables}:
    store.read(table, keys=store.keys(table))
files = time.perf_counter()
load_history(store)
print(json.dumps({{"files": files - started, "history": time.perf_counter() - files}}))
""".format(tables=TABLES)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", default="1d814bf", help="the version to compare with [%(default)s]")
    parser.add_argument("--rounds", type=int, default=9)
    arguments = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="integrity-cost-") as directory:
        work = Path(directory)
        baseline = work / "baseline"
        subprocess.run(["git", "-C", str(HERE), "worktree", "add", "-q", "--detach", str(baseline), arguments.baseline], check=True)
        try:
            for library in (HERE / "collectors").glob("_native*.so"):
                shutil.copy(library, baseline / "collectors" / library.name)
            versions = {"baseline": baseline, "verified": HERE}
            reads = _read_rounds(work, versions, arguments.rounds)
            selects = _select_rounds(work, versions, arguments.rounds)
        finally:
            subprocess.run(["git", "-C", str(HERE), "worktree", "remove", "--force", str(baseline)], check=False)

    print(f"baseline {arguments.baseline} (no verification) against this tree, {arguments.rounds} rounds interleaved")
    print(f"{'measure':34s} {'baseline s':>10s} {'verified s':>10s} {'ratio':>6s}")
    results = {**{f"read 2,500 files ({kind})": values for kind, values in reads.items()}, "selector select (libpython)": selects}
    for name, values in results.items():
        old, new = median(values["baseline"]), median(values["verified"])
        print(f"{name:34s} {old:10.3f} {new:10.3f} {new / old:6.2f}")
    print("goal: every ratio at most 1.1 (medians)")


def _environment(checkout: Path) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(checkout)}


def _read_rounds(work: Path, versions: dict[str, Path], rounds: int) -> dict[str, dict[str, list[float]]]:
    for name, checkout in versions.items():
        subprocess.run([sys.executable, "-c", GENERATE, str(work / f"store-{name}")], cwd=checkout, check=True,
                       env=_environment(checkout))
    times = {"files": {name: [] for name in versions}, "history": {name: [] for name in versions}}
    for round_number in range(rounds):
        for name, checkout in _in_turn(versions, round_number):
            result = subprocess.run([sys.executable, "-c", READ, str(work / f"store-{name}")], cwd=checkout, check=True,
                                    capture_output=True, text=True, env=_environment(checkout))
            for kind, seconds in json.loads(result.stdout).items():
                times[kind][name].append(seconds)
    return times


def _select_rounds(work: Path, versions: dict[str, Path], rounds: int) -> dict[str, list[float]]:
    import select_latency as fixture
    from perf_selector.storage.store import Store

    repository, store, binary = work / "project", Store(work / "select-store"), work / "libpython.so"
    shutil.copyfile(libpython(), binary)
    first, _ = fixture.make_repository(repository)
    config, _ = fixture.make_store(store, repository, first, binary, 400, 20)
    fixture.add_older_history(store, first, 300)
    fixture.make_bundle(store, config, first)
    command = [sys.executable, "-m", "perf_selector", "select", "HEAD", "--repo", str(repository), "--store", str(store.root),
               "--binary", str(binary), "--format", "json"]
    times = {name: [] for name in versions}
    for round_number in range(rounds + 1):  # the first round writes the snapshots and warms the caches
        for name, checkout in _in_turn(versions, round_number):
            started = _now()
            result = subprocess.run(command, capture_output=True, text=True, cwd=work, env=_environment(checkout))
            elapsed = _now() - started
            if result.returncode not in (0, 1):
                raise SystemExit(f"{name}: selector select exited {result.returncode}:\n{result.stderr}")
            if round_number:
                times[name].append(elapsed)
    return times


def _in_turn(versions: dict[str, Path], round_number: int) -> list[tuple[str, Path]]:
    """Who goes first alternates from round to round, so a drift of the machine's speed
    within a round favours neither."""
    order = list(versions.items())
    return order if round_number % 2 == 0 else order[::-1]


def _now() -> float:
    import time

    return time.perf_counter()


if __name__ == "__main__":
    main()
