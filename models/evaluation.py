"""Scoring predictions: ROC and AUROC, operating points, hit and dismiss rates, time saved.

Hit rate is Perphecy's name for the true-positive rate (share of real changes that
would run), dismiss rate its name for the true-negative rate (share of unchanged
tuples correctly skipped).  The operating point is a threshold on the score, chosen
on training data for a target hit rate: the highest threshold that still keeps at
least that share of the training positives.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np
import pandas as pd
from sklearn.metrics import roc_auc_score, roc_curve

from perf_selector.models.names import OPERATING_POINTS
from perf_selector.models.rates import dismiss_rate, hit_rate

RUN_EVERYTHING = -np.inf  # the threshold when training holds no positive: when in doubt, run
# How the threshold is placed on the training positives' (out-of-fold) scores (OPERATING_POINTS):
#   quantile:  the highest threshold that keeps the target share of them (Perphecy's way);
#   conformal: the split-conformal bound, so that a *future* change scores below it with
#              probability at most 1 - target, if it is exchangeable with the training ones:
#              the k-th lowest of n positive scores with k = floor((1 - target)(n + 1)), and
#              run everything while k < 1 (fewer than 1/(1 - target) - 1 positives: 19 for 0.95).


def operating_threshold(scores: np.ndarray, labels: np.ndarray, target_hit_rate: float = 0.95,
                        method: str = "quantile") -> float:
    """The threshold on scores for the target hit rate (run everything without positives); see OPERATING_POINTS."""
    if not 0 < target_hit_rate <= 1:
        raise ValueError("the target hit rate must be in (0, 1]")
    if method not in OPERATING_POINTS:
        raise ValueError(f"unknown operating point {method!r}; choose from {', '.join(OPERATING_POINTS)}")
    positives = np.sort(np.asarray(scores, dtype=float)[np.asarray(labels, dtype=bool)])[::-1]
    if len(positives) == 0:
        return RUN_EVERYTHING
    if method == "conformal":
        allowed_misses = math.floor((1 - target_hit_rate) * (len(positives) + 1) + 1e-9)
        return RUN_EVERYTHING if allowed_misses < 1 else float(positives[::-1][allowed_misses - 1])
    needed = math.ceil(target_hit_rate * len(positives) - 1e-9)
    return float(positives[needed - 1])


def worst_group_threshold(scores: np.ndarray, labels: np.ndarray, groups: np.ndarray, target_hit_rate: float = 0.95,
                          method: str = "quantile") -> float:
    """The threshold that keeps the target share of *every* group's positives: the lowest of the
    groups' own operating thresholds.  With a project per group and out-of-group scores, it is the
    operating point that held on the worst project seen, where a pooled quantile lets the projects
    with many changes hide the one whose changes it misses."""
    scores, labels, groups = np.asarray(scores, dtype=float), np.asarray(labels, dtype=bool), np.asarray(groups)
    thresholds = [operating_threshold(scores[groups == group], labels[groups == group], target_hit_rate, method)
                  for group in np.unique(groups[labels])]
    return min(thresholds) if thresholds else RUN_EVERYTHING


@dataclass(frozen=True)
class Scores:
    tuples: int
    positives: int
    auroc: float  # nan when the tuples hold one class only
    hit_rate: float  # nan without positives
    dismiss_rate: float  # nan without negatives
    run_share: float  # share of tuples that would run
    time_saved: float  # share of benchmark seconds not spent (dismissed tuples' cost / all)
    missed: int  # real changes predicted "skip"
    # The oracle runs exactly the changed tuples (`positives`): one run for each change.  A
    # policy's runs as a multiple of that is what a team pays for each change it catches.
    runs: int = 0  # tuples that would run
    runs_per_change: float = math.nan  # runs / positives; nan without positives

    def as_dict(self) -> dict:
        return asdict(self)


def score_predictions(frame: pd.DataFrame) -> Scores:
    """Scores of a predictions frame with columns label (bool), score, run (bool), cost (seconds)."""
    labels = frame["label"].to_numpy(bool)
    run = frame["run"].to_numpy(bool)
    cost = frame["cost"].to_numpy(float)
    positives, negatives = labels.sum(), (~labels).sum()
    auroc = float(roc_auc_score(labels, frame["score"].to_numpy(float))) if positives and negatives else math.nan
    total_cost = cost.sum()
    return Scores(
        tuples=len(frame),
        positives=int(positives),
        auroc=auroc,
        hit_rate=hit_rate(run, labels),
        dismiss_rate=dismiss_rate(run, labels),
        run_share=float(run.mean()) if len(run) else math.nan,
        time_saved=float(cost[~run].sum() / total_cost) if total_cost > 0 else math.nan,
        missed=int((~run & labels).sum()),
        runs=int(run.sum()),
        runs_per_change=float(run.sum() / positives) if positives else math.nan,
    )


def roc_points(frame: pd.DataFrame) -> pd.DataFrame:
    """The ROC curve (fpr, tpr, threshold) of a predictions frame; empty with one class only."""
    labels = frame["label"].to_numpy(bool)
    if labels.all() or not labels.any():
        return pd.DataFrame(columns=["fpr", "tpr", "threshold"])
    fpr, tpr, thresholds = roc_curve(labels, frame["score"].to_numpy(float))
    return pd.DataFrame({"fpr": fpr, "tpr": tpr, "threshold": thresholds})


def tradeoff_curve(frame: pd.DataFrame, targets: np.ndarray | None = None) -> pd.DataFrame:
    """Hit rate against dismiss rate and time saved as the threshold sweeps the test scores."""
    labels = frame["label"].to_numpy(bool)
    scores = frame["score"].to_numpy(float)
    cost = frame["cost"].to_numpy(float)
    thresholds = np.unique(np.concatenate([scores, [np.inf]]))
    rows = []
    for threshold in thresholds:
        run = scores >= threshold
        rows.append({
            "threshold": threshold,
            "hit_rate": hit_rate(run, labels),
            "dismiss_rate": dismiss_rate(run, labels),
            "time_saved": cost[~run].sum() / cost.sum() if cost.sum() > 0 else math.nan,
        })
    return pd.DataFrame(rows)


def results_table(predictions: pd.DataFrame) -> pd.DataFrame:
    """Per model, scope and benchmark (and "all" benchmarks pooled): AUROC, hit and dismiss rates, time saved."""
    rows = []
    for (model, scope), group in predictions.groupby(["model", "scope"], sort=False):
        for benchmark, part in [*group.groupby("benchmark"), ("(all)", group)]:
            rows.append({"model": model, "scope": scope, "benchmark": benchmark, **score_predictions(part).as_dict()})
    return pd.DataFrame(rows)


def epoch_table(predictions: pd.DataFrame) -> pd.DataFrame:
    """AUROC per epoch (all benchmarks of the epoch pooled) for each model and scope."""
    rows = []
    for (model, scope, epoch), part in predictions.groupby(["model", "scope", "epoch"]):
        scores = score_predictions(part)
        rows.append({"model": model, "scope": scope, "epoch": epoch, "tuples": scores.tuples,
                     "positives": scores.positives, "auroc": scores.auroc, "hit_rate": scores.hit_rate,
                     "dismiss_rate": scores.dismiss_rate})
    return pd.DataFrame(rows)
