"""Catch2 benchmarks (the framework module collectors/frameworks/catch2.py) on a real test binary
built with g++ against Debian's catch2: found by `selector init`, listed and run one benchmark at
a time, counted under callgrind by their timed part alone, collected and selected in a git
history, and their XML report imported by `selector record`."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from perf_selector.collectors.benchmark_runner import BenchmarkRunner
from perf_selector.collectors.benchmark_suite import SuiteSpec, discover
from perf_selector.collectors.frameworks.catch2 import _benchmarks as catch2_benchmarks
from perf_selector.selector.benchmarks import build_benchmarks
from perf_selector.selector.config import load_config
from perf_selector.storage.store import Store
from tests.helpers import program_text, run_selector

CATCH2_HEADER = Path("/usr/include/catch2/catch.hpp")
# CI installs it (.ci/run): there the tests must not skip.
pytestmark = pytest.mark.skipif(not CATCH2_HEADER.exists() and not os.environ.get("SELECTOR_REQUIRE_CATCH2"),
                                reason="Catch2 is not installed (Debian: catch2)")
needs_valgrind = pytest.mark.skipif(shutil.which("valgrind") is None, reason="valgrind is not installed")
MAIN = "#define CATCH_CONFIG_MAIN\n#define CATCH_CONFIG_ENABLE_BENCHMARKING\n#include <catch2/catch.hpp>\n"
NAMES = ["catch2/Fibonacci/fib", "catch2/Fibonacci/sum", "catch2/Summing/sum 5000"]
SUITE_CONFIG = """
[project]
binary = "bench"

[build]
command = "make -s bench"

[[suite]]
name = "catch2"
framework = "catch2"
repetitions = 2
"""


@pytest.fixture(scope="module")
def catch_main(tmp_path_factory) -> Path:
    """Catch2's main, compiled once (through ccache where there is one: it is most of a build's time)."""
    folder = tmp_path_factory.mktemp("catch-main")
    (folder / "main.cpp").write_text(MAIN)
    compiler = ["ccache", "g++"] if shutil.which("ccache") else ["g++"]
    subprocess.run([*compiler, "-O2", "-c", "-o", "main.o", "main.cpp"], cwd=folder, check=True, capture_output=True)
    return folder / "main.o"


def project(root: Path, main: Path, config: str | None = SUITE_CONFIG) -> Path:
    root.mkdir(parents=True)
    for setting in (["init", "-q", "-b", "main"], ["config", "user.email", "t@example.com"], ["config", "user.name", "T"]):
        subprocess.run(["git", *setting], cwd=root, check=True)
    (root / ".gitignore").write_text("bench\n.selector/\n")
    (root / "bench.cpp").write_text(program_text("suite_catch2.cpp"))
    if config:
        (root / "selector.toml").write_text(config)
    return root


def commit(root: Path, main: Path, defines: str, message: str) -> str:
    (root / "Makefile").write_text(f"bench: bench.cpp\n\tg++ -O2 -g {defines} -o bench bench.cpp {main}\n")
    subprocess.run(["git", "add", "-A"], cwd=root, check=True)
    subprocess.run(["git", "commit", "-qm", message], cwd=root, check=True)
    return subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, check=True, capture_output=True, text=True).stdout.strip()


def build(root: Path) -> Path:
    subprocess.run(["make", "-s", "bench"], cwd=root, check=True, capture_output=True)
    return root / "bench"


@needs_valgrind
def test_init_finds_the_catch2_benchmarks_and_the_built_binary_lists_them(tmp_path, catch_main):
    root = project(tmp_path / "project", catch_main, config=None)
    sha = commit(root, catch_main, "", "a Catch2 test binary with benchmarks")
    result = run_selector("init", "--yes", "--repo", str(root))
    assert result.returncode == 0, result.stderr
    assert "Catch2: bench.cpp (target bench, naming 3 benchmarks)" in result.stderr, result.stderr
    config = load_config(root / "selector.toml")
    (suite,) = config.suite
    assert (suite.name, suite.framework, suite.metric) == ("catch2", "catch2", "instructions")
    assert config.project.binary == "bench" and sha
    found = build_benchmarks(config, root, build(root))
    assert not found.problems
    assert [spec.name for spec in found.specs] == NAMES  # hidden ([!benchmark]) test cases too, in order


@needs_valgrind
def test_each_benchmark_counts_one_iteration_of_its_own_timed_part(tmp_path, catch_main):
    """Catch2 sizes its samples by the clock; the first call of each benchmark's function runs one
    iteration: the same count at every run, and a set-up its test case runs first is in none."""
    counts = {}
    for variant, defines in (("small", ""), ("large", "-DSETUP_N=300000"), ("fib", "-DFIB_EXTRA")):
        root = project(tmp_path / variant, catch_main)
        commit(root, catch_main, defines, variant)
        binary = build(root)
        suite = SuiteSpec("catch2", "catch2", "{binary}", "instructions", repetitions=2, warmup=0)
        (tmp_path / f"runs-{variant}").mkdir()
        runner = BenchmarkRunner([], binary, root, workdir=tmp_path / f"runs-{variant}")
        discovery = discover(suite, runner)
        assert not discovery.problem
        runner.benchmarks = discovery.specs
        runs = runner.run().runs
        assert all(run.counts for run in runs), [run.error for run in runs]
        values = {}
        for run in runs:
            values.setdefault(run.benchmark, set()).add(run.value)
        assert all(len(repeated) == 1 for repeated in values.values()), values  # exact
        counts[variant] = {name: repeated.pop() for name, repeated in values.items()}
    small, large, fib = counts["small"], counts["large"], counts["fib"]
    assert set(small) == set(NAMES)
    assert small == large  # a set-up 300 times heavier, outside every timed part
    assert 5_000 < small["catch2/Fibonacci/sum"] < 7_000  # one sum_to(1000), not the hundreds the clock asked for
    assert 4.5 * small["catch2/Fibonacci/sum"] < small["catch2/Summing/sum 5000"] < 5.5 * small["catch2/Fibonacci/sum"]
    assert fib["catch2/Fibonacci/fib"] > small["catch2/Fibonacci/fib"]  # its own code changed
    assert {name: fib[name] for name in NAMES[1:]} == {name: small[name] for name in NAMES[1:]}


@needs_valgrind
@pytest.mark.slow
def test_a_catch2_suite_collected_labelled_and_selected_end_to_end(tmp_path, catch_main):
    repo = project(tmp_path / "project", catch_main)
    commit(repo, catch_main, "", "base")
    calibrated = run_selector("calibrate", "--repo", str(repo), "--rounds", "1")
    assert calibrated.returncode == 0, calibrated.stderr
    shared = commit(repo, catch_main, "-DSETUP_N=300000", "a heavier set-up every test case runs")
    own = commit(repo, catch_main, "-DSETUP_N=300000 -DFIB_EXTRA", "fib does more work")
    collected = run_selector("collect", "--repo", str(repo), "--format", "json")
    assert collected.returncode == 0, collected.stderr

    labels = {(row["new"], row["benchmark"]): row["label"] for row in Store(repo / ".selector").read("labels").to_pylist()}
    assert {name: labels[(shared, name)] for name in NAMES} == dict.fromkeys(NAMES, False)
    assert {name: labels[(own, name)] for name in NAMES} == {NAMES[0]: True, NAMES[1]: False, NAMES[2]: False}

    pushed = commit(repo, catch_main, "-DSETUP_N=300000", "fib as it was")
    selected = run_selector("select", "--repo", str(repo), "--format", "json", pushed)
    assert selected.returncode == 0, selected.stderr
    decisions = {d["name"]: d for d in json.loads(selected.stdout)["benchmarks"]}
    assert set(decisions) == set(NAMES)
    assert decisions[NAMES[0]]["decision"] == "run", decisions[NAMES[0]]  # fib's code changed, and it runs it
    assert {decisions[name]["decision"] for name in NAMES[1:]} == {"skip"}, decisions
    spec = run_selector("select", "--repo", str(repo), "--filter", pushed)
    assert spec.returncode == 0 and spec.stdout.strip() == "Fibonacci", spec  # fib's test case: a Catch2 test spec


def test_the_filter_select_prints_is_a_test_spec_that_runs_the_selected_test_cases(tmp_path, catch_main):
    """`select --filter` for a Catch2 suite: the test cases of the selected benchmarks (Catch2
    runs a test case whole), the hidden ones too; none selected runs none."""
    from perf_selector.collectors.frameworks import CATCH2

    root = project(tmp_path / "project", catch_main)
    commit(root, catch_main, "", "base")
    binary = build(root)

    def benchmarks_run(spec: str) -> list[str]:
        report = subprocess.run([str(binary), "-r", "xml", "--benchmark-samples", "1", "--benchmark-no-analysis", spec],
                                capture_output=True, text=True)
        return [f"{case}/{name}" for case, name, _, _ in catch2_benchmarks(report.stdout)]

    assert benchmarks_run(CATCH2.filter(["Fibonacci/sum"])) == ["Fibonacci/fib", "Fibonacci/sum"]
    assert benchmarks_run(CATCH2.filter(["Summing/sum 5000", "Fibonacci/fib"])) == [name.removeprefix("catch2/")
                                                                                    for name in NAMES]
    assert benchmarks_run(CATCH2.filter(None)) == [name.removeprefix("catch2/") for name in NAMES]
    assert benchmarks_run(CATCH2.filter([])) == []
    assert CATCH2.filter(["a, b [x]/fib"]) == r"a\, b \[x\]"  # its spec syntax escaped


def test_record_imports_a_catch2_xml_report_as_the_suites(tmp_path, catch_main):
    repo = project(tmp_path / "project", catch_main)
    sha = commit(repo, catch_main, "", "base")
    report = tmp_path / "results.xml"
    subprocess.run([str(build(repo)), "-r", "xml", "-o", str(report), "--benchmark-samples", "5", "--benchmark-no-analysis",
                    "*,[.]"], check=True, capture_output=True)

    refused = run_selector("record", "--repo", str(repo), "--import", str(report))
    assert refused.returncode != 0 and "counts instructions" in refused.stderr, refused.stderr

    timed = tmp_path / "timed.toml"
    timed.write_text(SUITE_CONFIG.replace("repetitions = 2", 'repetitions = 2\nmetric = "mean"\nexclude = "5000"')
                     + '\n[profile]\ntool = "none"\n')
    recorded = run_selector("record", "--repo", str(repo), "--config", str(timed), "--import", str(report),
                            "--import-format", "catch2", "--format", "json")
    assert recorded.returncode == 0, recorded.stderr
    assert json.loads(recorded.stdout)["imported_rows"] == 2
    rows = Store(repo / ".selector").read_one("measurements", sha).to_pylist()
    assert {(row["benchmark"], row["metric"], row["unit"]) for row in rows} == \
        {("catch2/Fibonacci/fib", "mean", "s"), ("catch2/Fibonacci/sum", "mean", "s")}
    assert all(row["status"] == "ok" and 0 < row["value"] < 1e-3 for row in rows)
