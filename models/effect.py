"""Predicting the effect, not only the class: an upper bound of the size of a commit's effect.

A quantile regression (gradient-boosted trees, scikit-learn's quantile loss) of the
absolute relative change |effect| the labels measured, at the 95th percentile: where
tuples with these features moved by more than ``min_effect`` one time in twenty, the
bound reaches it.  The decision compares the bound with ``min_effect``: the score is
``bound / (bound + min_effect)``, 0.5 exactly at the minimum effect, so the rule's
threshold is 0.5 and the model needs no threshold learnt from labels.  A team that
changes ``min_effect`` sets this parameter (``set_params``); nothing is relabelled or
refitted, since what was learnt is the effect itself.
"""

from __future__ import annotations

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.ensemble import GradientBoostingRegressor
from sklearn.utils.validation import check_is_fitted, validate_data

from perf_selector.models.binary_labels import BinaryClassifierTags, validate_binary_fit


class EffectBound(BinaryClassifierTags, ClassifierMixin, BaseEstimator):
    """Run when the `quantile` bound of the predicted |effect| reaches `min_effect` (a fraction)."""

    needs_effect = True  # fit takes the measured effects (models.registry.fit_model passes them)

    def __init__(self, quantile: float = 0.95, min_effect: float = 0.01, n_estimators: int = 200, max_depth: int = 3,
                 random_state: int | None = None) -> None:
        self.quantile = quantile
        self.min_effect = min_effect
        self.n_estimators = n_estimators
        self.max_depth = max_depth
        self.random_state = random_state

    def fit(self, X, y, sample_weight=None, effect=None) -> "EffectBound":
        X, y, sample_weight = validate_binary_fit(self, X, y, sample_weight)
        if effect is None:
            raise ValueError("EffectBound learns from the measured effects: fit(X, y, effect=...)")
        size = np.abs(np.nan_to_num(np.asarray(effect, dtype=float)))
        self.regressor_ = GradientBoostingRegressor(loss="quantile", alpha=self.quantile, n_estimators=self.n_estimators,
                                                    max_depth=self.max_depth, random_state=self.random_state)
        self.regressor_.fit(np.nan_to_num(X), size, sample_weight=sample_weight)
        return self

    def bound(self, X) -> np.ndarray:
        """The upper bound of |effect| (a fraction) for each row."""
        check_is_fitted(self, "regressor_")
        X = validate_data(self, X, dtype=float, reset=False, ensure_all_finite="allow-nan")
        return np.maximum(self.regressor_.predict(np.nan_to_num(X)), 0.0)

    def predict_proba(self, X) -> np.ndarray:
        bound = self.bound(X)
        positive = bound / (bound + self.min_effect) if self.min_effect > 0 else (bound > 0).astype(float)
        return np.column_stack([1.0 - positive, positive])

    def predict(self, X) -> np.ndarray:
        positive = self.predict_proba(X)[:, 1] >= 0.5  # first: it says when the estimator is not fitted
        return self.classes_[positive.astype(int)]

    @property
    def feature_importances_(self) -> np.ndarray:
        return self.regressor_.feature_importances_
