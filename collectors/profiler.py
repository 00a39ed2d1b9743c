"""Per-function profiles of each benchmark on one build: callgrind or perf.

Callgrind gives calls, self and inclusive instructions per function (it stands in for
the seeds' Pin proccount); perf gives samples of cycles, or of cpu-clock where the
machine has no hardware counters.  Both give, for the binary's functions, counts per
instruction: executions under callgrind, samples under perf (``count_kind`` says
which).  For the instructions metric the callgrind output of a measured run is reused,
so no extra run is needed.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pyarrow as pa

from perf_selector.collectors.arrow_rows import concatenated, with_constants

from perf_selector.collectors.benchmark_runner import INSTRUCTIONS, BenchmarkRunner, BenchmarkSpec, file_stem
from perf_selector.collectors.callgrind import INSTRUCTION_COLUMNS, PROFILE_COLUMNS, read_callgrind
from perf_selector.collectors.perf_profile import perf_command, read_perf, sampling_event
from perf_selector.collectors.metrics import INSTRUCTIONS as INSTRUCTION_METRIC

ROW_COLUMNS = ["benchmark", *PROFILE_COLUMNS, "samples", "profiler", "event", "count_kind", *INSTRUCTION_COLUMNS]
# What a profile's per-instruction counts (and the run total they are shared of) count:
# executions under callgrind (and Pin), samples under perf.  The features never mix the two.
KIND_INSTRUCTIONS, KIND_SAMPLES = INSTRUCTION_METRIC.name, "samples"


@dataclasses.dataclass
class ProfileResult:
    rows: pa.Table  # ROW_COLUMNS
    failures: dict[str, str]  # benchmark -> why it has no profile


def profile_suite(runner: BenchmarkRunner, tool: str, reusable: dict[str, Path] | None = None) -> ProfileResult:
    tables, failures = [], {}
    for spec in runner.benchmarks:
        try:
            if tool == "callgrind":
                table = _callgrind(runner, spec, (reusable or {}).get(spec.name))
            elif tool == "perf":
                table = _perf(runner, spec)
            else:
                continue
        except _NoProfile as error:
            failures[spec.name] = str(error)
            continue
        tables.append(_with_row_columns(with_constants(table, benchmark=spec.name)))
    rows = concatenated(tables) if tables else _with_row_columns(pa.table({}))
    return ProfileResult(rows, failures)


def _with_row_columns(table: pa.Table) -> pa.Table:
    """`table` with exactly ROW_COLUMNS, in order: a profiler's missing values are nulls, and its
    missing instruction lists empty lists (lists are never null: functions of other objects have none)."""
    columns = []
    for name in ROW_COLUMNS:
        if name in table.column_names:
            columns.append(table[name])
        elif name in INSTRUCTION_COLUMNS:
            columns.append(pa.array([[]] * table.num_rows, pa.list_(pa.int64())))
        else:
            columns.append(pa.nulls(table.num_rows))
    return pa.table(columns, names=ROW_COLUMNS)


class _NoProfile(Exception):
    pass


def _callgrind(runner: BenchmarkRunner, spec: BenchmarkSpec, output: Path | None) -> pa.Table:
    if output is None:
        output = runner.workdir / f"{file_stem(spec.name)}.profile.callgrind"
        run = runner.run_once(dataclasses.replace(spec, metric=INSTRUCTIONS), repetition=-2, order=-1, callgrind_output=output)
        if run.status != "ok":
            raise _NoProfile(f"callgrind run failed: {run.error}")
    profile = read_callgrind(output, runner.binary)
    return with_constants(profile.functions, profiler="callgrind", event="Ir", count_kind=KIND_INSTRUCTIONS)


def _perf(runner: BenchmarkRunner, spec: BenchmarkSpec) -> pa.Table:
    event = sampling_event()
    data = runner.workdir / f"{file_stem(spec.name)}.perf.data"
    unprepared = runner.prepare(spec)
    if unprepared:
        raise _NoProfile(unprepared)
    outcome = runner.execute(perf_command(runner.expand(spec.command), data, event), spec.timeout)
    if outcome.failure:
        raise _NoProfile(f"perf record failed: {outcome.failure}")
    try:
        samples = read_perf(data, runner.binary, event)
    except RuntimeError as error:
        raise _NoProfile(str(error)) from None
    return with_constants(samples, profiler="perf", count_kind=KIND_SAMPLES)
