"""Collection throughput: one slice of a real history collected twice in one run, with
today's behaviour and with the new defaults, side by side.  Goal: at most 0.5.

*Today's behaviour* is what `selector collect` did before warm-ups depended on the
metric, before runs of identical binaries were reused and before builds went through
ccache: every benchmark gets `warmup = 1`, and the collection runs with `--no-reuse
--no-cache`.  *New defaults* is `selector collect` as shipped.  Both use the same
calibration (made once, copied), so their labels must be identical; the script checks
that, and that every commit's binary has the same content digest in both stores.

The default subject is lz4 (corpus/lz4: its selector.toml and suite), the first 25
first-parent commits of the evaluation range of docs/evaluation.md.

    python benchmarks/collect_throughput.py --repo PATH-TO-LZ4-CLONE [--range A..B] [-j 2]
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
from pathlib import Path

CORPUS = Path(__file__).resolve().parent.parent / "corpus" / "lz4"
DEFAULT_RANGE = "4b407c3f^..a3be3115"  # 25 first-parent commits of lz4 dev, 2023-12 to 2024-03


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repo", required=True, type=Path, help="a clone of the project (lz4 by default)")
    parser.add_argument("--config", type=Path, default=CORPUS / "selector.toml")
    parser.add_argument("--range", default=DEFAULT_RANGE, help="first-parent range to collect [%(default)s]")
    parser.add_argument("-j", "--jobs", type=int, default=2)
    arguments = parser.parse_args()
    if arguments.config == CORPUS / "selector.toml" and not (CORPUS / "suite" / "data.lz4").is_file():
        subprocess.run([str(CORPUS / "make_suite.sh"), str(arguments.repo)], check=True)

    with tempfile.TemporaryDirectory(prefix="collect-throughput-") as directory:
        work = Path(directory)
        today_config = work / "today.toml"
        today_config.write_text(_with_warmups(arguments.config.read_text()))
        first = _oldest(arguments.repo, arguments.range)
        started = time.perf_counter()
        _selector(arguments.repo, "calibrate", first, "--rounds", "2", "--config", str(arguments.config),
                  "--store", str(work / "new"), environment=_ccache(work / "ccache-calibrate"))
        calibration = time.perf_counter() - started
        shutil.copytree(work / "new" / "calibration", work / "today" / "calibration")

        runs = {}
        for name, config, switches in (("today", today_config, ["--no-reuse", "--no-cache"]), ("new", arguments.config, [])):
            started = time.perf_counter()
            report = _selector(arguments.repo, "collect", arguments.range, "--first-parent", "-j", str(arguments.jobs),
                               "--config", str(config), "--store", str(work / name), *switches,
                               environment=_ccache(work / f"ccache-{name}"))
            runs[name] = (time.perf_counter() - started, report)
            print(f"{name:6} {runs[name][0]:7.1f} s  {_described(report)}", flush=True)

        same_labels, same_code = _compare(work / "today", work / "new")
    commits = runs["new"][1]["summary"]["commits"]
    ratio = runs["new"][0] / runs["today"][0]
    print(f"\ncommits                     {commits} ({arguments.range}, first parent, -j {arguments.jobs})")
    print(f"calibration (once, shared)  {calibration:.1f} s")
    print(f"today's behaviour           {runs['today'][0]:.1f} s  (warm-up 1 per benchmark, --no-reuse --no-cache)")
    print(f"new defaults                {runs['new'][0]:.1f} s")
    print(f"ratio new / today           {ratio:.2f}  (goal <= 0.5)")
    print(f"identical labels            {same_labels}")
    print(f"identical code per commit   {same_code}")
    if not (same_labels and same_code):
        sys.exit(1)


def _with_warmups(text: str) -> str:
    """The configuration with `warmup = 1` in every [[benchmark]] that does not set it."""
    blocks = re.split(r"(?m)^(?=\[)", text)
    return "".join(
        block.rstrip("\n") + "\nwarmup = 1\n\n" if block.startswith("[[benchmark]]") and "warmup" not in block else block
        for block in blocks
    ).replace('suite = "suite"', f'suite = "{CORPUS / "suite"}"')


def _oldest(repository: Path, revisions: str) -> str:
    listing = subprocess.run(["git", "rev-list", "--first-parent", "--reverse", revisions], cwd=repository,
                             capture_output=True, text=True, check=True).stdout.split()
    return listing[0]


def _ccache(directory: Path) -> dict[str, str]:
    return {**os.environ, "CCACHE_DIR": str(directory)}  # each collection starts with an empty cache


def _selector(repository: Path, *arguments: str, environment: dict[str, str]) -> dict:
    result = subprocess.run([sys.executable, "-m", "perf_selector", *arguments, "--format", "json"], cwd=repository,
                            capture_output=True, text=True, env=environment)
    if result.returncode != 0:
        raise SystemExit(f"selector {arguments[0]} failed:\n{result.stderr[-2000:]}")
    return json.loads(result.stdout) if result.stdout.strip().startswith("{") else {}


def _described(report: dict) -> str:
    summary, seconds, cache = report["summary"], report["seconds"], report["cache"]
    return (f"built {summary['built'] - summary['builds_reused']}, took the parent's build {summary['builds_reused']}, "
            f"failed {summary['failed']}, commits with every run reused "
            f"{summary['measurements_reused']}, benchmark runs reused {summary['benchmarks_reused']}; "
            f"ccache hits {cache['hits']} misses {cache['misses']}; seconds: "
            + ", ".join(f"{key} {value:.0f}" for key, value in seconds.items()))


def _compare(today: Path, new: Path) -> tuple[bool, bool]:
    from perf_selector.storage.store import Store

    keys = ["new", "old", "benchmark"]
    labels = [Store(path).read("labels").to_pandas()[[*keys, "label"]].sort_values(keys).reset_index(drop=True) for path in (today, new)]
    commits = [Store(path).read("commits").to_pandas().set_index("sha")["content_digest"].sort_index() for path in (today, new)]
    return labels[0].equals(labels[1]), commits[0].equals(commits[1])


if __name__ == "__main__":
    main()
