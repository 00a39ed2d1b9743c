"""Google Benchmark: a binary that lists its benchmarks (``--benchmark_list_tests``), runs one
alone by a filter and reports in JSON.

It picks its iteration count from elapsed time, which under callgrind would make counts vary:
for instruction counts each benchmark runs a fixed number of iterations,
``--benchmark_min_time=1x`` (1.8 and later) or ``=0`` before 1.8 (which stops after the
first, single-iteration run).  Isolated, a benchmark counts its timed loop alone (callgrind
zeroes its costs when ``State::StartKeepRunning`` is entered and dumps them when
``State::FinishKeepRunning`` is): with one iteration, what a benchmark's function prepares
before its loop can outweigh the loop itself.
"""

from __future__ import annotations

import json
import re
from typing import Any

from perf_selector.collectors.frameworks.base import TimedLoop
from perf_selector.collectors.frameworks.base import LISTING_TIMEOUT, Framework, Member, Result, Runs, arguments, ere_escape
from perf_selector.collectors.metrics import INSTRUCTIONS, METRICS, PRINTED, WALL_TIME, registered

_FIXED_ITERATIONS = ("--benchmark_min_time=1x", "--benchmark_min_time=0")  # >= 1.8, then older
_SECONDS = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}
_INCLUDE = re.compile(r'#\s*include\s*[<"]benchmark/benchmark\.h[>"]')
_REGISTRATION = re.compile(r"\bBENCHMARK(?:_[A-Z0-9_]+)?\s*\(\s*(\w+)")
LOOP = TimedLoop("benchmark::State::StartKeepRunning()", "benchmark::State::FinishKeepRunning()")


class GoogleBenchmark(Framework):
    name = "google-benchmark"
    title = "Google Benchmark"
    include, registration = _INCLUDE, _REGISTRATION
    listed = "The binary lists its benchmarks at every commit (--benchmark_list_tests); each runs alone,"
    results_format, suite_name, timed_metric = name, "gb", "real_time"
    times = ("real_time", "cpu_time")  # per-iteration times of its report, in its time_unit
    timed_loop = True
    # 1.9's BENCHMARK_MAIN executes the program again with address space randomisation off
    reexecutes = "MaybeReenterWithoutASLR"

    def listing(self, suite: Any, runner: Runs) -> tuple[list[tuple[str, Any]], str] | str:
        """The listing is asked with each way of fixing iterations until the binary accepts one:
        the one it accepts is what every benchmark runs with."""
        fixings = _FIXED_ITERATIONS if suite.metric == INSTRUCTIONS.name else ("",)
        failure = ""
        for fixing in fixings:
            command = f"{suite.command} --benchmark_list_tests {fixing}".strip()
            outcome = runner.execute(runner.expand(command), min(suite.timeout, LISTING_TIMEOUT))
            if not outcome.failure:
                return [(line.strip(), None) for line in outcome.stdout.splitlines() if line.strip()], fixing
            failure = outcome.failure
        return f"--benchmark_list_tests failed: {failure}"

    def member(self, suite: Any, name: str, detail: Any, extra: str) -> Member:
        words = [f"--benchmark_filter=^{ere_escape(name)}$", "--benchmark_format=json"]
        if suite.metric == INSTRUCTIONS.name and extra:
            words.append(extra)
        # The function a benchmark's name starts with ("BM_copy/64" runs BM_copy(benchmark::State&)),
        # as callgrind names it demangled.
        # BENCHMARK_CAPTURE passes its arguments after the state: "BM_copy(benchmark::State&, int)".
        isolation = f"*{name.split('/')[0]}(benchmark::State&*" if suite.isolate is True else None
        # Isolated, a benchmark counts its timed loop alone: under one iteration what its function
        # prepares before the loop (BM_UFlat compresses its input) would otherwise be most of it.
        loop = LOOP if isolation and suite.metric == INSTRUCTIONS.name else None
        return Member(arguments(suite.command, *words), isolation, self.name, loop)

    def value(self, stdout: str, metric: str, benchmark: str) -> tuple[float | None, str]:
        """The metric of a JSON report: real_time and cpu_time in seconds, any other field or user
        counter as reported."""
        try:
            records = [record for record in json.loads(stdout).get("benchmarks", [])
                       if record.get("run_type", "iteration") == "iteration"]
        except (json.JSONDecodeError, AttributeError) as error:
            return None, f"no Google Benchmark JSON report in the output ({error})"
        if not records:
            return None, f"the JSON report has no run of {benchmark}"
        values = [record.get(metric) for record in records]
        if any(not isinstance(value, (int, float)) for value in values):
            return None, f"the JSON report has no number {metric!r} (fields: {', '.join(sorted(records[0]))})"
        scale = _SECONDS.get(records[0].get("time_unit", "ns"), 1.0) if metric in self.times else 1.0
        return sum(values) / len(values) * scale, ""

    def metric_problem(self, metric: str) -> str | None:
        if registered(metric) is not None:
            return None  # cpu_time: its own field
        return None if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_.]*", metric) else \
            f"a Google Benchmark metric is one of {', '.join(METRICS)}, real_time or a user counter's name"

    def recognizes(self, text: str) -> bool:
        try:
            document = json.loads(text)
        except ValueError:
            return False
        return isinstance(document, dict) and "context" in document and "benchmarks" in document

    def results(self, text: str, field: str) -> list[Result]:
        """Every ``iteration`` entry of a JSON report (aggregates such as mean/median are skipped,
        they are not samples); `field` is real_time (metric wall_time), cpu_time (in seconds too)
        or a user counter (as reported), the metric then named by the field."""
        counters: dict[str, int] = {}
        found = []
        for entry in json.loads(text)["benchmarks"]:
            if entry.get("run_type", "iteration") != "iteration" or entry.get("error_occurred"):
                continue
            name = entry.get("run_name", entry["name"])
            repetition = counters.get(name, 0)
            counters[name] = repetition + 1
            if field not in entry:
                raise KeyError(f"{name} has no {field!r} (fields: {', '.join(sorted(entry))})")
            timed = field in self.times
            value = float(entry[field]) * (_SECONDS[entry.get("time_unit", "ns")] if timed else 1.0)
            if field == "real_time":  # what the other readers call wall_time
                found.append(Result(name, repetition, value, WALL_TIME.name, WALL_TIME.unit, value))
            else:
                found.append(Result(name, repetition, value, field, "s" if timed else PRINTED, value if timed else 0.0))
        return found

    def import_field(self, metric: str | None) -> str:
        if metric is None or metric in (WALL_TIME.name, "real_time", INSTRUCTIONS.name):
            return "real_time"
        return metric


GOOGLE_BENCHMARK = GoogleBenchmark()
