"""Catch2 (2.x) benchmarks: ``BENCHMARK("name") { ... };`` inside a TEST_CASE of a test binary
built with CATCH_CONFIG_ENABLE_BENCHMARKING.

A benchmark is named ``<test case>/<benchmark>`` (split at the last '/': a benchmark's own
name holds none).  Catch2 has no filter for one benchmark: the member runs its test case
alone (by name) and the benchmark is picked out of what that runs.  The binary lists
test cases, not benchmarks, so the suite is listed by running the binary once natively
with its shortest settings (one sample, no warm-up, no analysis) and reading its XML
report: every test case, hidden ones (``[!benchmark]``, ``[.]``) too.

Its timed part, under callgrind: Catch2 sizes its samples by the clock (an estimate run of
1, 2, 4, ... iterations until a minimum time has passed, then samples of the iterations
that time calls for), so a count of the whole run, or of all its samples, moves with the
machine's speed.  What does not is the first measured call of the benchmark's function,
which always runs one iteration: collection is on only inside Catch2's call of the
benchmark function (``BenchmarkFunction::model<...>::call``), each call is dumped apart,
a dump marks each benchmark's start (``benchmarkPreparing``), and the count is the first
call after the start of the benchmark's position in its test case.  With ``isolate =
false`` the whole process is counted, clock-dependent: pair it with [run] fixed_clock.
Timed, the metric is ``mean``: the report's mean time of one iteration, in seconds.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ElementTree
from typing import Any, Iterator

from perf_selector.collectors.frameworks.base import LISTING_TIMEOUT, Framework, Member, Result, Runs, TimedLoop, arguments
from perf_selector.collectors.metrics import INSTRUCTIONS, METRICS, registered

SEPARATOR = "/"  # between a test case's name and its benchmark's
MEAN = "mean"
_SHORTEST = ("--benchmark-samples", "1", "--benchmark-warmup-time", "0")
_EVERY_TEST_CASE = "*,[.]"  # the visible test cases and the hidden ones
_CALL = "Catch::Benchmark::Detail::BenchmarkFunction::model<*>::call(*"
# The same functions, spelled apart: callgrind keeps one setting a pattern, so the dump after
# each call needs a pattern of its own beside the one that toggles collection.
_CALL_DUMPED = "*BenchmarkFunction::model<*>::call(*"
_INCLUDE = re.compile(r'#\s*include\s*[<"](?:catch2/)?(?:catch|catch_all|benchmark/catch_benchmark)\.hpp[>"]')
_BENCHMARK = re.compile(r'\bBENCHMARK(?:_ADVANCED)?\s*\(\s*"((?:[^"\\]|\\.)*)"')
_SPECIAL = re.compile(r'([\\,\[\]*"~])')  # what Catch2's test spec parser reads as syntax


class Catch2(Framework):
    name = suite_name = results_format = "catch2"
    title = "Catch2"
    include, registration = _INCLUDE, _BENCHMARK
    listed = "The test binary's XML report lists its benchmarks at every commit; each runs with its test case,"
    stored_as = "<test case>/<benchmark>"
    times, timed_metric, timed_loop = (MEAN,), MEAN, True

    def include_example(self, names: tuple[str, ...]) -> str:
        return f"/({'|'.join(re.escape(name) for name in names[:2])})$"

    def listing(self, suite: Any, runner: Runs) -> tuple[list[tuple[str, Any]], str] | str:
        """Each benchmark, with its position in its test case (which run of it to count)."""
        command = arguments(suite.command, "-r", "xml", *_SHORTEST, "--benchmark-no-analysis", _EVERY_TEST_CASE)
        outcome = runner.execute(runner.expand(command), min(suite.timeout, LISTING_TIMEOUT))
        try:
            found = list(_benchmarks(outcome.stdout))
        except ElementTree.ParseError as error:
            return f"no Catch2 XML report of its benchmarks ({outcome.failure or error})"
        if outcome.failure and not found:
            return f"listing its benchmarks failed: {outcome.failure}"
        return [(member_name(test_case, benchmark), position) for test_case, benchmark, position, _ in found], ""

    def member(self, suite: Any, name: str, detail: Any, extra: str) -> Member:
        test_case, _ = split(name)
        counted = suite.metric == INSTRUCTIONS.name
        words = [spec_of(test_case), "-r", "xml", "--benchmark-no-analysis", *(_SHORTEST if counted else ())]
        isolation = _CALL if suite.isolate is True else None
        loop = TimedLoop(None, _CALL_DUMPED, after=True, marker="*benchmarkPreparing(*", position=detail or 0) \
            if isolation and counted else None
        return Member(arguments(suite.command, *words), isolation, self.name, loop)

    def value(self, stdout: str, metric: str, benchmark: str) -> tuple[float | None, str]:
        """`benchmark`: the stored name, "<suite>/<test case>/<benchmark>"."""
        if metric != MEAN:
            return None, f"Catch2 reports no {metric!r} (its metric is {MEAN})"
        member = benchmark.partition(SEPARATOR)[2]
        try:
            found = {member_name(t, b): mean for t, b, _, mean in _benchmarks(stdout)}
        except ElementTree.ParseError as error:
            return None, f"no Catch2 XML report in the output ({error})"
        if member not in found:
            test_case, name = split(member)
            return None, f"the XML report has no benchmark {name!r} of test case {test_case!r}"
        return found[member], ""

    def metric_problem(self, metric: str) -> str | None:
        if registered(metric) is not None or metric == MEAN:
            return None
        return f"a Catch2 metric is one of {', '.join(METRICS)} or {MEAN} (the report's mean time of one iteration)"

    def recognizes(self, text: str) -> bool:
        return text.lstrip().startswith("<") and "<Catch" in text[:2000]

    def results(self, text: str, field: str) -> list[Result]:
        """The mean of each benchmark of a report (``-r xml``), in seconds."""
        counters: dict[str, int] = {}
        found = []
        for test_case, benchmark, _, mean in _benchmarks(text):
            name = member_name(test_case, benchmark)
            repetition = counters.get(name, 0)
            counters[name] = repetition + 1
            found.append(Result(name, repetition, mean, MEAN, "s", mean))
        return found

    def import_field(self, metric: str | None) -> str:
        return MEAN

    def filter(self, names: list[str] | None) -> str:
        """A test spec of the test cases that hold these benchmarks (Catch2 runs a test case
        whole: its other benchmarks run too), hidden ones included; "~*" runs none."""
        if names is None:
            return _EVERY_TEST_CASE
        test_cases = sorted({split(name)[0] for name in names})
        return ",".join(spec_of(test_case) for test_case in test_cases) if test_cases else "~*"


def member_name(test_case: str, benchmark: str) -> str:
    return f"{test_case}{SEPARATOR}{benchmark}"


def split(name: str) -> tuple[str, str]:
    """(test case, benchmark) of a member's name."""
    test_case, _, benchmark = name.rpartition(SEPARATOR)
    return test_case, benchmark


def spec_of(test_case: str) -> str:
    """A Catch2 test spec that runs exactly the test case of this name (hidden or not)."""
    return _SPECIAL.sub(r"\\\1", test_case)


def _benchmarks(text: str) -> Iterator[tuple[str, str, int, float]]:
    """(test case, benchmark, its position in the test case, its mean in seconds) of an XML report."""
    root = ElementTree.fromstring(text[text.find("<"):] if "<" in text else text)
    for test_case in root.iter("TestCase"):
        for position, result in enumerate(test_case.iter("BenchmarkResults")):
            mean = result.find("mean")
            yield (test_case.get("name", ""), result.get("name", ""), position,
                   float(mean.get("value")) * 1e-9 if mean is not None else float("nan"))


CATCH2 = Catch2()
