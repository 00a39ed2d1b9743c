"""Per-function profiles of each benchmark on one build: callgrind or perf.

Callgrind gives calls, self and inclusive instructions per function (it stands in for
the seeds' Pin proccount); perf gives samples of cycles, or of cpu-clock where the
machine has no hardware counters.  For the instructions metric the callgrind output of
a measured run is reused, so no extra run is needed.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pandas as pd

from collectors.benchmark_runner import INSTRUCTIONS, BenchmarkRunner, BenchmarkSpec, expand
from collectors.callgrind import INSTRUCTION_COLUMNS, PROFILE_COLUMNS, read_callgrind
from collectors.perf_profile import perf_command, read_perf, sampling_event

ROW_COLUMNS = ["benchmark", *PROFILE_COLUMNS, "samples", "profiler", "event", *INSTRUCTION_COLUMNS]


@dataclasses.dataclass
class ProfileResult:
    rows: pd.DataFrame  # ROW_COLUMNS
    failures: dict[str, str]  # benchmark -> why it has no profile


def profile_suite(runner: BenchmarkRunner, tool: str, reusable: dict[str, Path] | None = None) -> ProfileResult:
    frames, failures = [], {}
    for spec in runner.benchmarks:
        try:
            if tool == "callgrind":
                frame = _callgrind(runner, spec, (reusable or {}).get(spec.name))
            elif tool == "perf":
                frame = _perf(runner, spec)
            else:
                continue
        except _NoProfile as error:
            failures[spec.name] = str(error)
            continue
        frames.append(frame.assign(benchmark=spec.name))
    rows = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=ROW_COLUMNS)
    for column in ROW_COLUMNS:
        if column in INSTRUCTION_COLUMNS:  # lists, never null: perf has none
            rows[column] = [value if isinstance(value, list) else [] for value in rows[column]] if column in rows else [[]] * len(rows)
        elif column not in rows:
            rows[column] = pd.NA
    return ProfileResult(rows[ROW_COLUMNS], failures)


class _NoProfile(Exception):
    pass


def _callgrind(runner: BenchmarkRunner, spec: BenchmarkSpec, output: Path | None) -> pd.DataFrame:
    if output is None:
        output = runner.workdir / f"{spec.name}.profile.callgrind"
        run = runner.run_once(dataclasses.replace(spec, metric=INSTRUCTIONS), repetition=-2, order=-1, callgrind_output=output)
        if run.status != "ok":
            raise _NoProfile(f"callgrind run failed: {run.error}")
    profile = read_callgrind(output, runner.binary)
    return profile.functions.assign(samples=pd.NA, profiler="callgrind", event="Ir")


def _perf(runner: BenchmarkRunner, spec: BenchmarkSpec) -> pd.DataFrame:
    event = sampling_event()
    data = runner.workdir / f"{spec.name}.perf.data"
    outcome = runner.execute(perf_command(expand(spec.command, runner.binary, runner.checkout, runner.suite), data, event), spec.timeout)
    if outcome.failure:
        raise _NoProfile(f"perf record failed: {outcome.failure}")
    try:
        samples = read_perf(data, runner.binary, event)
    except RuntimeError as error:
        raise _NoProfile(str(error)) from None
    return samples.assign(calls=pd.NA, self_instructions=pd.NA, inclusive_instructions=pd.NA, profiler="perf")
