"""Hit and dismiss rates of run decisions against labels (no scikit-learn: the light core's
selection uses them too).

Hit rate is Perphecy's name for the true-positive rate (the share of real changes that run),
dismiss rate its name for the true-negative rate (the share of unchanged tuples skipped).
Each is nan where there is nothing to count: no change, or no unchanged tuple.
"""

from __future__ import annotations

import math

import numpy as np


def hit_rate(run: np.ndarray, labels: np.ndarray) -> float:
    changes = labels.sum()
    return float((run & labels).sum() / changes) if changes else math.nan


def dismiss_rate(run: np.ndarray, labels: np.ndarray) -> float:
    others = (~labels).sum()
    return float((~run & ~labels).sum() / others) if others else math.nan
