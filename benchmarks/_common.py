"""Helpers for the benchmark scripts: the subject binary and interleaved timing."""

from __future__ import annotations

import statistics
import sysconfig
import time
from pathlib import Path
from typing import Callable


def libpython() -> Path:
    """The running Python's shared libpython (it has symbols: a realistic, large subject)."""
    library = Path(sysconfig.get_config_var("LIBDIR")) / sysconfig.get_config_var("INSTSONAME")
    if not library.is_file():
        raise SystemExit(f"no shared libpython at {library}; this Python was built without --enable-shared")
    return library


def interleaved(candidates: dict[str, Callable[[], object]], rounds: int) -> dict[str, list[float]]:
    """Time each candidate once per round, alternating, so machine noise hits all alike."""
    times: dict[str, list[float]] = {name: [] for name in candidates}
    for _ in range(rounds):
        for name, run in candidates.items():
            started = time.perf_counter()
            run()
            times[name].append(time.perf_counter() - started)
    return times


def median(values: list[float]) -> float:
    return statistics.median(values)
