"""Preparing features for the models: max-absolute scaling and distance weights (Sousa 1.6).

Scaling by the maximum absolute value keeps zeros at zero, so the many all-zero
features of unchanged code stay sparse; scikit-learn's MaxAbsScaler does exactly that.
Weights make mispredicting close commit pairs cost more than distant ones: a pair
`hops` commits apart weighs 1 / hops.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from sklearn.preprocessing import MaxAbsScaler

__all__ = ["MaxAbsScaler", "distance_weights"]


def distance_weights(hops: pd.Series | np.ndarray) -> np.ndarray:
    """Sample weights 1 / hops (hops >= 1): adjacent commits weigh 1, a pair ten commits apart 0.1."""
    hops = np.asarray(hops, dtype=float)
    if (hops < 1).any():
        raise ValueError("hops must be at least 1")
    return 1.0 / hops
