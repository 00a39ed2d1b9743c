"""Labelling the store: each measured commit against its closest measured ancestor.

The pairs are the ones the feature builder uses: for commit `c_n` and benchmark `b`,
`c_o` is the closest ancestor (merges included) with measurements of `b` and, unless
profiling is off, a profile of `b`.  Labels are recomputed on every collection, since
a newly collected commit can become the closest ancestor of others; only files whose
contents change are rewritten.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

import pandas as pd

from collectors.labels import Label, label_pair
from features.history import measured_runs
from features.tuples import closest_pairs
from selector.config import Config
from selector.store import Store

LABEL_KEYS = ["new", "old", "benchmark", "metric", "hops"]


@dataclass
class LabelSummary:
    per_benchmark: pd.DataFrame  # benchmark, pairs, positive, negative, undecided
    undecided: dict[str, str] = field(default_factory=dict)  # benchmark -> why (the commonest reason), with the fix


def exact_benchmarks(store: Store, config: Config) -> dict[str, bool]:
    """Benchmarks whose metric calibration found exactly repeatable (A/A identical)."""
    calibration = store.read("calibration")
    if calibration.empty:
        return {}
    metrics = {b.name: b.metric for b in config.benchmark}
    return {
        row.benchmark: bool(row.exact)
        for row in calibration.itertuples()
        if metrics.get(row.benchmark) == row.metric
    }


class PairLabeller:
    """Labels any (new, old, benchmark) pair from the stored measurements, with the
    project's statistics (alpha, minimum effect, exactness from calibration, direction)."""

    def __init__(self, store: Store, config: Config, measurements: pd.DataFrame | None = None) -> None:
        measurements = store.read("measurements") if measurements is None else measurements
        good = measured_runs(measurements)
        if len(good) and "metric" in good:
            # Only runs of the metric the benchmark is configured with: a pair of two metrics
            # (seconds against instructions) is never compared.
            configured = good["benchmark"].map({b.name: b.metric for b in config.benchmark})
            good = good[good["metric"] == configured]
        self.values = good.groupby(["commit", "benchmark"])["value"].apply(list).to_dict() if len(good) else {}
        self.config = config
        self.exact = exact_benchmarks(store, config)
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
    commits = store.read("commits")
    measurements = store.read("measurements")
    if commits.empty or measurements.empty:
        return LabelSummary(_summarize(pd.DataFrame(columns=["benchmark", "label"])))
    parents = {row.sha: list(row.parents) for row in commits.itertuples()}
    labeller = PairLabeller(store, config, measurements)
    values = labeller.values
    profiles = store.read("profiles")
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
    frames = []
    for sha, commit_rows in rows.items():
        frame = pd.DataFrame(commit_rows)
        frame["label"] = frame["label"].astype("boolean")
        if not store.has("labels", sha) or not _same(store.read_one("labels", sha), frame):
            store.write("labels", sha, frame)
        frames.append(frame)
    labels = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=["benchmark", "label", "reason"])
    return LabelSummary(_summarize(labels), _undecided_reasons(labels))


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
