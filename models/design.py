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
    column from `features` (rows in `feature_columns` order), each ``benchmark=B`` column
    1.0 where the row's benchmark is B, anything else 0.0.  :func:`design_matrix` builds
    training inputs with it, `select` the inputs of a trained model, so both encode alike."""
    position = {name: i for i, name in enumerate(feature_columns)}
    benchmarks = np.asarray(benchmarks, dtype=object)
    X = np.zeros((len(features), len(columns)))
    for j, column in enumerate(columns):
        if column in position:
            X[:, j] = features[:, position[column]]
        elif column.startswith(BENCHMARK_PREFIX):
            X[:, j] = benchmarks == column[len(BENCHMARK_PREFIX):]
    return X
