"""Labels: did a benchmark's performance change between two commits? One module: the test
of one pair, and labelling the store with it.

**The test of one pair** (:func:`label_pair`).  A pair is positive when Mann-Whitney U
rejects equality at `alpha` **and** the relative change of the median is at least
`min_effect`.  A metric that calibration showed to be exactly repeatable (an A/A run
gives identical values) is labelled by the effect alone: with identical repetitions the
test has nothing to add, and with one repetition it cannot reject anything.

**Labelling a history** (:func:`history_labels`, a function of the store's tables that
reads and writes nothing; :func:`update_labels` reads them and writes what changed;
:class:`PairLabeller` labels any pair).  The pairs are the ones the feature builder uses: for commit `c_n` and benchmark `b`, `c_o` is the closest
ancestor (merges included) with measurements of `b` and, unless profiling is off, a
profile of `b`.  Labels are recomputed on every collection, since
a newly collected commit can become the closest ancestor of others; only files whose
contents change are rewritten.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import asdict, dataclass, field
from typing import Sequence

import numpy as np
import pandas as pd

from storage.history import measured_runs
from features.tuples import closest_pairs
from selector.config import Config
from storage.store import Store


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
    from scipy.stats import mannwhitneyu  # scipy.stats is slow to import: only when a test runs

    result = mannwhitneyu(new, old, alternative="two-sided")
    return float(result.statistic), float(result.pvalue)


LABEL_KEYS = ["new", "old", "benchmark", "metric", "hops"]


@dataclass
class LabelSummary:
    per_benchmark: pd.DataFrame  # benchmark, pairs, positive, negative, undecided
    undecided: dict[str, str] = field(default_factory=dict)  # benchmark -> why (the commonest reason), with the fix


def exact_benchmarks(calibration: pd.DataFrame, config: Config) -> dict[str, bool]:
    """Benchmarks whose metric calibration (the store's calibration table) found exactly
    repeatable (A/A identical)."""
    if calibration.empty:
        return {}
    metrics = {b.name: b.metric for b in config.benchmark}
    return {
        row.benchmark: bool(row.exact)
        for row in calibration.itertuples()
        if metrics.get(row.benchmark) == row.metric
    }


class PairLabeller:
    """Labels any (new, old, benchmark) pair from measurements (the store's table, or part of
    it), with the project's statistics (alpha, minimum effect, exactness from the calibration
    table, direction)."""

    def __init__(self, measurements: pd.DataFrame, calibration: pd.DataFrame, config: Config) -> None:
        good = measured_runs(measurements)
        if len(good) and "metric" in good:
            # Only runs of the metric the benchmark is configured with: a pair of two metrics
            # (seconds against instructions) is never compared.
            configured = good["benchmark"].map({b.name: b.metric for b in config.benchmark})
            good = good[good["metric"] == configured]
        self.values = good.groupby(["commit", "benchmark"])["value"].apply(list).to_dict() if len(good) else {}
        self.config = config
        self.exact = exact_benchmarks(calibration, config)
        self.specs = {spec.name: spec for spec in config.benchmark}

    def label(self, new: str, old: str, benchmark: str) -> Label | None:
        """None when either side was never measured or the benchmark is not configured."""
        if (new, benchmark) not in self.values or (old, benchmark) not in self.values or benchmark not in self.specs:
            return None
        return label_pair(self.values[(old, benchmark)], self.values[(new, benchmark)], self.config.labels.alpha,
                          self.config.labels.min_effect, self.exact.get(benchmark, False), self.specs[benchmark].direction)

    def labels(self, tuples: pd.DataFrame) -> pd.Series:
        """The label (nullable bool) of each row of a (new, old, benchmark) frame."""
        return self.labels_and_effects(tuples)[0]

    def labels_and_effects(self, tuples: pd.DataFrame) -> tuple[pd.Series, pd.Series]:
        """The label (nullable bool) and the measured relative change (NaN where unlabelled) of each row."""
        labels, effects = [], []
        for new, old, benchmark in tuples[["new", "old", "benchmark"]].itertuples(index=False):
            found = self.label(new, old, benchmark)
            known = found is not None and found.label is not None
            labels.append(found.label if known else pd.NA)
            effects.append(found.effect if known else float("nan"))
        return pd.Series(labels, index=tuples.index, dtype="boolean"), pd.Series(effects, index=tuples.index, dtype=float)


def update_labels(store: Store, config: Config) -> LabelSummary:
    """Label the store's history anew and write each commit's labels whose contents changed."""
    by_commit = history_labels(store.read("commits"), store.read("measurements"), store.read("profiles"),
                               store.read("calibration"), config)
    for sha, frame in by_commit.items():
        if not store.has("labels", sha) or not _same(store.read_one("labels", sha), frame):
            store.write("labels", sha, frame)
    frames = list(by_commit.values())
    labels = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=["benchmark", "label", "reason"])
    return LabelSummary(_summarize(labels), _undecided_reasons(labels))


def history_labels(commits: pd.DataFrame, measurements: pd.DataFrame, profiles: pd.DataFrame, calibration: pd.DataFrame,
                   config: Config) -> dict[str, pd.DataFrame]:
    """The labels of a history (the store's tables), commit by commit: each measured commit
    against its closest measured (and, unless profiling is off, profiled) ancestor.  Reads
    nothing and writes nothing."""
    if commits.empty or measurements.empty:
        return {}
    parents = {row.sha: list(row.parents) for row in commits.itertuples()}
    labeller = PairLabeller(measurements, calibration, config)
    values = labeller.values
    profiled = set(zip(profiles["commit"], profiles["benchmark"])) if not profiles.empty else set()

    rows = defaultdict(list)
    pairs = closest_pairs(sorted({commit for commit, _ in values}), list(labeller.specs), parents, set(values),
                          profiled if config.profile.tool != "none" else None)
    for sha, old, benchmark, hops in pairs:
        if (sha, benchmark) not in values:
            continue  # a new commit is labelled only where it was measured itself
        label = labeller.label(sha, old, benchmark)
        rows[sha].append({"new": sha, "old": old, "benchmark": benchmark, "metric": labeller.specs[benchmark].metric,
                          "hops": hops, "alpha": config.labels.alpha, "min_effect": config.labels.min_effect, **label.as_row()})
    by_commit = {}
    for sha, commit_rows in rows.items():
        frame = pd.DataFrame(commit_rows)
        frame["label"] = frame["label"].astype("boolean")
        by_commit[sha] = frame
    return by_commit


def _undecided_reasons(labels: pd.DataFrame) -> dict[str, str]:
    undecided = labels[labels["label"].isna()] if len(labels) else labels
    if not len(undecided):
        return {}
    return {benchmark: group["reason"].mode().iloc[0] for benchmark, group in undecided.groupby("benchmark")}


def _same(stored: pd.DataFrame, fresh: pd.DataFrame) -> bool:
    try:
        pd.testing.assert_frame_equal(stored.reset_index(drop=True), fresh.reset_index(drop=True), check_dtype=False)
        return True
    except AssertionError:
        return False


def _summarize(labels: pd.DataFrame) -> pd.DataFrame:
    if labels.empty:
        return pd.DataFrame(columns=["benchmark", "pairs", "positive", "negative", "undecided"])
    grouped = labels.groupby("benchmark")["label"]
    return pd.DataFrame(
        {
            "pairs": grouped.size(),
            "positive": grouped.apply(lambda s: int((s == True).sum())),  # noqa: E712 (nullable booleans)
            "negative": grouped.apply(lambda s: int((s == False).sum())),  # noqa: E712
            "undecided": grouped.apply(lambda s: int(s.isna().sum())),
        }
    ).reset_index()
