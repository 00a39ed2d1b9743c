"""Benchmark results produced by other harnesses, as measurement rows.

`selector record --import FILE` stores what CI measured with its own tools:

* **pyperf** JSON (``python -m pyperf ... -o FILE``): every value of every run,
  warm-ups as repetition -1; the benchmark is named by its metadata ``name``.
* a benchmark framework's results file: each framework that writes one reads it
  (collectors/frameworks: Google Benchmark's JSON, Catch2's XML report).
* **asv** result files (``.asv/results/<machine>/<commit>-<env>.json``, format 2):
  the ``samples`` column when asv recorded it, else the ``result`` value; a
  parameterized benchmark gives one benchmark per parameter combination,
  ``name(param, ...)``.

All values are wall-clock seconds (metric ``wall_time``, unless a framework's field was read),
with run order as given.
"""

from __future__ import annotations

import itertools
import json
import math
from pathlib import Path
from typing import TYPE_CHECKING

from perf_selector.collectors.arrow_rows import table_of_rows
from perf_selector.collectors.errors import UserError
from perf_selector.collectors.frameworks import RESULTS_FORMATS

if TYPE_CHECKING:
    import pyarrow as pa

FORMATS = ("pyperf", *RESULTS_FORMATS, "asv")
COLUMNS = ["benchmark", "metric", "unit", "repetition", "run_order", "value", "status", "error", "seconds", "warmup"]


def import_results(path: Path, kind: str | None = None, field: str = "") -> pa.Table:
    """Measurement rows (COLUMNS) from a results file; `kind` is guessed from the contents when None.
    Of a framework's file, `field` is read (its import_field: Google Benchmark's real_time, metric
    wall_time, cpu_time or a user counter; Catch2's mean), the metric then named by the field."""
    try:
        text = Path(path).read_text()
    except FileNotFoundError:
        raise UserError(f"{path}: no such results file") from None
    except UnicodeDecodeError as error:
        raise UserError(f"{path}: not a results file ({error})") from None
    kind = kind or _guess(text, path)
    if kind not in FORMATS:
        raise UserError(f"unknown results format {kind!r}; choose from {', '.join(FORMATS)}")
    try:
        if kind in RESULTS_FORMATS:
            framework = RESULTS_FORMATS[kind]
            rows = [[r.benchmark, r.metric, r.unit, r.repetition, 0, r.value, "ok", "", r.seconds, False]
                    for r in framework.results(text, field or framework.import_field(None))]
        else:
            rows = {"pyperf": _pyperf, "asv": _asv}[kind](json.loads(text))
    except (KeyError, TypeError, ValueError, IndexError, SyntaxError) as error:  # SyntaxError: XML's ParseError
        raise UserError(f"{path}: not a valid {kind} results file ({type(error).__name__}: {error})") from None
    if not rows:
        raise UserError(f"{path}: no benchmark results in this {kind} file")
    run_order = COLUMNS.index("run_order")
    for order, row in enumerate(rows):
        row[run_order] = order
    return table_of_rows(rows, COLUMNS)


def _guess(text: str, path) -> str:
    for kind, framework in RESULTS_FORMATS.items():
        if framework.recognizes(text):
            return kind
    try:
        document = json.loads(text)
    except ValueError as error:
        raise UserError(f"{path}: not a JSON results file, nor a framework's ({error})") from None
    if isinstance(document, dict) and "results" in document and ("result_columns" in document or "commit_hash" in document):
        return "asv"
    if isinstance(document, dict) and "benchmarks" in document and "version" in document:
        return "pyperf"
    raise UserError(f"{path}: cannot tell the results format; pass --import-format ({', '.join(FORMATS)})")


def _row(benchmark: str, repetition: int, value: float) -> list:
    return [benchmark, "wall_time", "s", repetition, 0, float(value), "ok", "", float(value), repetition < 0]


def _pyperf(document: dict) -> list[list]:
    top_name = document.get("metadata", {}).get("name")
    rows = []
    for benchmark in document["benchmarks"]:
        name = benchmark.get("metadata", {}).get("name") or top_name
        if not name:
            raise ValueError("a benchmark without a name in its metadata")
        repetition = 0
        for run in benchmark["runs"]:
            for _loops, value in run.get("warmups", []):
                rows.append(_row(name, -1, value))
            for value in run.get("values", []):
                rows.append(_row(name, repetition, value))
                repetition += 1
    return rows


def _asv(document: dict) -> list[list]:
    columns = document.get("result_columns", ["result", "params"])
    rows = []
    for name, values in document["results"].items():
        record = dict(zip(columns, values)) if isinstance(values, list) else {"result": values}
        results = record.get("result")
        params = record.get("params") or []
        samples = record.get("samples")
        results = results if isinstance(results, list) else [results]
        combinations = list(itertools.product(*params)) if params else [()]
        for index, combination in enumerate(combinations):
            label = f"{name}({', '.join(map(str, combination))})" if combination else name
            values_here = samples[index] if samples and index < len(samples) and samples[index] else [results[index]]
            for repetition, value in enumerate(values_here):
                if value is None or (isinstance(value, float) and math.isnan(value)):
                    continue
                rows.append(_row(label, repetition, value))
    return rows
