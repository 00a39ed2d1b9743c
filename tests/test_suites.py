"""Benchmark suites on real binaries: a Google Benchmark program built with g++ and a
db_bench-like driver built with gcc, discovered, run one benchmark at a time, isolated
under callgrind, and collected and selected end to end in a git history."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from perf_selector.collectors.benchmark_runner import BenchmarkRunner
from perf_selector.collectors.benchmark_suite import SuiteSpec, discover
from perf_selector.collectors.frameworks import GOOGLE_BENCHMARK
from perf_selector.collectors.callgrind import TimedLoop, read_callgrind
from perf_selector.collectors.symbols import demangle
from perf_selector.selector.selection.selection import Decision, Selection
from perf_selector.storage.store import Store
from tests.helpers import compile_c, program_text, run_selector

GOOGLE_BENCHMARK_HEADER = Path("/usr/include/benchmark/benchmark.h")
# CI installs it (.ci/run) and says so: there the tests must not skip.
needs_google_benchmark = pytest.mark.skipif(
    not GOOGLE_BENCHMARK_HEADER.exists() and not os.environ.get("SELECTOR_REQUIRE_GOOGLE_BENCHMARK"),
    reason="Google Benchmark is not installed (Debian: libbenchmark-dev)")


def build_google(tmp_path: Path, name: str, defines: str = "", program: str = "suite_bench.cpp") -> Path:
    source = tmp_path / f"{name}.cpp"
    source.write_text(program_text(program))
    subprocess.run(["g++", "-O2", "-g", *defines.split(), "-o", str(tmp_path / name), str(source), "-lbenchmark", "-lpthread"],
                   check=True, capture_output=True)
    return tmp_path / name


def build_driver(tmp_path: Path, name: str, defines: str = "") -> Path:
    return compile_c(program_text("suite_driver.c"), tmp_path / name, f"-O2 -g {defines}")


def measured(suite: SuiteSpec, binary: Path, workdir: Path) -> dict[str, float]:
    """Each discovered benchmark's value, run once."""
    runner = BenchmarkRunner([], binary, workdir, workdir=workdir)
    discovery = discover(suite, runner)
    assert not discovery.problem
    runner.benchmarks = discovery.specs
    return {run.benchmark: run.value for run in runner.run().runs if run.counts}


def driver_suite(name: str, isolate: bool | str) -> SuiteSpec:
    """The driver's two benchmarks; isolated, `sum` by the suite's pattern and `scan` by its own."""
    names = (("sum", None), ("scan", "scan_table")) if isolate else (("sum", None), ("scan", None))
    return SuiteSpec(name, "command", "{binary} --benchmarks=fill,{name}", "instructions", repetitions=1, warmup=0,
                     isolate=isolate, names=names)


def test_a_command_suite_isolated_is_not_charged_for_the_set_up_its_benchmarks_share(tmp_path):
    """The fill phase every benchmark runs first: a change to it moves every benchmark's whole-
    process count, and none of the isolated counts."""
    small, large = build_driver(tmp_path, "small", "-DFILL_N=20000"), build_driver(tmp_path, "large", "-DFILL_N=60000")
    isolated, whole = driver_suite("iso", "run_{name}"), driver_suite("whole", False)
    before = {**measured(isolated, small, tmp_path), **measured(whole, small, tmp_path)}
    after = {**measured(isolated, large, tmp_path), **measured(whole, large, tmp_path)}
    assert set(before) == {"iso/sum", "iso/scan", "whole/sum", "whole/scan"}
    for benchmark in ("sum", "scan"):
        assert before[f"iso/{benchmark}"] == after[f"iso/{benchmark}"] > 20_000  # the benchmark's own loop alone
        assert after[f"whole/{benchmark}"] > 1.5 * before[f"whole/{benchmark}"]  # the set-up tripled
        assert before[f"whole/{benchmark}"] > 2 * before[f"iso/{benchmark}"]


def test_a_command_suite_lists_its_names_and_reads_a_number_or_says_what_failed(tmp_path):
    binary = build_driver(tmp_path, "driver")
    listed = SuiteSpec("db", "command", "{binary} --benchmarks=fill,{name}", r"(\d+)$", repetitions=1, warmup=0,
                       isolate=False, list_command="{binary} --list", include="s")
    assert measured(listed, binary, tmp_path) == {"db/sum": pytest.approx(measured(listed, binary, tmp_path)["db/sum"]),
                                                  "db/scan": pytest.approx(measured(listed, binary, tmp_path)["db/scan"])}
    runner = BenchmarkRunner([], binary, tmp_path, workdir=tmp_path)
    broken = SuiteSpec("db", "command", "{binary} --benchmarks=fill,{name}", isolate=False, list_command="{binary} --nope")
    assert discover(broken, runner).problem.startswith("list_command failed: exit status 2")
    unmatched = SuiteSpec("db", "command", "{binary} --benchmarks=fill,{name}", repetitions=1, warmup=0,
                          isolate="no_such_function", names=(("sum", None),))
    runner.benchmarks = discover(unmatched, runner).specs
    run = next(run for run in runner.run().runs if not run.warmup)
    assert run.status == "failed" and "no executed function matched" in run.error
    # a pattern that meant a function under another name: the error names the binary's close ones
    near = SuiteSpec("db", "command", "{binary} --benchmarks=fill,{name}", repetitions=1, warmup=0,
                     isolate="scan(void)", names=(("scan", None),))
    runner.benchmarks = discover(near, runner).specs
    run = next(run for run in runner.run().runs if not run.warmup)
    assert run.status == "failed" and "close names: scan_table" in run.error, run.error


@needs_google_benchmark
def test_google_benchmark_discovered_each_run_alone_and_profiled_without_the_others(tmp_path):
    binary = build_google(tmp_path, "bench")
    suite = SuiteSpec("gb", "google-benchmark", "{binary}", "instructions", repetitions=2, warmup=0)
    runner = BenchmarkRunner([], binary, tmp_path, workdir=tmp_path)
    discovery = discover(suite, runner)
    assert [spec.name for spec in discovery.specs] == ["gb/BM_a", "gb/BM_b/500", "gb/BM_b/5000"]
    runner.benchmarks = discovery.specs
    result = runner.run()
    values: dict[str, list[float]] = {}
    for run in result.runs:
        assert run.status == "ok", run.error
        values.setdefault(run.benchmark, []).append(run.value)
    assert all(first == second for first, second in values.values()), "a fixed iteration count: counts repeat"
    assert values["gb/BM_b/5000"][0] > 5 * values["gb/BM_b/500"][0]
    profiles = {name: read_callgrind(path, binary).functions.to_pylist() for name, path in result.callgrind_files.items()}
    # profiles key C++ functions by their mangled symbols, as the static table does: read them demangled
    functions = {name: {demangle(row["function"]) for row in rows if row["self_instructions"]} for name, rows in profiles.items()}
    assert "body_a(int)" in functions["gb/BM_a"] and not any("body_b" in f for f in functions["gb/BM_a"])
    assert "body_b(int)" in functions["gb/BM_b/500"] and not any("body_a" in f for f in functions["gb/BM_b/500"])
    assert not any("shared_table" in f or f == "main" for rows in functions.values() for f in rows)


@needs_google_benchmark
def test_a_google_benchmark_counts_its_timed_loop_not_what_it_prepares_before_it(tmp_path):
    """BM_a's function prepares 100 or 200,000 steps of work before its loop: its count is the
    loop's alone, the same in both builds, and its profile holds the loop's code only."""
    suite = SuiteSpec("gb", "google-benchmark", "{binary}", "instructions", repetitions=1, warmup=0, include="BM_a")
    counts, profiles = {}, {}
    for prepare in (100, 200_000):
        folder = tmp_path / str(prepare)
        folder.mkdir()
        binary = build_google(folder, "bench", f"-DA_PREPARE={prepare}")
        runner = BenchmarkRunner([], binary, folder, workdir=folder)
        runner.benchmarks = discover(suite, runner).specs
        result = runner.run()
        counts[prepare] = result.runs[0].value
        profiles[prepare] = {demangle(row["function"]) for row in read_callgrind(result.callgrind_files["gb/BM_a"], binary)
                             .functions.to_pylist() if row["self_instructions"]}
        assert not list(folder.glob("*.callgrind.*")), "the run's other parts are removed"
    assert counts[100] == counts[200_000] and 2000 < counts[100] < 200_000, counts
    assert all("body_a(int)" in functions and "prepare_a(int)" not in functions for functions in profiles.values())
    # The whole function, as a suite that does not isolate it would count it, holds the preparation.
    whole = SuiteSpec("gb", "google-benchmark", "{binary}", "instructions", repetitions=1, warmup=0, include="BM_a",
                      isolate=False)
    whole_count = measured(whole, tmp_path / "200000" / "bench", tmp_path)["gb/BM_a"]
    assert whole_count > counts[200_000] + 200_000
    # A framework whose loop functions are not found by name: the isolated function is counted
    # whole, its preparation in and the process's start outside it out.
    runner = BenchmarkRunner([], tmp_path / "200000" / "bench", tmp_path, workdir=tmp_path)
    spec = discover(suite, runner).specs[0]
    unfound = dataclasses.replace(spec, loop=TimedLoop("no_such_start()", "no_such_finish()"))
    run = runner.run_once(unfound, 0, 0)
    assert run.status == "ok" and counts[200_000] + 200_000 < run.value < whole_count, run


@needs_google_benchmark
def test_captured_benchmarks_and_names_with_spaces_run_alone_and_isolated(tmp_path):
    """BENCHMARK_CAPTURE's function takes its arguments after the state, and its test case's name
    may hold spaces and a '-': Google Benchmark's POSIX regex rejects Python's escapes of them."""
    binary = build_google(tmp_path, "bench", program="suite_capture.cpp")
    suite = SuiteSpec("gb", "google-benchmark", "{binary}", "instructions", repetitions=2, warmup=0, include="BM_cap")
    runner = BenchmarkRunner([], binary, tmp_path, workdir=tmp_path)
    discovery = discover(suite, runner)
    assert [spec.name for spec in discovery.specs] == ["gb/BM_cap/small", "gb/BM_cap/with space / -"]
    runner.benchmarks = discovery.specs
    values: dict[str, list[float]] = {}
    for run in runner.run().runs:
        assert run.status == "ok", run.error
        values.setdefault(run.benchmark, []).append(run.value)
    assert all(first == second for first, second in values.values())
    assert values["gb/BM_cap/with space / -"][0] > 5 * values["gb/BM_cap/small"][0]  # body_b(3000) against body_b(300)


@needs_google_benchmark
def test_google_benchmark_times_come_from_its_json_report(tmp_path):
    binary = build_google(tmp_path, "bench")
    suite = SuiteSpec("gb", "google-benchmark", "{binary}", "cpu_time", repetitions=1, warmup=0, include="BM_b")
    values = measured(suite, binary, tmp_path)
    assert set(values) == {"gb/BM_b/500", "gb/BM_b/5000"}
    assert 0 < values["gb/BM_b/500"] < values["gb/BM_b/5000"] < 1e-3  # seconds per iteration


def test_the_filter_regex_runs_exactly_the_selected_benchmarks(tmp_path):
    regex = GOOGLE_BENCHMARK.filter(["BM_b/5000", "BM_a", "BM_t<int>"])
    assert regex == r"^(BM_a|BM_b/5000|BM_t<int>)$"
    import re

    assert [name for name in ["BM_a", "BM_ab", "BM_b/500", "BM_b/5000", "BM_t<int>"] if re.search(regex, name)] == \
        ["BM_a", "BM_b/5000", "BM_t<int>"]
    assert (GOOGLE_BENCHMARK.filter([]), GOOGLE_BENCHMARK.filter(None)) == ("^$", ".*")  # none, every one


SUITE_CONFIG = """
[project]
binary = "bench"

[build]
command = "make -s bench"            # the Makefile of each commit says what it defines

[[suite]]
name = "gb"
framework = "google-benchmark"       # every benchmark listed, each run alone and isolated
repetitions = 2
"""


def _commit(repo: Path, defines: str, message: str, config: str = SUITE_CONFIG) -> str:
    (repo / "selector.toml").write_text(config)
    (repo / "Makefile").write_text(f"bench: bench.cpp\n\tg++ -O2 -g {defines} -o bench bench.cpp -lbenchmark -lpthread\n")
    subprocess.run(["git", "add", "-A"], cwd=repo, check=True)
    subprocess.run(["git", "commit", "-qm", message], cwd=repo, check=True)
    return subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo, check=True, capture_output=True, text=True).stdout.strip()


@needs_google_benchmark
@pytest.mark.slow
def test_a_suite_collected_labelled_and_selected_end_to_end(tmp_path):
    """Shared set-up changed: no benchmark changes (isolated); BM_a's own code changed: BM_a
    alone; a commit that adds BM_c and drops BM_b/500: BM_c runs as new, BM_b/500 is gone."""
    repo = tmp_path / "project"
    repo.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    subprocess.run(["git", "config", "user.email", "t@example.com"], cwd=repo, check=True)
    subprocess.run(["git", "config", "user.name", "T"], cwd=repo, check=True)
    shutil.copy(Path(__file__).parent / "programs" / "suite_bench.cpp", repo / "bench.cpp")
    first = _commit(repo, "-DSETUP_N=1000", "base")
    calibrated = run_selector("calibrate", "--repo", str(repo), "--rounds", "1")
    assert calibrated.returncode == 0, calibrated.stderr
    shared = _commit(repo, "-DSETUP_N=300000", "a heavier set-up every benchmark shares")
    own = _commit(repo, "-DSETUP_N=300000 -DA_STEPS=2", "BM_a does twice the work")
    collected = run_selector("collect", "--repo", str(repo), "--format", "json")
    assert collected.returncode == 0, collected.stderr

    labels = Store(repo / ".selector").read("labels").to_pylist()
    changed = {(row["new"], row["benchmark"]): row["label"] for row in labels}
    assert {key: value for key, value in changed.items() if key[0] == shared} == \
        {(shared, "gb/BM_a"): False, (shared, "gb/BM_b/500"): False, (shared, "gb/BM_b/5000"): False}
    assert {key: value for key, value in changed.items() if key[0] == own} == \
        {(own, "gb/BM_a"): True, (own, "gb/BM_b/500"): False, (own, "gb/BM_b/5000"): False}
    assert first not in {row["new"] for row in labels}

    # bisect ranks a suite's benchmark by its stored name: BM_a's own change first
    shipped = Path(__file__).resolve().parents[1] / "selector" / "data" / "cross-project"
    ranked = run_selector("bisect", first, own, "--benchmark", "gb/BM_a", "--repo", str(repo), "--bundle", str(shipped),
                          "--format", "json")
    assert ranked.returncode == 0, ranked.stderr
    assert [row["commit"] for row in json.loads(ranked.stdout)["order"]] == [own, shared]
    unknown = run_selector("bisect", first, own, "--benchmark", "BM_a", "--repo", str(repo), "--bundle", str(shipped))
    assert unknown.returncode != 0 and "known: gb/<name>" in unknown.stderr, unknown.stderr

    added = _commit(repo, "-DSETUP_N=300000 -DA_STEPS=2 -DWITH_C", "BM_c, and BM_b without its 500 argument")
    selected = run_selector("select", "--repo", str(repo), "--format", "json", added)
    assert selected.returncode == 0, selected.stderr  # something runs
    document = json.loads(selected.stdout)
    decisions = {d["name"]: d for d in document["benchmarks"]}
    assert set(decisions) == {"gb/BM_a", "gb/BM_b/5000", "gb/BM_c"}
    assert decisions["gb/BM_c"]["decision"] == "run" and "a new benchmark" in decisions["gb/BM_c"]["reason"]
    assert any("gb/BM_b/500" in note and "no longer exist" in note for note in document["notes"])

    filtered = run_selector("select", "--repo", str(repo), "--filter", added)
    assert filtered.returncode == 0 and filtered.stdout.strip() == r"^(BM_c)$", filtered.stderr
    github = run_selector("select", "--repo", str(repo), "--format", "github", added, env={"GITHUB_OUTPUT": ""})
    outputs = dict(line.split("=", 1) for line in github.stdout.splitlines())
    assert json.loads(outputs["matrix"]) == {"benchmark": ["gb/BM_c"]}
    assert json.loads(outputs["filters"]) == {"gb": r"^(BM_c)$"}


@needs_google_benchmark
def test_google_benchmark_results_ci_wrote_are_recorded_as_the_suites(tmp_path):
    """A results file of the binary itself (--benchmark_out): its benchmarks stored under the
    suite's names and metric, the suite's filter applied; refused for a suite counting instructions."""
    repo = tmp_path / "project"
    repo.mkdir()
    for setting in (["init", "-q"], ["config", "user.email", "t@example.com"], ["config", "user.name", "T"]):
        subprocess.run(["git", *setting], cwd=repo, check=True)
    shutil.copy(Path(__file__).parent / "programs" / "suite_bench.cpp", repo / "bench.cpp")
    commit = _commit(repo, "", "base")
    subprocess.run(["make", "-s", "bench"], cwd=repo, check=True, capture_output=True)
    results = tmp_path / "results.json"
    subprocess.run([str(repo / "bench"), "--benchmark_repetitions=3", "--benchmark_min_time=0.01",
                    f"--benchmark_out={results}", "--benchmark_out_format=json"], check=True, capture_output=True)

    refused = run_selector("record", "--repo", str(repo), "--import", str(results))
    assert refused.returncode != 0 and "counts instructions" in refused.stderr, refused.stderr

    timed = tmp_path / "timed.toml"
    timed.write_text(SUITE_CONFIG.replace("repetitions = 2", 'repetitions = 2\nmetric = "cpu_time"\nexclude = "BM_b/5000"'))
    recorded = run_selector("record", "--repo", str(repo), "--config", str(timed), "--import", str(results),
                            "--format", "json")
    assert recorded.returncode == 0, recorded.stderr
    assert json.loads(recorded.stdout)["imported_rows"] == 6
    rows = Store(repo / ".selector").read_one("measurements", commit).to_pylist()
    assert {(row["benchmark"], row["metric"]) for row in rows} == {("gb/BM_a", "cpu_time"), ("gb/BM_b/500", "cpu_time")}
    assert all(row["status"] == "ok" and 0 < row["value"] < 1e-3 for row in rows)
    assert sorted(row["repetition"] for row in rows if row["benchmark"] == "gb/BM_a") == [0, 1, 2]

    unknown = run_selector("record", "--repo", str(repo), "--config", str(timed), "--import", str(results),
                           "--suite", "nope", "--force")
    assert unknown.returncode != 0 and "--suite nope: no such [[suite]]" in unknown.stderr, unknown.stderr


@needs_google_benchmark
@pytest.mark.slow
def test_a_timed_suites_labels_are_confirmed_by_interleaved_runs_of_its_listed_benchmarks(tmp_path):
    """cpu_time of a Google Benchmark suite: collected over two commits, then every label of
    BM_a confirmed (the suite listed again on the stored binaries); the pair's runs are stored
    under a file name the suite's "/" cannot break."""
    repo = tmp_path / "project"
    repo.mkdir()
    for setting in (["init", "-q"], ["config", "user.email", "t@example.com"], ["config", "user.name", "T"]):
        subprocess.run(["git", *setting], cwd=repo, check=True)
    shutil.copy(Path(__file__).parent / "programs" / "suite_bench.cpp", repo / "bench.cpp")
    timed = SUITE_CONFIG.replace("repetitions = 2", 'repetitions = 3\nmetric = "cpu_time"\ninclude = "BM_a"\n'
                                 'command = "{binary} --benchmark_min_time=0.01"') + '\n[profile]\ntool = "none"\n'
    _commit(repo, "", "base", config=timed)
    newer = _commit(repo, "-DA_STEPS=3", "BM_a does three times the work", config=timed)
    collected = run_selector("collect", "--repo", str(repo), "--no-calibrate", "--format", "json")
    assert collected.returncode == 0, collected.stderr
    measured = Store(repo / ".selector").read("measurements").to_pylist()
    assert {(row["metric"], row["unit"]) for row in measured} == {("cpu_time", "s")}  # seconds an iteration
    confirmed = run_selector("confirm", "--repo", str(repo), "--all", "--rounds", "6", "--format", "json")
    assert confirmed.returncode == 0, confirmed.stderr
    store = Store(repo / ".selector")
    runs = store.read("confirmations").to_pylist()
    assert {row["benchmark"] for row in runs} == {"gb/BM_a"} and {row["new"] for row in runs} == {newer}
    assert sum(row["status"] == "ok" and row["round"] >= 0 for row in runs) >= 6, runs
    label = next(row for row in store.read("labels").to_pylist() if row["new"] == newer)
    assert label["decided_by"] == "confirmation" and label["label"] is True  # three times the work


def _many(count: int, runs: int) -> Selection:
    decisions = [Decision(f"gb/BM_n/{i}", "run" if i < runs else "skip",
                          "changed code executed" if i < runs else f"no changed code executed ({i % 2})") for i in range(count)]
    return Selection("f" * 40, None, decisions, None, [])


def test_a_large_suite_prints_runs_first_groups_skips_and_keeps_github_within_its_matrix(capsys, monkeypatch, tmp_path):
    from perf_selector.selector.selection.selection_output import GITHUB_MATRIX_LIMIT, print_text, suite_filters, write_github_outputs

    selection = _many(300, 290)
    monkeypatch.setenv("GITHUB_OUTPUT", str(tmp_path / "outputs"))
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    write_github_outputs(selection)
    outputs = dict(line.split("=", 1) for line in (tmp_path / "outputs").read_text().splitlines())
    jobs = json.loads(outputs["matrix"])["benchmark"]
    assert len(jobs) <= GITHUB_MATRIX_LIMIT
    assert sorted(name for job in jobs for name in job.split(" ")) == sorted(selection.run)
    import re

    regex = suite_filters(selection)["gb"]
    assert [i for i in range(300) if re.search(regex, f"BM_n/{i}")] == list(range(290))

    print_text(_many(200, 3))
    text = capsys.readouterr().out
    assert text.index("gb/BM_n/0") < text.index("skipped, by reason")
    assert "3 run, 197 skip" in text and "gb/BM_n/150" not in text  # 197 skips in two rows, not 197
    assert "99 │ no changed code executed (1)" in text and "98 │ no changed code executed (0)" in text
