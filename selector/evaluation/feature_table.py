"""`selector features`: the store turned into one row per (new, old, benchmark) tuple."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from perf_selector.collectors.errors import UserError
from perf_selector.features.builder import build_feature_table
from perf_selector.storage.history import History, benchmarks_in, load_history
from perf_selector.features.tuples import closest_tuples
from perf_selector.storage.store import Store


def benchmarks_of(history: History) -> list[str]:
    return sorted(benchmarks_in(history.measurements))


def feature_table(store: Store) -> pd.DataFrame:
    history = load_history(store)
    benchmarks = benchmarks_of(history)
    if not benchmarks:
        raise UserError(f"{store.location}: no measurements; configure [[benchmark]] and run `selector collect`")
    return build_feature_table(history, closest_tuples(history, benchmarks))


def write_table(table: pd.DataFrame, output: Path) -> None:
    """Parquet, or CSV when the name ends in .csv; written whole or not at all."""
    output.parent.mkdir(parents=True, exist_ok=True)
    temporary = output.with_name(output.name + ".tmp")
    if output.suffix.lower() == ".csv":
        table.to_csv(temporary, index=False)
    else:
        table.to_parquet(temporary, index=False)
    temporary.replace(output)


def summarize(table: pd.DataFrame, feature_names: list[str]) -> tuple[pd.DataFrame, list[str]]:
    """Tuples and positives per benchmark; the features that are constant (useless) here."""
    per_benchmark = table.groupby("benchmark").agg(
        tuples=("new", "size"),
        positive=("label", lambda s: int((s == True).sum())),  # noqa: E712
        unlabelled=("label", lambda s: int(s.isna().sum())),
    ).reset_index()
    constant = [name for name in feature_names if table[name].nunique(dropna=False) <= 1]
    return per_benchmark, constant
