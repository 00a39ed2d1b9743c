"""Running a sampling plan: fit every model on each split's training tuples, score its tests.

Per split (an epoch of Method 4), per scope and per model:

* **scope** ``per-benchmark`` trains one model per benchmark on that benchmark's tuples;
  ``pooled`` trains one model on all benchmarks, the benchmark one-hot encoded as
  features (Perphecy's "All Tests" predictor);
* the **operating point** is chosen on the training tuples only: for learned models,
  on out-of-fold scores of a stratified split of the training data (in-sample scores of
  a forest are all perfect and would say nothing); rules keep their own point;
* a model whose training tuples hold a single class cannot learn: it predicts that
  class's prior, and without a training positive its threshold runs everything.

The predictions frame has one row per (model, scope, test tuple); everything the
report and the metrics need comes from it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Sequence

import numpy as np
import pandas as pd
from sklearn.base import clone
from sklearn.dummy import DummyClassifier
from sklearn.model_selection import GridSearchCV, LeaveOneGroupOut, StratifiedKFold, TimeSeriesSplit

from perf_selector.features.scaling import distance_weights
from perf_selector.models.design import design_matrix
from perf_selector.models.evaluation import RUN_EVERYTHING, operating_threshold, worst_group_threshold
from perf_selector.models.names import SCOPES
from perf_selector.models.paired_fits import PairedFits
from perf_selector.models.registry import ModelSpec, fit_model, model_spec, positive_scores
from perf_selector.models.sampling import Plan

PREDICTION_COLUMNS = ["model", "scope", "epoch", "new", "old", "benchmark", "hops", "label", "score", "threshold", "run", "cost"]


@dataclass
class BacktestResult:
    plan: Plan
    predictions: pd.DataFrame  # PREDICTION_COLUMNS
    importances: pd.DataFrame  # model, scope, feature, importance (mean over fits)
    notes: list[str] = field(default_factory=list)


@dataclass
class FittedModel:
    """One trained model with its operating point, ready to score new tuples."""

    spec_name: str
    scope: str
    benchmark: str | None  # None for the pooled model
    estimator: object
    threshold: float
    columns: list[str]
    training_tuples: int
    training_positives: int
    fallback: bool  # single-class training: predicts the prior


def at_min_effect(estimator, min_effect: float) -> None:
    """Rules that compare an effect with the minimum effect (models.effect, the predicted-effect
    baseline) decide at the project's: a parameter of the decision, not of what was learnt."""
    parameters = estimator.get_params()
    if "min_effect" in parameters:
        estimator.set_params(min_effect=min_effect)
    elif "min_effect_percent" in parameters:
        estimator.set_params(min_effect_percent=100 * min_effect)


def train_one(spec: ModelSpec, X: pd.DataFrame, y: np.ndarray, hops: np.ndarray, scope: str, benchmark: str | None,
              target_hit_rate: float, seed: int, threshold_folds: int = 3, search: bool = False,
              groups: np.ndarray | None = None, operating_point: str = "quantile",
              effect: np.ndarray | None = None, min_effect: float | None = None,
              paired: PairedFits | None = None) -> FittedModel:
    """Fit one model and choose its operating point, from training data only.  With `groups`
    (a project per row), the out-of-fold scores that place the operating point hold one group
    out at a time, and the threshold is the one that kept the target hit rate on every group
    (models.evaluation.worst_group_threshold): the one that carried over to each unseen project,
    the worst included.  A learnt rule (Perphecy's) keeps its own threshold unless that missed
    more on some held-out project; fixed rules (the baselines) keep theirs.  `paired`: the fits
    of a nested hold-out of projects, shared with the other hold-outs (models.paired_fits)."""
    weights = distance_weights(hops) if spec.weighted else None
    learnable = spec.kind != "ml" or len(np.unique(y)) == 2  # rules, effects and history-only cope with one class
    if learnable:
        estimator = _maybe_search(spec, seed, X, y, search)
        fit_model(estimator, X, y, weights, effect)
    else:
        estimator = DummyClassifier(strategy="prior").fit(X, y)
    if min_effect is not None:
        at_min_effect(estimator, min_effect)
    # (the effect bound runs where its bound reaches min_effect: its threshold is no operating point to move)
    by_group = groups is not None and len(np.unique(groups)) >= 2 and spec.kind in ("ml", "perphecy") and y.any()
    if by_group:
        # Across projects: the threshold that kept the target on every training project held out
        # in turn (a learnt rule's own threshold only lowered by it: never less safe than the rule).
        scores = _training_scores(spec, estimator, X, y, weights, seed, threshold_folds, learnable, groups, paired)
        threshold = worst_group_threshold(scores, y, groups, target_hit_rate, operating_point)
        if spec.rule_threshold is not None:
            threshold = min(threshold, spec.rule_threshold)
    elif spec.rule_threshold is not None:
        threshold = spec.rule_threshold
    elif not y.any():
        threshold = RUN_EVERYTHING
    else:
        threshold = operating_threshold(_training_scores(spec, estimator, X, y, weights, seed, threshold_folds, learnable,
                                                         groups), y, target_hit_rate, operating_point)
    return FittedModel(spec.name, scope, benchmark, estimator, threshold, list(X.columns), len(y), int(y.sum()), not learnable)


def _maybe_search(spec: ModelSpec, seed: int, X: pd.DataFrame, y: np.ndarray, search: bool):
    """A fresh estimator; with `search`, its grid searched on time-ordered folds of the training data."""
    estimator = clone(spec.build(seed))
    if not search or not spec.search or int(y.sum()) < 3:
        return estimator
    grid = GridSearchCV(estimator, spec.search, cv=TimeSeriesSplit(n_splits=3), scoring="roc_auc", error_score=np.nan)
    grid.fit(X, y)  # training rows are in time order: each fold validates on later commits than it trains on
    if np.all(np.isnan(grid.cv_results_["mean_test_score"])):
        return estimator
    return clone(estimator).set_params(**grid.best_params_)


def _training_scores(spec, estimator, X, y, weights, seed, folds, learnable, groups=None, paired=None) -> np.ndarray:
    """Out-of-fold scores on the training data (in-sample only when too few positives to fold);
    with `groups`, one group held out at a time (each fit shared through `paired`, if given)."""
    minority = int(min(y.sum(), (~y).sum()))
    if not learnable or minority < 2 or folds < 2:
        return positive_scores(estimator, X)
    scores = np.empty(len(y))
    by_group = groups is not None and len(np.unique(groups)) >= 2
    if by_group:
        splits = LeaveOneGroupOut().split(X, y, groups)
    else:
        splits = StratifiedKFold(n_splits=min(folds, minority), shuffle=True, random_state=seed).split(X, y)
    for train, held_out in splits:
        def fitted(train=train):
            part = clone(spec.build(seed)) if len(np.unique(y[train])) == 2 else DummyClassifier(strategy="prior")
            fit_model(part, X.iloc[train], y[train], None if weights is None or isinstance(part, DummyClassifier) else weights[train])
            return part
        if paired is not None and by_group:  # a fit is shared by the projects it leaves out, not by folds
            scores[held_out] = paired.scores(frozenset(np.unique(groups[train]).tolist()), groups[held_out][0],
                                             X.iloc[held_out], fitted)
        else:
            scores[held_out] = positive_scores(fitted(), X.iloc[held_out])
    return scores


def backtest(
    plan: Plan,
    table: pd.DataFrame,
    feature_columns: Sequence[str],
    models: Sequence[str | ModelSpec],
    scopes: Sequence[str] = SCOPES,
    target_hit_rate: float = 0.95,
    seed: int = 0,
    search: bool = False,
    threshold_folds: int = 3,
    progress: Callable[[int], None] | None = None,
    operating_point: str = "quantile",
    min_effect: float | None = None,
) -> BacktestResult:
    """Evaluate `models` on `plan`.  `table` is aligned with ``plan.tuples`` (same row order)
    and holds the feature columns, ``label`` (nullable bool) and ``cost`` (seconds).  Rules that
    compare an effect with the minimum effect decide at `min_effect` (the project's; None: theirs)."""
    if len(table) != len(plan.tuples):
        raise ValueError("the feature table must have one row per tuple of the plan")
    for scope in scopes:
        if scope not in SCOPES:
            raise ValueError(f"unknown scope {scope!r}; choose from {', '.join(SCOPES)}")
    specs = [model_spec(name) for name in models]
    labelled = table["label"].notna().to_numpy()
    notes = []
    if (~labelled).any():
        notes.append(f"{int((~labelled).sum())} tuples have no label (undecided: too few runs, within the spread or the drift, or borderline; each label says why) and are left out")
    benchmarks = sorted(table["benchmark"].unique())
    rows, importances = [], []
    for split in plan.splits:
        train_rows = split.train[labelled[split.train]]
        test_rows = split.test[labelled[split.test]]
        for scope in scopes:
            groups = [(None, train_rows, test_rows)] if scope == "pooled" else [
                (b, train_rows[table["benchmark"].to_numpy()[train_rows] == b], test_rows[table["benchmark"].to_numpy()[test_rows] == b])
                for b in benchmarks
            ]
            for benchmark, train, test in groups:
                if len(test) == 0:
                    continue
                if len(train) == 0:
                    notes.append(f"epoch {split.epoch}: no training tuples for {benchmark or 'any benchmark'}; skipped")
                    continue
                train_frame, test_frame = table.iloc[train], table.iloc[test]
                X_train = design_matrix(train_frame, feature_columns, scope, benchmarks)
                X_test = design_matrix(test_frame, feature_columns, scope, benchmarks)
                y_train = train_frame["label"].to_numpy(bool)
                effect_train = measured_effects(train_frame)
                for spec in specs:
                    fitted = train_one(spec, X_train, y_train, train_frame["hops"].to_numpy(), scope, benchmark,
                                       target_hit_rate, seed, threshold_folds, search, operating_point=operating_point,
                                       effect=effect_train, min_effect=min_effect)
                    scores = positive_scores(fitted.estimator, X_test)
                    rows.append(prediction_frame(spec.name, scope, split.epoch, test_frame, scores, fitted.threshold))
                    importance = feature_importances(fitted)
                    if importance is not None:
                        importances.append(pd.DataFrame({"model": spec.name, "scope": scope, "feature": importance.index,
                                                         "importance": importance.to_numpy()}))
                    if progress:
                        progress(1)
    predictions = pd.concat(rows, ignore_index=True) if rows else pd.DataFrame(columns=PREDICTION_COLUMNS)
    importance_table = (
        pd.concat(importances).groupby(["model", "scope", "feature"], as_index=False)["importance"].mean()
        if importances else pd.DataFrame(columns=["model", "scope", "feature", "importance"])
    )
    return BacktestResult(plan, predictions, importance_table, notes)


def measured_effects(table: pd.DataFrame) -> np.ndarray | None:
    """The labels' measured relative changes of the rows, for a model that learns them (None without)."""
    return table["effect"].to_numpy(float) if "effect" in table else None


def prediction_frame(model: str, scope: str, epoch, tests: pd.DataFrame, scores: np.ndarray, threshold: float) -> pd.DataFrame:
    """Predictions (PREDICTION_COLUMNS) of one fitted model on its test tuples; `epoch` is one
    number or, for tests drawn from several epochs, an array with one per tuple."""
    return pd.DataFrame({
        "model": model, "scope": scope, "epoch": epoch,
        "new": tests["new"].to_numpy(), "old": tests["old"].to_numpy(),
        "benchmark": tests["benchmark"].to_numpy(), "hops": tests["hops"].to_numpy(),
        "label": tests["label"].to_numpy(bool), "score": scores, "threshold": threshold,
        "run": scores >= threshold, "cost": tests["cost"].to_numpy(float),
    })


def count_fits(plan: Plan, table: pd.DataFrame, models: Sequence[str], scopes: Sequence[str]) -> int:
    """How many (split, scope, group, model) fits :func:`backtest` will make, for a progress bar."""
    benchmarks = table["benchmark"].to_numpy()
    total = 0
    for split in plan.splits:
        for scope in scopes:
            groups = 1 if scope == "pooled" and len(split.test) else len(set(benchmarks[split.test]))
            total += groups * len(models)
    return total


def feature_importances(fitted: FittedModel) -> pd.Series | None:
    """Impurity importances of forests and boosted trees, |coefficients| of a logistic regression."""
    estimator = fitted.estimator
    final = estimator.steps[-1][1] if hasattr(estimator, "steps") else estimator
    if hasattr(final, "feature_importances_"):
        values = np.asarray(final.feature_importances_, dtype=float)
    elif hasattr(final, "coef_") and getattr(final, "coef_").ndim == 2:
        values = np.abs(final.coef_[0])
    else:
        return None
    if len(values) != len(fitted.columns):
        return None
    return pd.Series(values, index=fitted.columns)
