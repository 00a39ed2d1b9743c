"""Helpers for the benchmark scripts: the subject binary, the corpus packs and interleaved timing."""

from __future__ import annotations

import argparse
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


def learner_on_packs(description: str, default_packs: list[Path]) -> tuple[argparse.Namespace, list]:
    """The arguments of a benchmark that judges a learner held out in turn on corpus packs (PACK...,
    --model, --rounds), and the packs' projects as `selector evaluate` loads them (Method 4)."""
    from perf_selector.selector.evaluation.project_evaluation import load_projects

    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("packs", nargs="*", type=Path)
    parser.add_argument("--model", default="xgboost")
    parser.add_argument("--rounds", type=int, default=1)
    arguments = parser.parse_args()
    packs = arguments.packs or default_packs
    return arguments, load_projects([(pack, None) for pack in packs], {"k": 5, "first": None, "epoch_days": None})


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


def print_medians(times: dict[str, list[float]], over: str, under: str, label: str) -> None:
    """Each candidate's median time (interleaved's), then the ratio of `over`'s to `under`'s."""
    width = max(map(len, times))
    for name, values in times.items():
        print(f"  {name:>{width}}: {median(values):8.1f} s")
    print(f"  ratio ({label}): {median(times[over]) / median(times[under]):.2f}x")


def write_frame(store, table: str, key: str, frame) -> None:
    """A DataFrame written to a store as that checkout's store takes it: Arrow, or the
    DataFrame itself for a checkout from before one table type (side_by_side.py runs those)."""
    if hasattr(store, "read_table"):  # the older store: read_table beside a pandas read
        store.write(table, key, frame)
        return
    import pyarrow as pa

    store.write(table, key, pa.Table.from_pandas(frame, preserve_index=False))
