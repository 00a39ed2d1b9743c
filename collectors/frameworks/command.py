"""A driver of the project's own that runs one benchmark by name (LevelDB's ``db_bench
--benchmarks=NAME``): its command is a template with {name}, its benchmarks are configured
(`names`) or printed one a line by `list_command`, its number is read from what it prints
(a regex with one group) or is a registered metric, and under callgrind each benchmark is
isolated by a function pattern of its own (`isolate`, with {name}, or {function}: the name up
to its first '/', the function of a benchmark run at one of its sizes, "BM_Find/64")."""

from __future__ import annotations

import re
from typing import Any

from perf_selector.collectors.frameworks.base import LISTING_TIMEOUT, TEXT, Framework, Member, Runs, with_name
from perf_selector.collectors.metrics import METRICS, registered


class Command(Framework):
    name = "command"
    title = "command"
    lists_itself = False
    pattern_isolation = True

    def listing(self, suite: Any, runner: Runs) -> tuple[list[tuple[str, Any]], str] | str:
        if not suite.list_command:
            return list(suite.names), ""
        outcome = runner.execute(runner.expand(suite.list_command), min(suite.timeout, LISTING_TIMEOUT))
        if outcome.failure:
            return f"list_command failed: {outcome.failure}"
        names = [line.strip() for line in outcome.stdout.splitlines()]
        return [(name, None) for name in names if name and not name.startswith("#")], ""

    def member(self, suite: Any, name: str, detail: Any, extra: str) -> Member:
        isolation = detail if detail is not None else dict(suite.names).get(name)
        if isolation is None and isinstance(suite.isolate, str):
            isolation = isolation_of(suite.isolate, name)
        return Member(with_name(suite.command, name), isolation, TEXT)

    def metric_problem(self, metric: str) -> str | None:
        if registered(metric) is not None:
            return None  # cpu_time: the command's CPU time by the kernel's account
        try:
            groups = re.compile(metric).groups
        except re.error as error:
            return f"not {', '.join(METRICS)}, or a valid regex ({error})"
        return None if groups == 1 else "a regex metric needs exactly one group, the number to read from stdout"


def isolation_of(pattern: str, name: str) -> str:
    """A suite's `isolate` pattern for one benchmark: {name} is its name, {function} its name up to
    the first '/' (a harness that names each size of a benchmark "fn/8" runs the function fn).
    A callgrind pattern, never str.format-ted: its own braces stay."""
    return pattern.replace("{name}", name).replace("{function}", name.split("/", 1)[0])


COMMAND = Command()
