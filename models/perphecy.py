"""Perphecy's greedy threshold predictor (de Oliveira 2015, Algorithm 1), as a scikit-learn estimator.

Each indicator (a feature column) becomes a boolean "value >= threshold"; the
predictor is the logical OR of the chosen (indicator, threshold) pairs.  Fitting
follows Algorithm 1 line by line:

* ``maxthresh(h, s)`` is the indicator's value on the hit: the highest threshold
  that still covers it;
* ``falsepos(s, t)`` counts the training negatives whose value is ``>= t``;
* for every hit, the cheapest indicator (fewest false positives at its maxthresh)
  is remembered (lines 2-15; ties keep the first indicator, as ``<`` does);
* while hits remain, the hit with the highest minimum price fixes its indicator's
  threshold, and every hit that threshold covers is removed (lines 16-29).

One departure, needed for termination: the paper starts ``max_min_price`` at 0 with a
strict ``>``, so hits whose cheapest price is zero false positives would never be
chosen and the loop would not end.  We start below zero, so they are covered too.

With no hits in the training data the predictor is empty and dismisses everything,
as the chapter describes for glibc.  Its hit rate on its own training data is 1.0 by
construction.

For ROC curves the estimator also gives a score: the largest ratio value/threshold
over the chosen pairs (``>= 1`` exactly when the OR is true), mapped to [0, 1) by
``r / (1 + r)``, so ``predict_proba >= 0.5`` is the paper's prediction.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.validation import check_is_fitted, validate_data

from perf_selector.models.binary_labels import BinaryClassifierTags, validate_binary_fit

# Perphecy Table 6.2, in the catalogue's names
PERPHECY_INDICATORS = (
    "new_functions",
    "deleted_functions",
    "reached_functions_deleted",
    "top_changed_rank_by_instructions",
    "top_changed_rank_by_calls",
    "top_changed_rank_by_calls_big_change",
    "top_function_length_change",
    "top_reached_function_length_change",
    "top_changed_rank_by_counter",
)


# Perphecy's algorithm over the catalogue's extensions as well: block-level executed change, the
# predicted effect, inclusive share, changed data read, and the features of code that steers
# execution (issue 27), each a "value >= threshold" indicator like the paper's.
EXTENDED_INDICATORS = (
    *PERPHECY_INDICATORS,
    "executed_changed_share",
    "predicted_effect_size",
    "changed_inclusive_share",
    "changed_data_reached",
    "changed_writes_hot_data",
    "executed_constant_change",
    "changed_cpu_dispatch",
    "changed_field_constant_readers",
)


class PerphecyPredictor(BinaryClassifierTags, ClassifierMixin, BaseEstimator):
    """Logical OR of indicator thresholds chosen greedily to cover every training hit.

    Parameters
    ----------
    indicators : sequence of str or int, optional
        The columns used as indicators (names need a DataFrame at fit time).  Default:
        the Perphecy Table 6.2 indicators present in the data, or every column of an array.

    Attributes
    ----------
    thresholds_ : list of (str, float)
        The chosen (indicator name, threshold) pairs, one per indicator at most.
    indicator_columns_ : ndarray of int
    """

    def __init__(self, indicators: Sequence[str | int] | None = None) -> None:
        self.indicators = indicators

    def fit(self, X, y, sample_weight=None) -> "PerphecyPredictor":
        X, y, sample_weight = validate_binary_fit(self, X, y, sample_weight)
        positive = y == self.classes_[1]
        self.indicator_columns_ = self._resolve_indicators(X.shape[1])
        values = np.nan_to_num(X[:, self.indicator_columns_], nan=0.0)
        chosen = greedy_thresholds(values[positive], values[~positive])
        best: dict[int, float] = {}
        for column, threshold in chosen:  # OR of two thresholds on one indicator = the lower one
            best[column] = min(threshold, best.get(column, np.inf))
        self._pairs = sorted(best.items())
        names = self._names()
        self.thresholds_ = [(names[column], threshold) for column, threshold in self._pairs]
        return self

    def _resolve_indicators(self, n_columns: int) -> np.ndarray:
        names = list(getattr(self, "feature_names_in_", []))
        wanted = self.indicators
        if wanted is None:
            wanted = [name for name in PERPHECY_INDICATORS if name in names] if names else list(range(n_columns))
            if not wanted:
                wanted = list(range(n_columns))
        columns = []
        for item in wanted:
            if isinstance(item, str):
                if item not in names:
                    raise ValueError(f"indicator {item!r} is not a column of the training data")
                columns.append(names.index(item))
            else:
                columns.append(int(item))
        return np.asarray(columns, dtype=int)

    def _names(self) -> list[str]:
        names = getattr(self, "feature_names_in_", None)
        all_names = list(names) if names is not None else [f"x{i}" for i in range(self.n_features_in_)]
        return [all_names[column] for column in self.indicator_columns_]

    def decision_function(self, X) -> np.ndarray:
        """Largest value/threshold ratio over the chosen pairs (>= 1 means the OR is true)."""
        check_is_fitted(self, "thresholds_")
        X = validate_data(self, X, dtype=float, reset=False, ensure_all_finite="allow-nan")
        values = np.nan_to_num(X[:, self.indicator_columns_], nan=0.0)
        score = np.zeros(len(X))
        for column, threshold in self._pairs:
            column_values = values[:, column]
            if threshold <= 0:
                ratio = np.where(column_values >= threshold, np.inf, 0.0)
            else:
                ratio = np.maximum(column_values, 0.0) / threshold
            score = np.maximum(score, ratio)
        return score

    def predict_proba(self, X) -> np.ndarray:
        ratio = self.decision_function(X)
        finite = np.isfinite(ratio)
        positive = np.ones(len(ratio))
        positive[finite] = ratio[finite] / (1.0 + ratio[finite])
        return np.column_stack([1.0 - positive, positive])

    def predict(self, X) -> np.ndarray:
        positive = self.decision_function(X) >= 1.0  # first: it says when the estimator is not fitted
        return self.classes_[positive.astype(int)]


def greedy_thresholds(hits: np.ndarray, dismissed: np.ndarray) -> list[tuple[int, float]]:
    """Algorithm 1: (indicator, threshold) pairs covering every hit, cheap in false positives.

    `hits` and `dismissed` are (tuples x indicators) value matrices of the positive and
    negative training tuples.
    """
    n_hits, n_indicators = hits.shape
    if n_hits == 0:
        return []
    # falsepos(s, maxthresh(h, s)) for every hit and indicator: negatives with value >= the hit's
    negatives_sorted = np.sort(dismissed, axis=0)
    price = np.empty((n_hits, n_indicators))
    for s in range(n_indicators):
        price[:, s] = len(dismissed) - np.searchsorted(negatives_sorted[:, s], hits[:, s], side="left")
    cheapest = np.argmin(price, axis=1)  # first minimum: the paper's strict "<"
    min_price = price[np.arange(n_hits), cheapest]
    min_threshold = hits[np.arange(n_hits), cheapest]

    chosen: list[tuple[int, float]] = []
    uncovered = np.ones(n_hits, dtype=bool)
    while uncovered.any():
        candidates = np.flatnonzero(uncovered)
        target = candidates[np.argmax(min_price[candidates])]  # first maximum: the paper's strict ">"
        indicator, threshold = int(cheapest[target]), float(min_threshold[target])
        chosen.append((indicator, threshold))
        uncovered &= ~(hits[:, indicator] >= threshold)
    return chosen
