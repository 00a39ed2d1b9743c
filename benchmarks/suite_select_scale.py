"""`selector select` on a suite of 200 Google Benchmark benchmarks against the same store with 5.

Issue 28's bound: with one binary holding hundreds of benchmarks, `select` must stay a
push-time command: its time with 200 benchmarks at most 1.5 times its time with 5.

Set-up, in a temporary directory, all real: a C++ program of BENCHMARKS Google
Benchmark benchmarks (each its own function over its own kernel, so every profile
differs) built with g++ and libbenchmark in a git repository of two commits (the second
changes the kernels of three benchmarks); the first commit collected by `selector
collect` under callgrind (each benchmark run once, alone, isolated; its profile kept),
so the store holds BENCHMARKS measured and profiled benchmarks.  Then, alternating,
`selector select HEAD --format json` (the whole process: the new commit's binary
given with --binary, analysed, its benchmarks listed, each compared with the ancestor,
the shipped model scoring every row) with a configuration whose suite includes all the
benchmarks, and with one whose `include` keeps 5 of them; same store, same binaries.
Prints both medians and their ratio, and checks each run's decisions (the three
changed benchmarks run in the large suite).  Also checks `--format github` keeps within
GitHub's 256-job matrix.

Run: python benchmarks/suite_select_scale.py [--benchmarks 200 --rounds 5]
(collection of the ancestor takes a few minutes: BENCHMARKS callgrind runs)
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import interleaved, median  # noqa: E402

CHANGED = (3, 70, 150)  # benchmarks whose kernel the second commit changes


def program(count: int, changed: tuple[int, ...] = ()) -> str:
    """BENCHMARKS distinct benchmarks: BM_k<i> runs kernel_<i>, a loop of its own constants."""
    lines = ["#include <benchmark/benchmark.h>", ""]
    for i in range(count):
        step = 2 if i in changed else 1
        lines += [
            f"__attribute__((noinline)) long kernel_{i}(int n) {{",
            f"  long s = {i}; for (int j = 0; j < n; j += {step}) s = s * {31 + i % 17} + (j ^ {i}); return s; }}",
            f"static void BM_k{i}(benchmark::State& state) {{",
            f"  for (auto _ : state) benchmark::DoNotOptimize(kernel_{i}({200 + 3 * (i % 50)})); }}",
            f"BENCHMARK(BM_k{i});",
        ]
    return "\n".join(lines + ["BENCHMARK_MAIN();", ""])


CONFIG = """[project]
binary = "bench"

[build]
command = "g++ -O2 -g -o bench bench.cpp -lbenchmark -lpthread"
timeout = 900

[[suite]]
name = "gb"
framework = "google-benchmark"
metric = "instructions"
repetitions = 1
{include}
"""


def git(repo: Path, *arguments: str) -> str:
    return subprocess.run(["git", *arguments], cwd=repo, check=True, capture_output=True, text=True).stdout.strip()


def selector(*arguments: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "perf_selector", *arguments], capture_output=True, text=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--benchmarks", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=5)
    options = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="suite-scale-"))
    repo = work / "project"
    repo.mkdir()
    git(repo, "init", "-q")
    git(repo, "config", "user.email", "bench@example.com")
    git(repo, "config", "user.name", "bench")
    (repo / "selector.toml").write_text(CONFIG.format(include=""))
    (repo / "bench.cpp").write_text(program(options.benchmarks))
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "base")
    (repo / "bench.cpp").write_text(program(options.benchmarks, CHANGED))
    git(repo, "commit", "-qam", "three kernels change")
    subprocess.run(["g++", "-O2", "-g", "-o", str(work / "new-bench"), str(repo / "bench.cpp"), "-lbenchmark", "-lpthread"],
                   check=True)

    print(f"collecting the ancestor: {options.benchmarks} benchmarks under callgrind ...", flush=True)
    collected = selector("collect", "HEAD~1", "--repo", str(repo), "--format", "json")
    if collected.returncode:
        raise SystemExit(f"collect failed: {collected.stderr}")
    few = work / "five.toml"
    few.write_text(CONFIG.format(include='include = "^BM_k(3|10|20|30|40)$"'))
    many = repo / "selector.toml"
    store = repo / ".selector"

    def select(config: Path, output: str = "json") -> subprocess.CompletedProcess:
        return selector("select", "HEAD", "--repo", str(repo), "--config", str(config), "--store", str(store),
                        "--binary", str(work / "new-bench"), "--format", output)

    for config, expected in ((many, options.benchmarks), (few, 5)):
        document = json.loads(select(config).stdout)
        decided = {d["name"]: d["decision"] for d in document["benchmarks"]}
        assert len(decided) == expected, (config, len(decided))
        print(f"{expected} benchmarks: {len(document['run'])} run; the changed ones: "
              f"{[decided.get(f'gb/BM_k{i}') for i in CHANGED]}")
    github = select(many, "github")
    outputs = dict(line.split("=", 1) for line in github.stdout.splitlines() if "=" in line)
    print(f"--format github: {len(json.loads(outputs['matrix'])['benchmark'])} matrix jobs; filters: {outputs['filters'][:80]}")

    times = interleaved({"5 benchmarks": lambda: select(few), f"{options.benchmarks} benchmarks": lambda: select(many)},
                        options.rounds)
    small, large = median(times["5 benchmarks"]), median(times[f"{options.benchmarks} benchmarks"])
    print(f"select, 5 benchmarks:   median {small:.3f} s over {options.rounds} rounds")
    print(f"select, {options.benchmarks} benchmarks: median {large:.3f} s")
    print(f"ratio {options.benchmarks}/5: {large / small:.2f} (target: at most 1.5)")
    print(f"(work folder: {work})", file=sys.stderr)
    os.environ.pop("GITHUB_OUTPUT", None)


if __name__ == "__main__":
    main()
