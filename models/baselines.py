"""The baselines a sceptical user tries first, as scikit-learn estimators.

* :class:`AlwaysRun`: run every benchmark on every commit (hit rate 1, dismiss rate 0).
* :class:`ReachedChanged`: safe selection in the manner of Ekstazi: run a benchmark when
  anything it reached in c_o's profile changed (a changed or deleted reached function, a
  changed data object a reached function reads) or the build configuration changed.
  :class:`ExecutedChanged` is the same rule one level down: run when a changed basic block
  executed in c_o's run (or a reached function was deleted, a read data object changed,
  the build configuration changed), unless what ran is straight-line work far below
  ``min_effect`` (models.decision.straight_line_below).  With a perf profile "executed" means sampled: a
  changed block too brief to be sampled once looks unexecuted.
* :class:`HistoryOnly`: a logistic regression that sees nothing of the code, only the
  benchmark's recent change history, its noise, and how far apart the two commits are.
* :class:`PredictedEffect`: no learning at all: run when the instruction change predicted
  from c_o's per-instruction counts applied to c_n's code (features/executed_code.py)
  reaches the labels' minimum effect.  A team that changes ``min_effect`` changes this
  rule's parameter; nothing is relabelled or retrained.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.linear_model import LogisticRegression
from sklearn.utils.validation import check_is_fitted, validate_data

from perf_selector.models.binary_labels import BinaryClassifierTags, validate_binary_fit
from perf_selector.models.design import any_positive
from perf_selector.models.names import EXECUTED_CHANGE_COLUMNS  # noqa: F401 - re-exported

REACHED_CHANGE_COLUMNS = (
    "top_changed_rank_by_instructions",
    "top_changed_rank_by_calls",
    "reached_functions_deleted",
    "changed_data_reached",
    "build_config_changed",
)
HISTORY_COLUMNS = ("benchmark_recent_change_rate", "benchmark_noise", "commit_hops", "commit_days")


class _ColumnsBaseline(BinaryClassifierTags, ClassifierMixin, BaseEstimator):
    """Shared plumbing: classes, and columns chosen by name from a DataFrame (or by position)."""

    def _columns(self, wanted: Sequence[str | int]) -> np.ndarray:
        names = list(getattr(self, "feature_names_in_", []))
        missing = [item for item in wanted if (item not in names if isinstance(item, str)
                                               else not 0 <= int(item) < self.n_features_in_)]
        if missing:
            raise ValueError(f"{type(self).__name__} needs the feature columns {missing} (fit it on a DataFrame "
                             "that has them, or name columns by position)")
        return np.asarray([names.index(item) if isinstance(item, str) else int(item) for item in wanted], dtype=int)

    @staticmethod
    def _proba(positive: np.ndarray) -> np.ndarray:
        return np.column_stack([1.0 - positive, positive])

    def predict(self, X) -> np.ndarray:
        positive = self.predict_proba(X)[:, 1] >= 0.5  # first: it says when the estimator is not fitted
        return self.classes_[positive.astype(int)]


class AlwaysRun(_ColumnsBaseline):
    """The conservative baseline: every tuple is predicted to change."""

    def fit(self, X, y, sample_weight=None) -> "AlwaysRun":
        validate_binary_fit(self, X, y, sample_weight)
        return self

    def predict_proba(self, X) -> np.ndarray:
        check_is_fitted(self, "classes_")
        X = validate_data(self, X, dtype=float, reset=False, ensure_all_finite="allow-nan")
        return self._proba(np.ones(len(X)))


class ReachedChanged(_ColumnsBaseline):
    """Run when anything the benchmark reached changed (safe selection, Ekstazi-style)."""

    def __init__(self, columns: Sequence[str | int] = REACHED_CHANGE_COLUMNS) -> None:
        self.columns = columns

    def fit(self, X, y, sample_weight=None) -> "ReachedChanged":
        validate_binary_fit(self, X, y, sample_weight)
        self.columns_ = self._columns(self.columns)
        return self

    def predict_proba(self, X) -> np.ndarray:
        check_is_fitted(self, "columns_")
        X = validate_data(self, X, dtype=float, reset=False, ensure_all_finite="allow-nan")
        touched = any_positive(X, self.columns_)
        return self._proba(touched.astype(float))


class ExecutedChanged(_ColumnsBaseline):
    """Run when a changed basic block executed in c_o's run (block-level safe selection), unless
    the executed change is straight-line work too small to reach `min_effect`: the rule as `select`
    applies it (models.decision.executed_rule_scores).  Columns it is not given count as absent
    (a change's steering then as unknown: it runs)."""

    def __init__(self, min_effect: float = 0.01) -> None:
        self.min_effect = min_effect

    def fit(self, X, y, sample_weight=None) -> "ExecutedChanged":
        from perf_selector.features.catalogue import FEATURE_NAMES

        validate_binary_fit(self, X, y, sample_weight)
        names = list(getattr(self, "feature_names_in_", FEATURE_NAMES[:self.n_features_in_]))
        known = [name for name in names if name in FEATURE_NAMES]
        self.sources_ = np.asarray([names.index(name) for name in known], dtype=int)
        self.targets_ = np.asarray([FEATURE_NAMES.index(name) for name in known], dtype=int)
        self.width_ = len(FEATURE_NAMES)
        return self

    def predict_proba(self, X) -> np.ndarray:
        from perf_selector.models.decision import executed_rule_scores

        check_is_fitted(self, "sources_")
        X = validate_data(self, X, dtype=float, reset=False, ensure_all_finite="allow-nan")
        catalogue = np.full((len(X), self.width_), np.nan)
        catalogue[:, self.targets_] = X[:, self.sources_]
        return self._proba(executed_rule_scores(catalogue, self.min_effect))


class HistoryOnly(_ColumnsBaseline):
    """Logistic regression on the benchmark's history and the commit distance, blind to code."""

    def __init__(self, columns: Sequence[str | int] = HISTORY_COLUMNS, random_state: int | None = None) -> None:
        self.columns = columns
        self.random_state = random_state

    def fit(self, X, y, sample_weight=None) -> "HistoryOnly":
        X, y, sample_weight = validate_binary_fit(self, X, y, sample_weight)
        self.columns_ = self._columns(self.columns)
        history = np.nan_to_num(X[:, self.columns_])
        self.scale_ = np.maximum(np.abs(history).max(axis=0), 1e-12) if len(history) else np.ones(len(self.columns_))
        self.prior_ = float(np.mean(y == self.classes_[1])) if len(y) else 0.0
        self.model_ = None
        if len(np.unique(y)) == 2:
            self.model_ = LogisticRegression(class_weight="balanced", random_state=self.random_state)
            self.model_.fit(history / self.scale_, y, sample_weight=sample_weight)
        return self

    def predict_proba(self, X) -> np.ndarray:
        check_is_fitted(self, "columns_")
        X = validate_data(self, X, dtype=float, reset=False, ensure_all_finite="allow-nan")
        if self.model_ is None:  # one class in training: its prior
            return self._proba(np.full(len(X), self.prior_))
        return self.model_.predict_proba(np.nan_to_num(X[:, self.columns_]) / self.scale_)


class PredictedEffect(_ColumnsBaseline):
    """Run when the predicted instruction change reaches `min_effect_percent` (the rule's 0.5).

    The score is ``size / (size + min_effect_percent)`` of the predicted effect's size in
    percent: monotone in it (so the ROC curve is the feature's own) and 0.5 exactly at the
    minimum effect the labels count as a change."""

    def __init__(self, min_effect_percent: float = 1.0, column: str | int = "predicted_effect_size") -> None:
        self.min_effect_percent = min_effect_percent
        self.column = column

    def fit(self, X, y, sample_weight=None) -> "PredictedEffect":
        validate_binary_fit(self, X, y, sample_weight)
        self.columns_ = self._columns([self.column])
        return self

    def predict_proba(self, X) -> np.ndarray:
        check_is_fitted(self, "columns_")
        X = validate_data(self, X, dtype=float, reset=False, ensure_all_finite="allow-nan")
        size = np.abs(np.nan_to_num(X[:, self.columns_[0]]))
        return self._proba(size / (size + self.min_effect_percent))
