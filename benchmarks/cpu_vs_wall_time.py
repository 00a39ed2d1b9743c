"""cpu_time against wall_time as the metric of a timed benchmark, measured on the same runs.

Each run of a benchmark process gives both: its wall time, and its CPU time (user + system
seconds, the kernel's account at exit: collectors/benchmark_runner.py).  This script builds
a busy loop and the same loop planted 10% longer, runs them interleaved (old and new in a
random order each round), on an idle machine and with busy processes competing for every
core, and prints for each metric: the runs' coefficient of variation, the paired effect
(median of the rounds' new/old ratios) and Wilcoxon's p-value.  Wall time adds the time a
run waits for a core to both sides of a round, which dilutes their ratio; CPU time leaves
it out.

    python benchmarks/cpu_vs_wall_time.py [--rounds 20] [--work 60000000]
"""

from __future__ import annotations

import argparse
import os
import random
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
from scipy.stats import wilcoxon

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from perf_selector.collectors.benchmark_runner import BenchmarkRunner  # noqa: E402

PROGRAM = """#include <stdio.h>
int main(void) {
    volatile long sink = 0;
    for (long i = 0; i < WORK; i++)
        sink += i;
    printf("%ld\\n", (long)sink);
    return 0;
}
"""


def build(folder: Path, work: int, name: str) -> Path:
    source = folder / f"{name}.c"
    source.write_text(PROGRAM)
    binary = folder / name
    subprocess.run(["gcc", "-O2", f"-DWORK={work}L", "-o", str(binary), str(source)], check=True)
    return binary


def measure(binaries: dict[str, Path], rounds: int, seed: int) -> dict[str, dict[str, list[float]]]:
    """side -> metric -> values, round by round (a warm-up of each first)."""
    folder = next(iter(binaries.values())).parent
    runner = BenchmarkRunner([], binaries["old"], folder, workdir=folder)
    values = {side: {"wall_time": [], "cpu_time": []} for side in binaries}
    order = random.Random(seed)
    for side in binaries:
        runner.execute([str(binaries[side])], 60)
    for _ in range(rounds):
        for side in order.sample(list(binaries), 2):
            outcome = runner.execute([str(binaries[side])], 60)
            values[side]["wall_time"].append(outcome.seconds)
            values[side]["cpu_time"].append(outcome.cpu_seconds)
    return values


def busy_processes(count: int) -> list[subprocess.Popen]:
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(count)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--work", type=int, default=60_000_000, help="loop iterations of the old binary")
    arguments = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        binaries = {"old": build(Path(folder), arguments.work, "old"),
                    "new": build(Path(folder), arguments.work * 11 // 10, "new")}
        print(f"a busy loop against the same loop 10% longer, {arguments.rounds} interleaved rounds")
        print(f"{'machine':<22} {'metric':<10} {'cv old':>8} {'cv new':>8} {'paired effect':>14} {'p':>9}")
        for condition, competitors in (("idle", 0), (f"{os.cpu_count()} busy processes", os.cpu_count() or 1)):
            others = busy_processes(competitors)
            try:
                values = measure(binaries, arguments.rounds, seed=competitors)
            finally:
                for process in others:
                    process.kill()
                    process.wait()
            for metric in ("wall_time", "cpu_time"):
                old, new = (np.asarray(values[side][metric]) for side in ("old", "new"))
                logs = np.log(new / old)
                print(f"{condition:<22} {metric:<10} {old.std() / old.mean():>8.1%} {new.std() / new.mean():>8.1%} "
                      f"{np.expm1(np.median(logs)):>+14.1%} {wilcoxon(logs).pvalue:>9.2g}")


if __name__ == "__main__":
    main()
