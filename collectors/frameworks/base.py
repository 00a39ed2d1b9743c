"""What a benchmark framework is to the tool: the interface each module of this package fills in.

A framework says how `selector init` recognises it in a source file (and the names the
file registers), how a suite's binary lists its benchmarks, the command that runs one of
them alone, how callgrind counts only its timed part, how the number is read from what it
prints, and how a results file it writes is read (`selector record --import`).  The
registry (``collectors/frameworks/__init__.py``) names them; nothing else spells one.
"""

from __future__ import annotations

import re
import shlex
import string
from dataclasses import dataclass
from typing import Any, Protocol

from perf_selector.collectors.metrics import METRICS, registered

TEXT = "text"  # what a command prints: a regex metric reads its number from it
LISTING_TIMEOUT = 60  # seconds for a binary to list its benchmarks


class Runs(Protocol):
    """What a framework needs of the runner to list a suite (collectors.benchmark_runner.BenchmarkRunner)."""

    def expand(self, command: str) -> list[str]: ...

    def execute(self, arguments: list[str], timeout: float) -> Any: ...


@dataclass(frozen=True)
class TimedLoop:
    """The framework functions that open and close a benchmark's timed loop, as callgrind
    patterns: what runs between them is the benchmark's measured work, without what its
    function prepares before the loop (Google Benchmark's `for (auto _ : state)`).

    Or (`after`) the function that runs the measured work, dumped after each call, with
    collection left to the isolation pattern (`start` None); and with `marker`, a function
    entered once at each benchmark's start: the count is then the first timed part after
    the `position`-th benchmark's start, not the sum of them (Catch2: its first call runs one
    iteration, the later ones as many as the clock asked for)."""

    start: str | None
    finish: str
    after: bool = False  # dump after `finish` returns, not before it is entered
    marker: str | None = None
    position: int = 0

    @property
    def trigger(self) -> str:
        return f"--dump-{'after' if self.after else 'before'}={self.finish}"


@dataclass(frozen=True)
class Member:
    """How one benchmark of a suite runs alone."""

    command: str  # with {binary}, {checkout}, {suite}
    isolate: str | None = None  # callgrind counts only inside functions matching it (--toggle-collect)
    output: str = TEXT  # TEXT, or the name of the framework whose report the output is
    loop: TimedLoop | None = None  # under callgrind, the framework's timed part within what `isolate` lets through


@dataclass(frozen=True)
class Result:
    """One measured value read from a framework's results file."""

    benchmark: str
    repetition: int
    value: float
    metric: str  # wall_time for the report's main time, else the field's name
    unit: str
    seconds: float  # how long it took, where the value is a time (0 for a count)


class Framework:
    """The defaults: a framework whose binary lists its benchmarks, read as text."""

    name = ""  # as selector.toml's `framework =` spells it
    title = ""  # as people read it
    lists_itself = True  # the binary lists its benchmarks (`names` and `list_command` are a command suite's)
    pattern_isolation = False  # `isolate` is a callgrind pattern (else true or false: the framework knows its functions)
    times: tuple[str, ...] = ()  # fields of its report that are per-iteration times, in seconds once read
    timed_metric = "wall_time"  # what `selector init` measures when instructions cannot be counted
    suite_name = "bench"  # what `selector init` calls its suite
    timed_loop = False  # isolated under callgrind, it counts its timed part alone
    reexecutes: str | None = None  # a symbol of a binary that runs itself again (callgrind follows no exec)
    results_format: str | None = None  # what `--import-format` calls its results files; None: it writes none

    # `selector init`: a source of this framework includes it (`include`) and registers benchmarks
    # (`registration`, whose one group is a benchmark's name); how its binary lists them, and the
    # names its benchmarks are stored under, for the suite's comment
    include: re.Pattern[str] | None = None
    registration: re.Pattern[str] | None = None
    listed = ""
    stored_as = "<name>"

    def detect(self, text: str) -> tuple[str, ...] | None:
        """`selector init`: the benchmark names a source registers, or None when it is not this framework's."""
        if self.include is None or self.registration is None or not self.include.search(text):
            return None
        return tuple(dict.fromkeys(self.registration.findall(text))) or None

    def init_block(self, source: str, names: tuple[str, ...]) -> str:
        """`selector init`: the comment above a suite of this framework (what was found, how it lists)."""
        shown = ", ".join(names[:4]) + (f" and {len(names) - 4} more" if len(names) > 4 else "")
        return f"# {self.title}: {source} registers {shown}.\n# {self.listed}\n# stored as {self.suite_name}/{self.stored_as}.\n"

    def include_example(self, names: tuple[str, ...]) -> str:
        """`selector init`: an `include` regex that keeps the first of `names`."""
        return f"^({'|'.join(names[:2])})"

    def listing(self, suite: Any, runner: Runs) -> tuple[list[tuple[str, Any]], str] | str:
        """([(name, what else the member needs)], an argument every member takes) or why listing failed."""
        raise NotImplementedError

    def member(self, suite: Any, name: str, detail: Any, extra: str) -> Member:
        """How the benchmark `name` runs alone; `detail` and `extra` as the listing gave them
        (None and "" when it was not listed: settings for planning)."""
        raise NotImplementedError

    def value(self, stdout: str, metric: str, benchmark: str) -> tuple[float | None, str]:
        """The metric read from what the benchmark printed, or why it could not be."""
        return None, f"{self.title} reports no {metric!r}"

    def filter(self, names: list[str] | None) -> str:
        """What the framework's own filter option takes to run exactly these members (names
        within the suite, without its prefix; None: every member), for `select --filter` and
        CI outputs: a POSIX extended regex of whole names, as Google Benchmark's
        --benchmark_filter and most drivers take one."""
        if names is None:
            return ".*"
        return "^(" + "|".join(ere_escape(name) for name in sorted(names)) + ")$" if names else "^$"

    def metric_problem(self, metric: str) -> str | None:
        """What is wrong with a suite's metric for this framework, or None."""
        if registered(metric) is not None:
            return None
        return f"a {self.title} metric is one of {', '.join(METRICS)}"

    def recognizes(self, text: str) -> bool:
        """Is this the content of a results file this framework writes?"""
        return False

    def results(self, text: str, field: str) -> list[Result]:
        """The values of a results file; `field`: which of its numbers (import_field says)."""
        raise NotImplementedError

    def import_field(self, metric: str | None) -> str:
        """What a suite measuring `metric` (None: no suite) reads of a results file."""
        return ""


def with_name(template: str, name: str) -> str:
    """`template` with {name} filled in and every other placeholder kept for the runner."""
    parts = []
    for text, field_name, _, _ in string.Formatter().parse(template):
        parts.append(literal(text))
        if field_name == "name":
            parts.append(literal(shlex.quote(name)))
        elif field_name is not None:
            parts.append(f"{{{field_name}}}")
    return "".join(parts)


def literal(text: str) -> str:
    """Text kept literal through str.format."""
    return text.replace("{", "{{").replace("}", "}}")


def arguments(command: str, *words: str) -> str:
    """`command` (a template the runner fills in) with literal `words` after it, quoted."""
    return " ".join([command, *(literal(shlex.quote(word)) for word in words)])


def ere_escape(name: str) -> str:
    """`name` as a POSIX extended regular expression that matches it alone: what Google Benchmark's
    --benchmark_filter compiles (regcomp, REG_EXTENDED).  Python's re.escape also escapes spaces
    and '-', which ERE leaves undefined and Google Benchmark rejects ("Dump/jeopardy / -")."""
    return re.sub(r"([.\[\]{}()*+?^$|\\])", r"\\\1", name)
