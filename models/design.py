"""The model inputs built from a feature table: light to import (pandas only), because
`selector select` builds them on the push path without loading scikit-learn."""

from __future__ import annotations

from typing import Sequence

import pandas as pd

BENCHMARK_PREFIX = "benchmark="


def design_matrix(table: pd.DataFrame, feature_columns: Sequence[str], scope: str, benchmarks: Sequence[str]) -> pd.DataFrame:
    """The model inputs: the features, plus the benchmark one-hot encoded for the pooled scope."""
    X = table[list(feature_columns)].astype(float)
    if scope == "pooled":
        for benchmark in benchmarks:
            X[f"{BENCHMARK_PREFIX}{benchmark}"] = (table["benchmark"] == benchmark).astype(float).to_numpy()
    return X
