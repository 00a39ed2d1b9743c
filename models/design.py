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
    import pandas as pd

    columns = list(feature_columns) + ([f"{BENCHMARK_PREFIX}{b}" for b in benchmarks] if scope == "pooled" else [])
    features = table[list(feature_columns)].to_numpy(dtype=float)
    X = model_inputs(features, table["benchmark"].tolist(), feature_columns, columns)
    return pd.DataFrame(X, columns=columns, index=table.index)


def model_inputs(features: np.ndarray, benchmarks: Sequence[str], feature_columns: Sequence[str],
                 columns: Sequence[str]) -> np.ndarray:
    """The inputs of a model whose columns are `columns`, as a float array: each feature
    column from `features` (rows in `feature_columns` order: any order, and more features
    than the model reads), each ``benchmark=B`` column 1.0 where the row's benchmark is B.
    :func:`design_matrix` builds training inputs with it, `select` the inputs of a trained
    model, so both encode alike.  A column that is neither is an error: a model never
    scores a feature it was trained on as 0 because the catalogue lost it."""
    position = {name: i for i, name in enumerate(feature_columns)}
    benchmarks = np.asarray(benchmarks, dtype=object)
    X = np.zeros((len(features), len(columns)))
    for j, column in enumerate(columns):
        if column in position:
            X[:, j] = features[:, position[column]]
        elif column.startswith(BENCHMARK_PREFIX):
            X[:, j] = benchmarks == column[len(BENCHMARK_PREFIX):]
        else:
            raise ValueError(f"the model reads {column!r}, which is not among the features given")
    return X


def any_positive(X: np.ndarray, columns) -> np.ndarray:
    """Rows where any of `columns` is above 0 (missing values count as 0): the safe-selection
    rules' test (models.baselines), which `select` also applies without scikit-learn."""
    return (np.nan_to_num(X[:, columns]) > 0).any(axis=1)
