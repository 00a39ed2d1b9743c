"""Benchmark suites: one binary that holds many named benchmarks, discovered at each commit.

A C++ project's benchmarks mostly live in a framework binary (Google Benchmark) or in a
driver of its own (LevelDB's ``db_bench``) that runs one benchmark by name.  A suite is
declared once; at each commit its benchmarks are listed from the built binary (or from
the configured names), and each becomes an ordinary :class:`BenchmarkSpec` named
``<suite>/<benchmark>`` that runs that benchmark alone.

Under callgrind a suite's benchmark can be *isolated*: only the instructions executed
inside the benchmark's own function are counted (``--toggle-collect``), so set-up code
that every benchmark of the binary shares (``main``, the framework, a database filled
before a read benchmark) is counted in none of them, and a change to it is not a change
of every benchmark at once.

How each framework lists, runs, isolates and reads its benchmarks is its module's, in
``collectors/frameworks/`` (the registry); a suite names its framework.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from perf_selector.collectors.benchmark_runner import BenchmarkRunner, BenchmarkSpec
from perf_selector.collectors.frameworks import Member, framework
from perf_selector.collectors.frameworks.base import with_name as _with_name
from perf_selector.collectors.metrics import INSTRUCTIONS

SEPARATOR = "/"  # between a suite's name and its benchmark's
EVERY_MEMBER = "*"  # "<suite>/*": every benchmark of the suite, where they are not known (select failed)


@dataclass(frozen=True)
class SuiteSpec:
    name: str
    framework: str  # a registered framework's name (collectors/frameworks)
    command: str  # the binary and fixed arguments; a command suite's: a template with {name}
    metric: str = INSTRUCTIONS.name  # a registered metric | a field of the framework's report | a regex (command)
    direction: str = "lower"
    repetitions: int = 5
    timeout: float = 300
    warmup: int = 1
    reuse: bool = True
    setup: str | None = None
    include: str | None = None  # regex: keep only the discovered names it finds
    exclude: str | None = None  # regex: drop the discovered names it finds
    isolate: bool | str = True  # bool; a command suite's: a callgrind pattern with {name}, or none
    names: tuple[tuple[str, str | None], ...] = ()  # command: (name, its own isolation pattern)
    list_command: str | None = None  # command: prints one name per line


@dataclass
class Discovery:
    """What a suite holds at one commit: a spec per benchmark, or why it could not be listed."""

    suite: str
    specs: list[BenchmarkSpec] = field(default_factory=list)
    problem: str = ""


def member_name(suite: str, benchmark: str) -> str:
    """How a suite's benchmark is named in the store and every output."""
    return f"{suite}{SEPARATOR}{benchmark}"


def suite_of(benchmark: str) -> str | None:
    """The suite a stored benchmark name belongs to (None for a [[benchmark]])."""
    suite, separator, _ = benchmark.partition(SEPARATOR)
    return suite if separator else None


def discover(suite: SuiteSpec, runner: BenchmarkRunner) -> Discovery:
    """The suite's benchmarks on the binary `runner` runs, each a spec that runs it alone."""
    listed = framework(suite.framework).listing(suite, runner)
    if isinstance(listed, str):
        return Discovery(suite.name, problem=listed)
    names, extra = listed
    return Discovery(suite.name, [_spec(suite, name, detail, extra) for name, detail in names if kept_by(suite, name)])


def member_spec(suite: SuiteSpec, name: str) -> BenchmarkSpec:
    """A stored benchmark of the suite ("<suite>/<name>") as the suite's listing would make it,
    without listing it: its settings for planning; what runs it (the iteration flag a Google
    Benchmark binary takes) is known only from the binary (:func:`discover`)."""
    return _spec(suite, name.removeprefix(suite.name + SEPARATOR), None, "")


def kept_by(suite: SuiteSpec, name: str) -> bool:
    """Does the suite's include/exclude filter keep a discovered benchmark of this name?"""
    if suite.include and not re.search(suite.include, name):
        return False
    return not (suite.exclude and re.search(suite.exclude, name))


def _spec(suite: SuiteSpec, name: str, detail, extra: str) -> BenchmarkSpec:
    member: Member = framework(suite.framework).member(suite, name, detail, extra)
    counted = suite.metric == INSTRUCTIONS.name
    return BenchmarkSpec(
        member_name(suite.name, name), member.command, suite.metric, suite.direction, suite.repetitions, suite.timeout,
        suite.warmup, suite.reuse, _with_name(suite.setup, name) if suite.setup else None,
        isolate=member.isolate if counted else None, output=member.output, loop=member.loop if counted else None)


def metric_problem(framework_name: str, metric: str) -> str | None:
    """What is wrong with a suite's metric for its framework, or None."""
    return framework(framework_name).metric_problem(metric)
