"""The benchmark frameworks a suite can be of: one registry, as collectors/metrics.py is for metrics.

Each framework is a module of this package (its interface: ``base.Framework``), registered
here under the name selector.toml's ``framework =`` spells.  Adding one is a module and an
entry here; the rest of the tool asks the registry.
"""

from __future__ import annotations

from perf_selector.collectors.frameworks.base import TEXT, Framework, Member, Result
from perf_selector.collectors.frameworks.catch2 import CATCH2
from perf_selector.collectors.frameworks.command import COMMAND
from perf_selector.collectors.frameworks.google_benchmark import GOOGLE_BENCHMARK

FRAMEWORKS: dict[str, Framework] = {framework.name: framework for framework in (GOOGLE_BENCHMARK, CATCH2, COMMAND)}
NAMES = tuple(FRAMEWORKS)
# The frameworks that write results files `selector record --import` reads, by format name
RESULTS_FORMATS = {framework.results_format: framework for framework in FRAMEWORKS.values() if framework.results_format}
# Those whose binaries `selector init` recognises in a source file, in the order it prefers them
DETECTED = tuple(framework for framework in FRAMEWORKS.values() if framework.lists_itself)

__all__ = ["CATCH2", "COMMAND", "DETECTED", "FRAMEWORKS", "Framework", "GOOGLE_BENCHMARK", "Member", "NAMES",
           "RESULTS_FORMATS", "Result", "TEXT", "framework", "framework_times"]


def framework(name: str) -> Framework:
    """The registered framework of this name (a configured one: the configuration checked it)."""
    try:
        return FRAMEWORKS[name]
    except KeyError:
        raise ValueError(f"unknown benchmark framework {name!r}; one of {', '.join(NAMES)}") from None


def framework_times() -> set[str]:
    """Every framework's per-iteration time fields (seconds once read)."""
    return {field for f in FRAMEWORKS.values() for field in f.times}
