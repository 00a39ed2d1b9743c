"""Install footprint: the core install, the full install (`[all]`) and the previous one, side by side.

Builds this checkout's wheel once (what a release publishes; the build is timed apart),
then, for each variant, makes a fresh virtual environment and times
`pip install --no-cache-dir` into it (a cold CI runner: every distribution downloaded
from the package index and unpacked), then measures its size on disk (the environment
less an empty one, which holds pip itself) and counts its distributions:

- core:     the wheel alone: what `select`, the pre-push hook, `functions` and `diff` need;
- all:      the wheel with every extra (`[all]`: collect, train, tracking, dask, report, bench);
- previous: the wheel with the dependency list of pyproject.toml at --previous (default:
            the commit before the extras existed), which installed everything for everyone.

Then `selector select` (start, imports, the model, the analysis of libpython against a
stored ancestor: the set-up of benchmarks/select_latency.py) is timed through the core
and the full environment, alternating, `--rounds` times.
Goals (issue 18): core at most 300 MB and 40 s; all at most half of the previous.
Run: python benchmarks/install_footprint.py [--rounds 5 --previous c5ef556]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import tomllib
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import interleaved, libpython, median  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent


def disk_mib(path: Path) -> float:
    return int(subprocess.run(["du", "-sk", str(path)], capture_output=True, text=True, check=True).stdout.split()[0]) / 1024


def make_environment(path: Path) -> Path:
    subprocess.run([sys.executable, "-m", "venv", str(path)], check=True)
    return path / "bin" / "python"


def pip_install(python: Path, *requirements: str) -> float:
    started = time.perf_counter()
    subprocess.run([str(python), "-m", "pip", "install", "-q", "--no-cache-dir", "--disable-pip-version-check",
                    *requirements], check=True)
    return time.perf_counter() - started


def distributions(python: Path) -> int:
    listed = subprocess.run([str(python), "-m", "pip", "list", "--format", "json", "--disable-pip-version-check"],
                            capture_output=True, text=True, check=True).stdout
    return len(json.loads(listed))


def build_wheel(directory: Path) -> tuple[Path, float]:
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(directory), str(ROOT)], check=True,
                   env={**os.environ, "PATH": f"{Path.home() / '.cargo' / 'bin'}:{os.environ['PATH']}"})
    return next(directory.glob("perf_selector-*.whl")), time.perf_counter() - started


def previous_requirements(revision: str) -> list[str]:
    text = subprocess.run(["git", "-C", str(ROOT), "show", f"{revision}:pyproject.toml"], capture_output=True, text=True,
                          check=True).stdout
    return tomllib.loads(text)["project"]["dependencies"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5, help="select timings per environment")
    parser.add_argument("--previous", default="c5ef556", help="the commit whose dependency list is the 'previous' install")
    arguments = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="install-footprint-") as directory:
        root = Path(directory)
        wheel, build_seconds = build_wheel(root / "wheel")
        empty_python = make_environment(root / "empty")
        empty, empty_count = disk_mib(root / "empty"), distributions(empty_python)
        variants = {"core": [str(wheel)], "all": [f"{wheel}[all]"],
                    "previous": previous_requirements(arguments.previous)}
        results = {}
        for name, requirements in variants.items():
            python = make_environment(root / name)
            seconds = 0.0
            if name == "previous":
                seconds += pip_install(python, "--no-deps", str(wheel))
            seconds += pip_install(python, *requirements)
            results[name] = {"python": python, "seconds": seconds, "mib": disk_mib(root / name) - empty,
                             "distributions": distributions(python) - empty_count}
            print(f"{name:9s} installed in {seconds:6.1f} s: {results[name]['mib']:7.0f} MiB, "
                  f"{results[name]['distributions']} distributions", flush=True)
        core_heavy = subprocess.run([str(results["core"]["python"]), "-c", "import importlib.util as u; "
                                     "print([m for m in ('pandas', 'scipy', 'sklearn', 'xgboost', 'mlflow', 'matplotlib') "
                                     "if u.find_spec(m)])"], capture_output=True, text=True, check=True).stdout.strip()
        select_times = time_select(root, {name: results[name]["python"] for name in ("core", "all")}, arguments.rounds)

    print()
    print(f"wheel built once in {build_seconds:.1f} s (the compiled core included; not part of an install)")
    print(f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f}; pip install --no-cache-dir from the index")
    print(f"core environment holds none of the heavy modules: {core_heavy == '[]'} ({core_heavy})")
    print()
    print(f"{'install':9s} {'size MiB':>9s} {'seconds':>8s} {'distributions':>14s}")
    for name, result in results.items():
        print(f"{name:9s} {result['mib']:9.0f} {result['seconds']:8.1f} {result['distributions']:14d}")
    print()
    core, full, previous = results["core"], results["all"], results["previous"]
    print(f"core / previous: size {core['mib'] / previous['mib']:.2f}, time {core['seconds'] / previous['seconds']:.2f}")
    print(f"all / previous:  size {full['mib'] / previous['mib']:.2f}, time {full['seconds'] / previous['seconds']:.2f}")
    print(f"goals: core <= 300 MB: {core['mib'] * 1.048576 <= 300} ({core['mib'] * 1.048576:.0f} MB); "
          f"core <= 40 s: {core['seconds'] <= 40}; all <= half of previous: {full['mib'] <= previous['mib'] / 2}")
    print()
    for name, values in select_times.items():
        print(f"selector select through {name:4s}: median {median(values):.3f} s ({', '.join(f'{v:.3f}' for v in values)})")
    print(f"select, core / all = {median(select_times['core']) / median(select_times['all']):.2f}")


def time_select(root: Path, pythons: dict[str, Path], rounds: int) -> dict[str, list[float]]:
    """`selector select --binary libpython` through each environment on one stored ancestor and bundle."""
    from select_latency import add_older_history, make_bundle, make_repository, make_store

    from perf_selector.storage.store import Store

    repository, store = root / "project", Store(root / "store")
    binary = root / "libpython.so"
    shutil.copyfile(libpython(), binary)
    first, _ = make_repository(repository)
    config, _ = make_store(store, repository, first, binary, 400, 20)
    add_older_history(store, first, 300)
    make_bundle(store, config, first)

    def select(python: Path):
        def run() -> None:
            result = subprocess.run([str(python), "-m", "perf_selector", "select", "HEAD", "--repo", str(repository),
                                     "--store", str(store.root), "--binary", str(binary), "--format", "json"],
                                    capture_output=True, text=True, cwd=root)
            if result.returncode not in (0, 1) or re.search(r"selector failed", result.stdout):
                raise SystemExit(f"select through {python} failed:\n{result.stdout}\n{result.stderr}")
        return run

    candidates = {name: select(python) for name, python in pythons.items()}
    for run in candidates.values():
        run()  # the snapshots a first select leaves, and a check that both work
    return interleaved(candidates, rounds)


if __name__ == "__main__":
    main()
