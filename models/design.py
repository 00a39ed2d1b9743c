"""The model inputs built from a feature table: light to import, because `selector
select` builds them on the push path without loading scikit-learn (or pandas)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

import numpy as np

if TYPE_CHECKING:
    import pandas as pd

BENCHMARK_PREFIX = "benchmark="


def design_matrix(table: pd.DataFrame, feature_columns: Sequence[str], scope: str, benchmarks: Sequence[str]) -> pd.DataFrame:
    """The model inputs: the features, plus the benchmark one-hot encoded for the pooled scope."""
    X = table[list(feature_columns)].astype(float)
    if scope == "pooled":
        for benchmark in benchmarks:
            X[f"{BENCHMARK_PREFIX}{benchmark}"] = (table["benchmark"] == benchmark).astype(float).to_numpy()
    return X


def model_inputs(features: np.ndarray, benchmarks: Sequence[str], feature_columns: Sequence[str],
                 columns: Sequence[str]) -> np.ndarray:
    """``design_matrix(...).reindex(columns=columns, fill_value=0.0)`` as a float array, from the
    rows of features (in `feature_columns` order) and each row's benchmark: the inputs of a
    trained model whose columns are `columns`."""
    position = {name: i for i, name in enumerate(feature_columns)}
    benchmarks = np.asarray(benchmarks, dtype=object)
    X = np.zeros((len(features), len(columns)))
    for j, column in enumerate(columns):
        if column in position:
            X[:, j] = features[:, position[column]]
        elif column.startswith(BENCHMARK_PREFIX):
            X[:, j] = benchmarks == column[len(BENCHMARK_PREFIX):]
    return X
