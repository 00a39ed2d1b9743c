"""The benchmark runner on real processes: metrics, random order, and every way a run can fail."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from scipy.stats import binomtest

from perf_selector.collectors.benchmark_runner import BenchmarkRunner, BenchmarkSpec
from perf_selector.storage.labels import label_pair
from tests.helpers import compile_c

FIB = "#include <stdio.h>\n#include <stdlib.h>\nlong fib(int n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }\n" \
      "int main(int c, char **v) { printf(\"rate=%ld\\n\", fib(atoi(v[1]))); return 0; }\n"


@pytest.fixture(scope="module")
def fib_binary(tmp_path_factory) -> Path:
    return compile_c(FIB, tmp_path_factory.mktemp("fib") / "fib", "-O1 -g")


def runner(binary: Path, specs: list[BenchmarkSpec], tmp_path: Path, seed: int = 1) -> BenchmarkRunner:
    return BenchmarkRunner(specs, binary, tmp_path, seed=seed, workdir=tmp_path)


def test_metrics_order_and_warmups(fib_binary, tmp_path):
    specs = [
        BenchmarkSpec("wall", "{binary} 20", "wall_time", repetitions=4, timeout=30, warmup=1),
        BenchmarkSpec("count", "{binary} 20", "instructions", repetitions=2, timeout=60, warmup=0),
        BenchmarkSpec("rate", "{binary} 10", r"rate=(\d+)", direction="higher", repetitions=3, timeout=30, warmup=0),
    ]
    result = runner(fib_binary, specs, tmp_path).run()
    measured = [run for run in result.runs if run.repetition >= 0]
    assert all(run.status == "ok" for run in result.runs)
    assert [run.order for run in result.runs] == list(range(len(result.runs)))
    assert result.runs[0].repetition == -1  # the warm-up comes first
    assert {run.benchmark for run in measured[:4]} != {"wall"}, "measured runs are interleaved across benchmarks"
    counts = [run.value for run in measured if run.benchmark == "count"]
    assert counts[0] == counts[1] > 10_000  # callgrind counts repeat exactly for a deterministic program
    assert {run.value for run in measured if run.benchmark == "rate"} == {55.0}
    assert all(0 < run.value < 30 for run in measured if run.benchmark == "wall")
    assert "count" in result.callgrind_files and result.child_seconds > 0


def test_crash_hang_and_missing_number_are_recorded_and_the_suite_goes_on(fib_binary, tmp_path):
    specs = [
        BenchmarkSpec("crash", "sh -c 'kill -SEGV $$'", "wall_time", repetitions=1, timeout=30, warmup=0),
        BenchmarkSpec("hang", "sleep 30", "wall_time", repetitions=1, timeout=1, warmup=0),
        BenchmarkSpec("silent", "{binary} 5", r"throughput=(\d+)", repetitions=1, timeout=30, warmup=0),
        BenchmarkSpec("exit", "sh -c 'echo broken >&2; exit 3'", "wall_time", repetitions=1, timeout=30, warmup=0),
        BenchmarkSpec("fine", "{binary} 5", "wall_time", repetitions=2, timeout=30, warmup=0),
    ]
    started = time.monotonic()
    result = runner(fib_binary, specs, tmp_path).run()
    assert time.monotonic() - started < 15
    errors = {run.benchmark: run.error for run in result.runs if run.status == "failed"}
    assert errors["crash"].startswith("killed by SIGSEGV")
    assert errors["hang"] == "timed out after 1 s"
    assert "no match for /throughput=(\\d+)/" in errors["silent"]
    assert errors["exit"] == "exit status 3: broken"
    assert [run.status for run in result.runs if run.benchmark == "fine"] == ["ok", "ok"]


def test_missing_program_is_a_failed_run(tmp_path):
    spec = BenchmarkSpec("gone", "/nonexistent/program", "wall_time", repetitions=1, warmup=0)
    (run,) = runner(Path("/nonexistent/program"), [spec], tmp_path).run().runs
    assert run.status == "failed" and "cannot start" in run.error


@pytest.mark.slow
def test_aa_false_positive_rate_is_consistent_with_alpha(fib_binary, tmp_path):
    """A/A with wall time on a real benchmark: each of 40 rounds runs 10 repetitions in
    random order, split 5/5, labelled with min_effect 0 so the test alone decides.
    Under equality Mann-Whitney U rejects at most alpha of the time; the count of false
    positives must not be significantly above Binomial(40, 0.05) (one-sided p > 0.01),
    which tolerates up to 6 of 40."""
    spec = BenchmarkSpec("wall", "{binary} 18", "wall_time", repetitions=10, timeout=30, warmup=1)
    positives = 0
    rounds = 40
    for round_number in range(rounds):
        runs = [r for r in runner(fib_binary, [spec], tmp_path, seed=round_number).run().runs if r.repetition >= 0]
        group_a = [r.value for r in runs if r.repetition < 5]
        group_b = [r.value for r in runs if r.repetition >= 5]
        positives += bool(label_pair(group_a, group_b, alpha=0.05, min_effect=0.0).label)
    assert binomtest(positives, rounds, 0.05, alternative="greater").pvalue > 0.01, positives


def test_a_real_difference_is_labelled_and_its_direction_known(fib_binary, tmp_path):
    specs = [BenchmarkSpec("small", "{binary} 12", "instructions", repetitions=1, warmup=0),
             BenchmarkSpec("large", "{binary} 16", "instructions", repetitions=1, warmup=0)]
    runs = {r.benchmark: r.value for r in runner(fib_binary, specs, tmp_path).run().runs}
    label = label_pair([runs["small"]], [runs["large"]], alpha=0.05, min_effect=0.01, exact=True, direction="lower")
    assert label.label and label.regression and label.effect > 0.1  # dynamic loading dominates both
    unsure = label_pair([runs["small"]], [runs["large"]], alpha=0.05, min_effect=0.01, exact=False)
    assert unsure.label is None and "calibrate" in unsure.reason


def test_runs_can_be_pinned_to_a_cpu(tmp_path):
    last_cpu = str((__import__("os").cpu_count() or 1) - 1)
    spec = BenchmarkSpec("where", "grep Cpus_allowed_list /proc/self/status", r"Cpus_allowed_list:\s+(\d+)\s*$",
                         repetitions=1, warmup=0)
    pinned = BenchmarkRunner([spec], Path("/bin/true"), tmp_path, cpu=last_cpu, workdir=tmp_path).run().runs
    assert [(run.status, run.value) for run in pinned] == [("ok", float(last_cpu))]


def test_setup_runs_before_every_run_unmeasured_and_its_failure_fails_the_run(tmp_path):
    """A benchmark that changes its state (appends to a file here) starts afresh from its set-up
    before every run, warm-ups included; the count covers the measured process alone."""
    program = "#include <stdio.h>\nint main(void) { FILE *f = fopen(\"state\", \"a\"); fputs(\"x\", f); fclose(f);\n" \
              "  f = fopen(\"state\", \"r\"); int n = 0; while (fgetc(f) != EOF) n++; printf(\"size=%d\\n\", n); return 0; }\n"
    binary = compile_c(program, tmp_path / "grow", "-O1 -g")
    fresh = "sh -c 'rm -f state; echo started >> setups'"
    specs = [
        BenchmarkSpec("grows", "{binary}", r"size=(\d+)", repetitions=3, timeout=30, warmup=1, setup=fresh),
        BenchmarkSpec("counted", "{binary}", "instructions", repetitions=2, timeout=60, warmup=0, setup=fresh),
        BenchmarkSpec("broken", "{binary}", r"size=(\d+)", repetitions=1, timeout=30, warmup=0, setup="sh -c 'exit 4'"),
    ]
    result = runner(binary, specs, tmp_path).run()
    values = {run.benchmark: [] for run in result.runs}
    for run in result.runs:
        values[run.benchmark].append(run.value)
    assert values["grows"] == [1.0] * 4  # the warm-up and three measured runs each began from nothing
    counted = values["counted"]
    assert counted[0] == counted[1] > 0, "a fresh state before each run: the counts repeat"
    assert (tmp_path / "setups").read_text().count("started") == 6  # 4 + 2: the broken one's set-up is its own
    broken = next(run for run in result.runs if run.benchmark == "broken")
    assert broken.status == "failed" and broken.error == "setup failed: exit status 4"


def test_cpu_time_is_the_work_of_the_process_and_its_children_without_their_waits(fib_binary, tmp_path):
    # fib(30) computes for tens of milliseconds; a shell runs it and then sleeps 0.3 s: the
    # sleep is wall time, not CPU time, and the shell's child is counted in its CPU time.
    specs = [
        BenchmarkSpec("cpu", "sh -c '{binary} 30 && sleep 0.3'", "cpu_time", repetitions=2, timeout=30, warmup=0),
        BenchmarkSpec("wall", "sh -c '{binary} 30 && sleep 0.3'", "wall_time", repetitions=2, timeout=30, warmup=0),
        BenchmarkSpec("alone", "{binary} 30", "cpu_time", repetitions=2, timeout=30, warmup=0),
    ]
    result = runner(fib_binary, specs, tmp_path).run()
    assert all(run.status == "ok" for run in result.runs)
    values = {name: [run.value for run in result.runs if run.benchmark == name] for name in ("cpu", "wall", "alone")}
    assert all(0.002 < value < 0.29 for value in values["cpu"] + values["alone"])
    assert all(value >= 0.3 for value in values["wall"])
    assert min(values["cpu"]) > 0.5 * min(values["alone"])  # the child's work is the shell's CPU time
    # A failed run keeps its failure; its CPU time is not a value.
    failing = [BenchmarkSpec("exit", "sh -c 'exit 3'", "cpu_time", repetitions=1, timeout=30, warmup=0)]
    (run,) = runner(fib_binary, failing, tmp_path).run().runs
    assert run.status == "failed" and run.value is None and run.error == "exit status 3"
