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

Google Benchmark picks its iteration count from elapsed time, which under callgrind
would make counts vary: for instruction counts each benchmark runs a fixed number of
iterations, ``--benchmark_min_time=1x`` (1.8 and later) or ``=0`` before 1.8 (which
stops after the first, single-iteration run).  An isolated Google Benchmark counts its
timed loop alone (callgrind zeroes its costs when ``State::StartKeepRunning`` is entered
and dumps them when ``State::FinishKeepRunning`` is): with one iteration, what a
benchmark's function prepares before its loop can outweigh the loop itself.
"""

from __future__ import annotations

import re
import shlex
import string
from dataclasses import dataclass, field

from collectors.benchmark_runner import GOOGLE_JSON, INSTRUCTIONS, TEXT, BenchmarkRunner, BenchmarkSpec
from collectors.metrics import METRICS, registered
from collectors.callgrind import GOOGLE_BENCHMARK_LOOP, TimedLoop

GOOGLE_BENCHMARK, COMMAND = "google-benchmark", "command"
SEPARATOR = "/"  # between a suite's name and its benchmark's
EVERY_MEMBER = "*"  # "<suite>/*": every benchmark of the suite, where they are not known (select failed)
_FIXED_ITERATIONS = ("--benchmark_min_time=1x", "--benchmark_min_time=0")  # >= 1.8, then older
_LISTING_TIMEOUT = 60  # seconds for a binary to list its benchmarks


@dataclass(frozen=True)
class SuiteSpec:
    name: str
    framework: str  # google-benchmark | command
    command: str  # google-benchmark: the binary and fixed arguments; command: a template with {name}
    metric: str = INSTRUCTIONS  # instructions | wall_time | cpu_time | a Google Benchmark field | a regex (command)
    direction: str = "lower"
    repetitions: int = 5
    timeout: float = 300
    warmup: int = 1
    reuse: bool = True
    setup: str | None = None
    include: str | None = None  # regex: keep only the discovered names it finds
    exclude: str | None = None  # regex: drop the discovered names it finds
    isolate: bool | str = True  # google-benchmark: bool; command: a callgrind pattern with {name}, or none
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
    listed = _google_listing(suite, runner) if suite.framework == GOOGLE_BENCHMARK else _command_listing(suite, runner)
    if isinstance(listed, str):
        return Discovery(suite.name, problem=listed)
    names, extra = listed
    kept = [(name, isolation) for name, isolation in names if kept_by(suite, name)]
    if suite.framework == GOOGLE_BENCHMARK:
        return Discovery(suite.name, [_google_spec(suite, name, extra) for name, _ in kept])
    return Discovery(suite.name, [_command_spec(suite, name, isolation) for name, isolation in kept])


def member_spec(suite: SuiteSpec, name: str) -> BenchmarkSpec:
    """A stored benchmark of the suite ("<suite>/<name>") as the suite's listing would make it,
    without listing it: its settings for planning; what runs it (the iteration flag a Google
    Benchmark binary takes) is known only from the binary (:func:`discover`)."""
    member = name.removeprefix(suite.name + SEPARATOR)
    if suite.framework == GOOGLE_BENCHMARK:
        return _google_spec(suite, member, "")
    isolation = dict(suite.names).get(member)
    return _command_spec(suite, member, isolation)


def filter_regex(benchmarks: list[str]) -> str:
    """A Google Benchmark ``--benchmark_filter`` that runs exactly these benchmarks (names
    within one suite, without the suite's prefix)."""
    return "^(" + "|".join(ere_escape(name) for name in sorted(benchmarks)) + ")$"


def ere_escape(name: str) -> str:
    """`name` as a POSIX extended regular expression that matches it alone: what Google Benchmark's
    --benchmark_filter compiles (regcomp, REG_EXTENDED).  Python's re.escape also escapes spaces
    and '-', which ERE leaves undefined and Google Benchmark rejects ("Dump/jeopardy / -")."""
    return re.sub(r"([.\[\]{}()*+?^$|\\])", r"\\\1", name)


def _google_listing(suite: SuiteSpec, runner: BenchmarkRunner) -> tuple[list, str] | str:
    """(names, the argument that fixes the iteration count) or why listing failed.  The
    listing is asked with each way of fixing iterations until the binary accepts one."""
    fixings = _FIXED_ITERATIONS if suite.metric == INSTRUCTIONS else ("",)
    failure = ""
    for fixing in fixings:
        command = f"{suite.command} --benchmark_list_tests {fixing}".strip()
        outcome = runner.execute(runner.expand(command), min(suite.timeout, _LISTING_TIMEOUT))
        if not outcome.failure:
            return [(line.strip(), None) for line in outcome.stdout.splitlines() if line.strip()], fixing
        failure = outcome.failure
    return f"--benchmark_list_tests failed: {failure}"


def _command_listing(suite: SuiteSpec, runner: BenchmarkRunner) -> tuple[list, str] | str:
    if not suite.list_command:
        return list(suite.names), ""
    outcome = runner.execute(runner.expand(suite.list_command), min(suite.timeout, _LISTING_TIMEOUT))
    if outcome.failure:
        return f"list_command failed: {outcome.failure}"
    names = [line.strip() for line in outcome.stdout.splitlines()]
    return [(name, None) for name in names if name and not name.startswith("#")], ""


def kept_by(suite: SuiteSpec, name: str) -> bool:
    """Does the suite's include/exclude filter keep a discovered benchmark of this name?"""
    if suite.include and not re.search(suite.include, name):
        return False
    return not (suite.exclude and re.search(suite.exclude, name))


def _google_spec(suite: SuiteSpec, name: str, fixing: str) -> BenchmarkSpec:
    arguments = [f"--benchmark_filter=^{ere_escape(name)}$", "--benchmark_format=json"]
    if suite.metric == INSTRUCTIONS and fixing:
        arguments.append(fixing)
    command = f"{suite.command} {' '.join(_literal(shlex.quote(argument)) for argument in arguments)}"
    # The function a benchmark's name starts with ("BM_copy/64" runs BM_copy(benchmark::State&)),
    # as callgrind names it demangled.
    # BENCHMARK_CAPTURE passes its arguments after the state: "BM_copy(benchmark::State&, int)".
    isolation = f"*{name.split('/')[0]}(benchmark::State&*" if suite.isolate is True else None
    # Isolated, a benchmark counts its timed loop alone: under one iteration what its function
    # prepares before the loop (BM_UFlat compresses its input) would otherwise be most of it.
    loop = GOOGLE_BENCHMARK_LOOP if isolation and suite.metric == INSTRUCTIONS else None
    return _spec(suite, name, command, isolation, GOOGLE_JSON, loop)


def _command_spec(suite: SuiteSpec, name: str, isolation: str | None) -> BenchmarkSpec:
    if isolation is None and isinstance(suite.isolate, str):
        isolation = suite.isolate.replace("{name}", name)  # a callgrind pattern, never formatted
    return _spec(suite, name, _with_name(suite.command, name), isolation, TEXT)


def _spec(suite: SuiteSpec, name: str, command: str, isolation: str | None, output: str,
          loop: TimedLoop | None = None) -> BenchmarkSpec:
    return BenchmarkSpec(
        member_name(suite.name, name), command, suite.metric, suite.direction, suite.repetitions, suite.timeout,
        suite.warmup, suite.reuse, _with_name(suite.setup, name) if suite.setup else None,
        isolate=isolation if suite.metric == INSTRUCTIONS else None, output=output, loop=loop)


def _with_name(template: str, name: str) -> str:
    """`template` with {name} filled in and every other placeholder kept for the runner."""
    parts = []
    for literal, field_name, _, _ in string.Formatter().parse(template):
        parts.append(_literal(literal))
        if field_name == "name":
            parts.append(_literal(shlex.quote(name)))
        elif field_name is not None:
            parts.append(f"{{{field_name}}}")
    return "".join(parts)


def _literal(text: str) -> str:
    """Text kept literal through str.format."""
    return text.replace("{", "{{").replace("}", "}}")


def metric_problem(framework: str, metric: str) -> str | None:
    """What is wrong with a suite's metric for its framework, or None."""
    if registered(metric) is not None:
        return None  # cpu_time: a Google Benchmark's own field, a command's CPU time by the kernel's account
    if framework == GOOGLE_BENCHMARK:
        return None if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_.]*", metric) else \
            f"a Google Benchmark metric is one of {', '.join(METRICS)}, real_time or a user counter's name"
    try:
        groups = re.compile(metric).groups
    except re.error as error:
        return f"not {', '.join(METRICS)}, or a valid regex ({error})"
    return None if groups == 1 else "a regex metric needs exactly one group, the number to read from stdout"
