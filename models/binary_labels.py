"""Binary labels as this project's own estimators read them: the classes, the checks made
at fit, and the tags that tell scikit-learn (and its estimator checks) what they accept.

A label says "this benchmark changed" or not: booleans, 0/1, or any two labels, the
greater being the positive class as in scikit-learn.  The rules (Perphecy's predictor,
the baselines) still say yes or no after seeing a single class, so booleans and 0/1 keep
both classes then; NaN features are allowed (a feature without a value, such as a rank
where nothing changed) and read as 0 by every rule.
"""

from __future__ import annotations

import numpy as np
from sklearn.utils.multiclass import check_classification_targets, type_of_target
from sklearn.utils.validation import _check_sample_weight, validate_data


def binary_classes(y: np.ndarray) -> np.ndarray:
    """Both classes, even when the training labels hold one: a rule still says yes or no.
    Labels are booleans (or 0/1); anything else keeps the classes seen, sorted."""
    if y.dtype == bool:
        return np.array([False, True])
    seen = np.unique(y)
    if set(seen.tolist()) <= {0, 1}:
        return np.array([0, 1], dtype=seen.dtype)
    return seen


def validate_binary_fit(estimator, X, y, sample_weight=None, allow_nan: bool = True):
    """The checked training data of a binary estimator (sets ``classes_``, ``n_features_in_``
    and, for a DataFrame, ``feature_names_in_``): X as floats, y as binary class labels,
    sample weights as a non-negative array of X's length (None stays None)."""
    X, y = validate_data(estimator, X, y, dtype=float, ensure_all_finite="allow-nan" if allow_nan else True)
    check_classification_targets(y)  # continuous targets are refused: "Unknown label type"
    kind = type_of_target(y, input_name="y", raise_unknown=True)
    if kind != "binary":
        raise ValueError(f"Only binary classification is supported. The type of the target is {kind}.")
    classes = binary_classes(y)
    if len(classes) != 2:
        raise ValueError(f"{type(estimator).__name__} needs two classes when the labels are neither booleans "
                         "nor 0/1; got one class")
    if sample_weight is not None:
        sample_weight = _check_sample_weight(sample_weight, X, ensure_non_negative=True)
    estimator.classes_ = classes
    return X, y, sample_weight


class BinaryClassifierTags:
    """Mixin (before ClassifierMixin): a binary classifier that accepts NaN features."""

    allows_nan = True

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = False
        tags.input_tags.allow_nan = self.allows_nan
        return tags
