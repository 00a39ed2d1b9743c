"""Benchmark results produced by other harnesses, as measurement rows.

`selector record --import FILE` stores what CI measured with its own tools:

* **pyperf** JSON (``python -m pyperf ... -o FILE``): every value of every run,
  warm-ups as repetition -1; the benchmark is named by its metadata ``name``.
* **Google Benchmark** JSON (``--benchmark_format=json`` or ``--benchmark_out``):
  every ``iteration`` entry (aggregates such as mean/median are skipped, they are
  not samples); ``real_time`` converted to seconds.
* **asv** result files (``.asv/results/<machine>/<commit>-<env>.json``, format 2):
  the ``samples`` column when asv recorded it, else the ``result`` value; a
  parameterized benchmark gives one benchmark per parameter combination,
  ``name(param, ...)``.

All values are wall-clock seconds (metric ``wall_time``), with run order as given.
"""

from __future__ import annotations

import itertools
import json
import math
from pathlib import Path
from typing import TYPE_CHECKING

from collectors.arrow_rows import table_of_rows
from collectors.benchmark_runner import GOOGLE_TIMES
from collectors.errors import UserError

if TYPE_CHECKING:
    import pyarrow as pa

FORMATS = ("pyperf", "google-benchmark", "asv")
COLUMNS = ["benchmark", "metric", "unit", "repetition", "run_order", "value", "status", "error", "seconds", "warmup"]
_UNITS = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}


def import_results(path: Path, kind: str | None = None, google_field: str = "real_time") -> pa.Table:
    """Measurement rows (COLUMNS) from a results file; `kind` is guessed from the contents when None.
    Of a Google Benchmark file, `google_field` is read: real_time (metric wall_time), cpu_time
    (in seconds too) or a user counter (as reported), the metric then named by the field."""
    try:
        document = json.loads(Path(path).read_text())
    except FileNotFoundError:
        raise UserError(f"{path}: no such results file") from None
    except (ValueError, UnicodeDecodeError) as error:
        raise UserError(f"{path}: not a JSON results file ({error})") from None
    kind = kind or _guess(document, path)
    readers = {"pyperf": _pyperf, "google-benchmark": lambda document: _google_benchmark(document, google_field),
               "asv": _asv}
    if kind not in readers:
        raise UserError(f"unknown results format {kind!r}; choose from {', '.join(FORMATS)}")
    try:
        rows = readers[kind](document)
    except (KeyError, TypeError, ValueError, IndexError) as error:
        raise UserError(f"{path}: not a valid {kind} results file ({type(error).__name__}: {error})") from None
    if not rows:
        raise UserError(f"{path}: no benchmark results in this {kind} file")
    run_order = COLUMNS.index("run_order")
    for order, row in enumerate(rows):
        row[run_order] = order
    return table_of_rows(rows, COLUMNS)


def _guess(document, path) -> str:
    if isinstance(document, dict) and "context" in document and "benchmarks" in document:
        return "google-benchmark"
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


def _google_benchmark(document: dict, field: str = "real_time") -> list[list]:
    counters: dict[str, int] = {}
    rows = []
    for entry in document["benchmarks"]:
        if entry.get("run_type", "iteration") != "iteration" or entry.get("error_occurred"):
            continue
        name = entry.get("run_name", entry["name"])
        repetition = counters.get(name, 0)
        counters[name] = repetition + 1
        if field not in entry:
            raise KeyError(f"{name} has no {field!r} (fields: {', '.join(sorted(entry))})")
        timed = field in GOOGLE_TIMES
        value = float(entry[field]) * (_UNITS[entry.get("time_unit", "ns")] if timed else 1.0)
        row = _row(name, repetition, value)
        if field != "real_time":  # real_time is what the file's other readers call wall_time
            row[1], row[2] = field, "s" if timed else "as printed"
            row[8] = row[8] if timed else 0.0  # a counter is no duration
        rows.append(row)
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
