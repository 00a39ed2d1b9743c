"""`selector select` on a commit of Git's 2013 history, against Perphecy's "under 350 ms".

de Oliveira (2015, section 6.4) reports that all of Perphecy's static processing of a
Git commit (the binary's functions, the diff against the profiled ancestor, the
indicators) took under 350 ms.  This script times ours on the corpus's Git store
(`corpus/collect.sh git`), in one run, alternating:

- `select`: the whole `selector select COMMIT --binary B --format json` process (Python
  start, imports, the binary analysed, its closest profiled ancestor found, the features
  built for the five benchmarks, the model scoring them, the decisions printed);
- `analysis`: the static analysis of the binary alone, in this process (what
  Perphecy's 350 ms mostly was: reading the functions of the new binary);
- `objdump -d B`, the yardstick the other latency scripts use on this shared machine.

COMMIT defaults to the newest collected commit whose first parent is collected too; B
is its binary, taken out of the store (so the analysis runs, as on a push).

Run: python benchmarks/git_select_latency.py WORKDIR/git [--rounds 9 --commit SHA]
(WORKDIR/git as corpus/collect.sh leaves it: the clone git/, store/, selector.toml)
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import interleaved, median  # noqa: E402

from perf_selector.collectors.static_analysis import analyse_binary  # noqa: E402
from perf_selector.storage.store import Store  # noqa: E402

PERPHECY_MS = 350


def newest_with_collected_parent(store: Store) -> str:
    commits = store.read("commits").to_pylist()
    built = {row["sha"] for row in commits if row["build_status"] == "ok"}
    candidates = [row for row in commits if row["sha"] in built and row["parents"] and row["parents"][0] in built]
    if not candidates:
        raise SystemExit("no collected commit whose first parent is collected too: collect more of the range first")
    return max(candidates, key=lambda row: row["author_time"])["sha"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("work", type=Path, help="the project's folder of corpus/collect.sh (clone, store, selector.toml)")
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--commit")
    options = parser.parse_args()
    store = Store(options.work / "store")
    commit = options.commit or newest_with_collected_parent(store)
    row = store.read_one("commits", commit).to_pylist()[0]
    folder = Path(tempfile.mkdtemp(prefix="git-select-"))
    binary = folder / "git"
    shutil.copy(store.local_binary(row["binary_sha256"]), binary)
    binary.chmod(0o755)
    command = [sys.executable, "-m", "perf_selector", "select", commit, "--repo", str(options.work / "git"),
               "--config", str(options.work / "selector.toml"), "--store", str(options.work / "store"),
               "--binary", str(binary), "--format", "json"]
    first = subprocess.run(command, capture_output=True, text=True)
    if first.returncode not in (0, 1):
        raise SystemExit(f"select failed: {first.stderr}")
    print(f"commit {commit[:12]}: binary {binary.stat().st_size / 1e6:.1f} MB, "
          f"{analyse_binary(binary).functions.num_rows} functions")
    times = interleaved({
        "select": lambda: subprocess.run(command, capture_output=True, check=False),
        "analysis": lambda: analyse_binary(binary),
        "objdump -d": lambda: subprocess.run(["objdump", "-d", str(binary)], stdout=subprocess.DEVNULL, check=True),
    }, options.rounds)
    for name, values in times.items():
        print(f"{name:>10}: median {1000 * median(values):.0f} ms (min {1000 * min(values):.0f}, max {1000 * max(values):.0f}) "
              f"over {options.rounds} rounds")
    print(f"select / Perphecy's {PERPHECY_MS} ms: {1000 * median(times['select']) / PERPHECY_MS:.2f}; "
          f"analysis / {PERPHECY_MS} ms: {1000 * median(times['analysis']) / PERPHECY_MS:.2f}; "
          f"select / objdump -d: {median(times['select']) / median(times['objdump -d']):.2f}")
    shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
