"""The models the tool compares, by name: fresh, unfitted scikit-learn estimators.

Machine-learning models (Sousa 2019) are pipelines: max-absolute scaling (keeps the
many zeros of unchanged code at zero, Sousa 1.6), then the classifier.  Class imbalance
(performance changes are rare) is handled by class weights, or for XGBoost by
``scale_pos_weight`` = negatives / positives of the training data.  Every model gives
probabilities, so every one has an ROC curve and an operating point.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Callable

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.ensemble import RandomForestClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import StratifiedKFold, cross_val_predict
from sklearn.impute import SimpleImputer
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import MaxAbsScaler
from sklearn.svm import SVC
from sklearn.utils.validation import check_is_fitted, validate_data
from xgboost import XGBClassifier

from perf_selector.models.names import MODEL_NAMES
from perf_selector.models.binary_labels import BinaryClassifierTags, validate_binary_fit
from perf_selector.models.baselines import AlwaysRun, ExecutedChanged, HistoryOnly, PredictedEffect, ReachedChanged
from perf_selector.models.effect import EffectBound
from perf_selector.models.perphecy import EXTENDED_INDICATORS, PerphecyPredictor


class PlattSVC(BinaryClassifierTags, ClassifierMixin, BaseEstimator):
    """An SVM (balanced class weights) with Platt-scaled probabilities.

    What ``SVC(probability=True)`` did before scikit-learn 1.9 deprecated it: a sigmoid
    fitted on cross-validated decision values.  The folds adapt to the minority class,
    so the few positives of a young history still give probabilities.
    """

    allows_nan = False

    def __init__(self, kernel: str = "rbf", C: float = 1.0, gamma: str | float = "scale", random_state: int | None = None):
        self.kernel = kernel
        self.C = C
        self.gamma = gamma
        self.random_state = random_state

    def _svc(self) -> SVC:
        return SVC(kernel=self.kernel, C=self.C, gamma=self.gamma, class_weight="balanced", random_state=self.random_state)

    def fit(self, X, y, sample_weight=None) -> "PlattSVC":
        X, y, sample_weight = validate_binary_fit(self, X, y, sample_weight, allow_nan=False)
        if len(np.unique(y)) != 2:
            raise ValueError("PlattSVC needs both classes in its training data; got one class")
        self.svc_ = self._svc().fit(X, y, sample_weight=sample_weight)
        minority = int(np.min(np.bincount(np.searchsorted(self.classes_, y))))
        if minority >= 2:
            folds = StratifiedKFold(n_splits=min(3, minority), shuffle=True, random_state=self.random_state)
            decision = cross_val_predict(self._svc(), X, y, cv=folds, method="decision_function",
                                         params={"sample_weight": sample_weight} if sample_weight is not None else None)
        else:
            decision = self.svc_.decision_function(X)
        self.platt_ = LogisticRegression().fit(decision.reshape(-1, 1), y)
        return self

    def decision_function(self, X) -> np.ndarray:
        check_is_fitted(self, "svc_")
        return self.svc_.decision_function(validate_data(self, X, reset=False))

    def predict_proba(self, X) -> np.ndarray:
        decision = self.decision_function(X)  # first: it says when the estimator is not fitted
        return self.platt_.predict_proba(decision.reshape(-1, 1))

    def predict(self, X) -> np.ndarray:
        chosen = np.argmax(self.predict_proba(X), axis=1)  # first: it says when the estimator is not fitted
        return self.classes_[chosen]


class BalancedXGBClassifier(XGBClassifier):
    """XGBoost with ``scale_pos_weight`` set from the training labels at each fit."""

    def fit(self, X, y, *, sample_weight=None, **kwargs):
        positives = int(np.sum(np.asarray(y).astype(bool)))
        self.set_params(scale_pos_weight=max(len(y) - positives, 1) / max(positives, 1))
        return super().fit(X, y, sample_weight=sample_weight, **kwargs)


# Features whose larger values can only make a change more likely, on any project: how much of
# the changed code ran, how hot it was, how much its effect is predicted to be, and the hazards.
# A model held monotone in them cannot learn a project's accident (a change that happened to
# come with little executed change) as a rule that a larger executed change matters less, and
# it scores in fine steps where Perphecy's thresholds give a handful of values (issue 37).
INCREASING_FEATURES = (
    "relevance_by_cycles", "relevance_by_calls", "relevance_by_instructions", "changed_in_top_cycles",
    "deleted_in_top_cycles", "changed_in_top_calls", "deleted_in_top_calls", "changed_in_top_instructions",
    "deleted_in_top_instructions", "reached_functions_deleted", "top_changed_rank_by_instructions",
    "top_changed_rank_by_calls", "top_changed_rank_by_calls_big_change", "top_changed_rank_by_counter",
    "changed_inclusive_share", "changed_startup_share", "changed_data_reached", "build_config_changed",
    "changed_calls_allocator", "reached_changed_allocating", "executed_changed_share", "predicted_effect_size",
    "changed_writes_hot_data", "executed_constant_change", "changed_field_constant_readers", "changed_cpu_dispatch",
    "changed_data_readers_share",
)


class MonotoneXGBClassifier(BalancedXGBClassifier):
    """Balanced XGBoost whose score never falls as a feature of `increasing` rises (XGBoost's
    ``monotone_constraints``), the others free.  The constraints are set by column name at each
    fit (`constrained_` lists them), from a DataFrame (the design matrix, or a pipeline whose
    scaler outputs pandas); an array has no names, so nothing is constrained, with a warning.
    The booster itself is fitted on the values, as every other model is."""

    def __init__(self, *, increasing: tuple[str, ...] = INCREASING_FEATURES, **kwargs):
        super().__init__(**kwargs)
        self.increasing = increasing

    def fit(self, X, y, *, sample_weight=None, **kwargs):
        names = [str(name) for name in getattr(X, "columns", [])]
        if not names and self.increasing:
            warnings.warn("MonotoneXGBClassifier sets its constraints by feature name; an array has none, so no "
                          "feature is held monotone", UserWarning, stacklevel=2)
        chosen = set(self.increasing)
        self.constrained_ = [name for name in names if name in chosen]
        self.set_params(monotone_constraints=tuple(int(name in chosen) for name in names) or None)
        return super().fit(np.asarray(X) if names else X, y, sample_weight=sample_weight, **kwargs)

    def predict_proba(self, X, **kwargs):
        return super().predict_proba(np.asarray(X) if hasattr(X, "columns") else X, **kwargs)

    def predict(self, X, **kwargs):
        return super().predict(np.asarray(X) if hasattr(X, "columns") else X, **kwargs)


@dataclass(frozen=True)
class ModelSpec:
    name: str
    kind: str  # "ml" (learned from features), "perphecy", "effect" (learned from the measured effects) or "baseline"
    description: str
    build: Callable[[int], BaseEstimator]  # seed -> a fresh estimator
    weighted: bool = True  # accepts Sousa's distance sample weights
    rule_threshold: float | None = None  # a rule's own operating point (else chosen for the target hit rate)
    search: dict | None = None  # a small grid for the optional time-ordered search


def scaled_pipeline(classifier: BaseEstimator) -> Pipeline:
    """Max-absolute scaling, then the classifier (Sousa 1.6).  A classifier that takes no NaN gets an
    unknown feature as 0 first: a feature the catalogue gained after a pack was made is unknown on
    the pack's tuples (evaluation_pack.labelled_features), and a column unknown everywhere must stay a
    column, so that the model's inputs keep the catalogue's order."""
    steps = [("scale", MaxAbsScaler()), ("classifier", classifier)]
    if not classifier.__sklearn_tags__().input_tags.allow_nan:
        steps.insert(0, ("unknown", SimpleImputer(strategy="constant", fill_value=0.0, keep_empty_features=True)))
    return Pipeline(steps)


MODELS: dict[str, ModelSpec] = {
    spec.name: spec
    for spec in (
        ModelSpec("random-forest", "ml", "Random Forest, balanced class weights (Sousa's RFC)",
                  lambda seed: scaled_pipeline(RandomForestClassifier(
                      n_estimators=200, min_samples_leaf=1, class_weight="balanced", random_state=seed, n_jobs=1)),
                  search={"classifier__n_estimators": [100, 300], "classifier__max_depth": [None, 6]}),
        ModelSpec("svm", "ml", "SVM, RBF kernel, Platt-scaled probabilities, balanced class weights",
                  lambda seed: scaled_pipeline(PlattSVC(kernel="rbf", C=1.0, random_state=seed)),
                  search={"classifier__C": [0.3, 1.0, 3.0], "classifier__kernel": ["rbf", "sigmoid", "poly"]}),
        ModelSpec("xgboost", "ml", "XGBoost gradient-boosted trees, scale_pos_weight = negatives/positives",
                  lambda seed: scaled_pipeline(BalancedXGBClassifier(
                      n_estimators=200, max_depth=4, learning_rate=0.1, subsample=1.0, random_state=seed,
                      n_jobs=1, eval_metric="logloss", verbosity=0)),
                  search={"classifier__max_depth": [2, 4, 6], "classifier__n_estimators": [100, 300]}),
        ModelSpec("xgboost-monotone", "ml", "XGBoost held monotone in the features that can only make a change more "
                  "likely (executed change, hotness, predicted effect, hazards), scale_pos_weight = negatives/positives",
                  lambda seed: Pipeline([("scale", MaxAbsScaler().set_output(transform="pandas")),
                                         ("classifier", MonotoneXGBClassifier(
                                             n_estimators=200, max_depth=4, learning_rate=0.1, random_state=seed,
                                             n_jobs=1, eval_metric="logloss", verbosity=0))]),
                  search={"classifier__max_depth": [2, 4, 6], "classifier__n_estimators": [100, 300]}),
        ModelSpec("logistic", "ml", "Logistic regression, balanced class weights",
                  lambda seed: scaled_pipeline(LogisticRegression(class_weight="balanced", max_iter=2000, random_state=seed)),
                  search={"classifier__C": [0.1, 1.0, 10.0]}),
        ModelSpec("perphecy", "perphecy", "Perphecy's greedy indicator thresholds (de Oliveira 2015, Algorithm 1)",
                  lambda seed: PerphecyPredictor(), weighted=False, rule_threshold=0.5),
        ModelSpec("perphecy-extended", "perphecy", "Perphecy's Algorithm 1 over its indicators and the catalogue's "
                  "extensions (executed change, predicted effect, steering changes)",
                  lambda seed: PerphecyPredictor(EXTENDED_INDICATORS), weighted=False, rule_threshold=0.5),
        ModelSpec("effect", "effect", "Quantile gradient boosting of |effect| (95th percentile), run when the bound "
                  "reaches min_effect", lambda seed: EffectBound(random_state=seed), weighted=False, rule_threshold=0.5),
        ModelSpec("always-run", "baseline", "Run every benchmark on every commit",
                  lambda seed: AlwaysRun(), weighted=False, rule_threshold=0.5),
        ModelSpec("reached-changed", "baseline", "Run when anything the benchmark reached changed (safe selection)",
                  lambda seed: ReachedChanged(), weighted=False, rule_threshold=0.5),
        ModelSpec("executed-changed", "baseline", "Run when a changed basic block executed in c_o's run (block-level "
                  "safe selection; straight-line work far below min_effect skipped)", lambda seed: ExecutedChanged(), weighted=False, rule_threshold=0.5),
        ModelSpec("history-only", "baseline", "Logistic regression on the benchmark's change history and commit distance",
                  lambda seed: HistoryOnly(random_state=seed)),
        ModelSpec("predicted-effect", "baseline", "Run when the instruction change predicted from c_o's per-instruction "
                  "counts reaches 1% (no learning)", lambda seed: PredictedEffect(), weighted=False, rule_threshold=0.5),
    )
}
DEFAULT_MODELS = tuple(MODELS)
assert DEFAULT_MODELS == MODEL_NAMES, "perf_selector.models.names.MODEL_NAMES must list the registry's models"


def model_spec(name: "str | ModelSpec") -> ModelSpec:
    """The spec of a registered model; a ModelSpec passes through (for variants in studies)."""
    if isinstance(name, ModelSpec):
        return name
    if name not in MODELS:
        raise KeyError(f"unknown model {name!r}; choose from {', '.join(MODELS)}")
    return MODELS[name]


def fit_model(estimator: BaseEstimator, X, y, sample_weight: np.ndarray | None = None,
              effect: np.ndarray | None = None) -> BaseEstimator:
    """Fit, routing the sample weights to the final step of a pipeline, and the measured effects
    to a model that learns them (models.effect)."""
    if getattr(estimator, "needs_effect", False):
        return estimator.fit(X, y, sample_weight=sample_weight, effect=effect)
    if sample_weight is None:
        return estimator.fit(X, y)
    if isinstance(estimator, Pipeline):
        return estimator.fit(X, y, **{f"{estimator.steps[-1][0]}__sample_weight": sample_weight})
    return estimator.fit(X, y, sample_weight=sample_weight)


def positive_scores(estimator: BaseEstimator, X) -> np.ndarray:
    """Probability of the positive class (True), whatever classes the training data had."""
    proba = estimator.predict_proba(X)
    classes = list(estimator.classes_)
    if True in classes or 1 in classes:
        return proba[:, classes.index(True) if True in classes else classes.index(1)]
    return np.zeros(len(proba))
