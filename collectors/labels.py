"""Labels: did the performance of a benchmark change between two versions?

A pair is positive when Mann-Whitney U rejects equality at `alpha` **and** the
relative change of the median is at least `min_effect`.  A metric that calibration
showed to be exactly repeatable (an A/A run gives identical values) is labelled by
the effect alone: with identical repetitions the test has nothing to add, and with
one repetition it cannot reject anything.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Sequence

import numpy as np


@dataclass(frozen=True)
class Label:
    n_old: int
    n_new: int
    median_old: float
    median_new: float
    effect: float  # (median_new - median_old) / median_old
    statistic: float
    p_value: float
    exact: bool  # labelled by the effect alone
    label: bool | None  # None when there is not enough data to say
    regression: bool  # the change goes the wrong way for the metric's direction
    reason: str

    def as_row(self) -> dict:
        return asdict(self)


def label_pair(
    old: Sequence[float], new: Sequence[float], alpha: float, min_effect: float, exact: bool = False, direction: str = "lower"
) -> Label:
    old_values = np.asarray([v for v in old if v is not None and not math.isnan(v)], dtype=float)
    new_values = np.asarray([v for v in new if v is not None and not math.isnan(v)], dtype=float)
    if len(old_values) == 0 or len(new_values) == 0:
        return Label(len(old_values), len(new_values), math.nan, math.nan, math.nan, math.nan, math.nan, exact, None, False,
                     "no successful runs on one side")
    median_old, median_new = float(np.median(old_values)), float(np.median(new_values))
    effect = _relative_change(median_old, median_new)
    statistic, p_value = _mann_whitney(old_values, new_values)
    large_enough = abs(effect) >= min_effect and effect != 0
    if exact:
        label, reason = large_enough, f"exact metric: |effect| {'>=' if large_enough else '<'} {min_effect:g}"
    elif len(old_values) < 2 or len(new_values) < 2:
        label, reason = None, "fewer than 2 runs on one side and the metric is not known to be exact (run selector calibrate)"
    elif smallest_p_value(len(old_values), len(new_values)) >= alpha:
        # With 2 runs a side the test's smallest p-value is 0.33: it could never say "changed",
        # and a label of "unchanged" would be a guess presented as a finding.
        label, reason = None, (f"{len(old_values)} and {len(new_values)} runs: too few for the Mann-Whitney test to reach "
                               f"alpha {alpha:g} (add repetitions, or run selector calibrate if the metric is exact)")
    else:
        significant = p_value < alpha
        label = significant and large_enough
        reason = f"p={p_value:.3g} {'<' if significant else '>='} alpha {alpha:g}; |effect|={abs(effect):.3g} {'>=' if large_enough else '<'} {min_effect:g}"
    regression = bool(label) and ((effect > 0) if direction == "lower" else (effect < 0))
    return Label(len(old_values), len(new_values), median_old, median_new, effect, statistic, p_value, exact, label, regression, reason)


def smallest_p_value(n_old: int, n_new: int) -> float:
    """The smallest two-sided p-value the exact Mann-Whitney test can give for these sample
    sizes: both orderings that separate the samples completely, of all C(n_old+n_new, n_old)."""
    return min(1.0, 2 / math.comb(n_old + n_new, n_old))


def _relative_change(old: float, new: float) -> float:
    if old == new:
        return 0.0
    if old == 0:
        return math.inf if new > 0 else -math.inf
    return (new - old) / abs(old)


def _mann_whitney(old: np.ndarray, new: np.ndarray) -> tuple[float, float]:
    if len(old) < 1 or len(new) < 1:
        return math.nan, math.nan
    if np.all(old == old[0]) and np.all(new == old[0]):
        return float(len(old) * len(new) / 2), 1.0  # all equal: no evidence of a difference
    from scipy.stats import mannwhitneyu  # scipy.stats takes 0.8 s to import: only when a test runs

    result = mannwhitneyu(new, old, alternative="two-sided")
    return float(result.statistic), float(result.pvalue)
