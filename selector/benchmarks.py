"""The benchmarks of one build: the configured [[benchmark]]s and what each [[suite]] holds.

A suite's benchmarks are found on the built binary at each commit (a benchmark added in
March is not in January's binary), so every use case that runs benchmarks asks here
with the build it runs them on.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from perf_selector.collectors.benchmark_runner import BenchmarkRunner, BenchmarkSpec
from perf_selector.collectors.benchmark_suite import discover
from perf_selector.collectors.run_context import RunContext
from perf_selector.selector.config import Config, benchmark_specs, context_settings, suite_specs


@dataclass
class BuildBenchmarks:
    specs: list[BenchmarkSpec]
    problems: dict[str, str] = field(default_factory=dict)  # suite -> why its benchmarks could not be listed

    def describe_problems(self) -> str:
        return "\n".join(f"suite {suite}: {problem}" for suite, problem in sorted(self.problems.items()))


def build_benchmarks(config: Config, checkout: Path, binary: Path) -> BuildBenchmarks:
    """The benchmarks to run on `binary` (built in `checkout`): each suite's are listed by
    running the binary in the benchmarks' own normalised context."""
    found = BuildBenchmarks(benchmark_specs(config))
    suites = suite_specs(config)
    if not suites:
        return found
    context = RunContext(context_settings(config))
    try:
        with tempfile.TemporaryDirectory(prefix="selector-discovery-") as workdir:
            runner = BenchmarkRunner([], binary, checkout, Path(config.project.suite) if config.project.suite else None,
                                     workdir=Path(workdir), context=context)
            for suite in suites:
                discovery = discover(suite, runner)
                found.specs.extend(discovery.specs)
                if discovery.problem:
                    found.problems[suite.name] = discovery.problem
    finally:
        context.release()
    return found
