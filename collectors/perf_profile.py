"""Sampling profiles with `perf record`: samples per function.

Hardware cycles where the machine counts them; the cpu-clock software event where it
does not (virtual machines, containers): `sampling_event()` finds out, and every
profile row says which event it counted.
"""

from __future__ import annotations

import os
import subprocess
from functools import lru_cache
from pathlib import Path

import pyarrow as pa

from collectors.arrow_rows import table_of_rows

from collectors.callgrind import normalize_function

PERF_COLUMNS = ["function", "object", "in_binary", "samples", "event"]


@lru_cache(maxsize=1)
def sampling_event() -> str:
    """``cycles`` if this machine has a hardware cycle counter perf can read, else ``cpu-clock``."""
    try:
        probe = subprocess.run(["perf", "stat", "-x", ",", "-e", "cycles", "true"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return "cpu-clock"
    supported = probe.returncode == 0 and "not supported" not in probe.stderr and "not counted" not in probe.stderr
    return "cycles" if supported else "cpu-clock"


def perf_command(command: list[str], output: Path, event: str, frequency: int = 4000) -> list[str]:
    return ["perf", "record", "-q", "-e", event, "-F", str(frequency), "-o", str(output), "--", *command]


def read_perf(data: str | os.PathLike[str], binary: str | os.PathLike[str] | None, event: str) -> pa.Table:
    """Samples per (object, function) from a perf.data file, via `perf report`."""
    report = subprocess.run(
        ["perf", "report", "-i", str(data), "--stdio", "--no-children", "--sort", "dso,sym",
         "-F", "sample,dso,sym", "--field-separator", "\t", "-q"],
        capture_output=True, text=True, timeout=300,
    )
    if report.returncode != 0:
        raise RuntimeError(f"perf report failed: {report.stderr.strip().splitlines()[-1] if report.stderr.strip() else report.returncode}")
    binary_name = os.path.basename(os.path.realpath(binary)) if binary else None
    samples: dict[tuple[str, str], int] = {}
    for line in report.stdout.splitlines():
        fields = [f.strip() for f in line.split("\t")]
        if len(fields) < 3 or not fields[0].isdigit():
            continue
        count, obj, symbol = int(fields[0]), fields[1], fields[2]
        symbol = symbol.split("] ", 1)[1] if symbol.startswith("[") and "] " in symbol else symbol
        key = (obj, normalize_function(symbol))
        samples[key] = samples.get(key, 0) + count
    rows = [(name, obj, obj == binary_name, count, event) for (obj, name), count in samples.items()]
    return table_of_rows(rows, PERF_COLUMNS).sort_by([("samples", "descending")])
