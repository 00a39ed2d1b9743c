"""Labels: did a benchmark's performance change between two commits?  The one labels
module: the test of one pair, labelling a history, and keeping the store's labels current.

**The test of one pair** (:func:`label_pair`).  A pair is positive when Mann-Whitney U
rejects equality at `alpha` **and** the relative change of the median is at least
`min_effect`.  A metric that calibration showed to be exactly repeatable (an A/A run
gives identical values) is labelled by the effect alone: with identical repetitions the
test has nothing to add, and with one repetition it cannot reject anything.

**Labelling a history** (:func:`history_labels`, a function of the store's tables that
reads and writes nothing; :func:`update_labels` reads them and writes what changed;
:class:`PairLabeller` labels any pair).  The pairs are the ones the feature builder uses
(:func:`storage.history.closest_pairs`): for commit `c_n` and benchmark `b`, `c_o` is the
closest ancestor (merges included) with measurements of `b` and, unless profiling is off,
a profile of `b`.  Labels are recomputed on every collection, since a newly collected
commit can become the closest ancestor of others; only files whose contents change are
rewritten.

The project's settings arrive as :class:`LabelRules` (the application makes them from
``selector.toml``), so this layer reads no configuration file.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Iterable, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from storage.history import closest_pairs, commit_benchmark_pairs, group_pair_indices, measured_runs

if TYPE_CHECKING:
    from storage.store import Store


@dataclass(frozen=True)
class LabelRules:
    """What labelling needs of the project's configuration."""

    alpha: float  # the Mann-Whitney test's level
    min_effect: float  # the smallest relative change of the median that counts
    metrics: dict[str, str]  # benchmark -> its configured metric: runs of another metric are never compared
    directions: dict[str, str]  # benchmark -> "lower" or "higher" is better
    profiled: bool = True  # an old side needs a profile of the benchmark (profiling is on)


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
    per_benchmark: list[dict]  # benchmark, pairs, positive, negative, undecided
    undecided: dict[str, str] = field(default_factory=dict)  # benchmark -> why (the commonest reason), with the fix


def exact_benchmarks(calibration: pa.Table, rules: LabelRules) -> dict[str, bool]:
    """Benchmarks whose metric calibration (the store's calibration table) found exactly
    repeatable (A/A identical)."""
    if not calibration.num_rows:
        return {}
    return {
        row["benchmark"]: bool(row["exact"])
        for row in calibration.select(["benchmark", "metric", "exact"]).to_pylist()
        if rules.metrics.get(row["benchmark"]) == row["metric"]
    }


class PairLabeller:
    """Labels any (new, old, benchmark) pair from measurements (the store's table, or part of
    it), with the project's rules and the exactness the calibration table found."""

    def __init__(self, measurements: pa.Table, calibration: pa.Table, rules: LabelRules) -> None:
        good = measured_runs(measurements)
        if good.num_rows and "metric" in good.column_names:
            # Only runs of the metric the benchmark is configured with: a pair of two metrics
            # (seconds against instructions) is never compared.
            configured = pa.array([rules.metrics.get(name) for name in good["benchmark"].to_pylist()], pa.string())
            good = good.filter(pc.equal(good["metric"].cast(pa.string()), configured))
        values = good["value"].to_pylist() if good.num_rows else []
        # each (commit, benchmark)'s values, in their stored order
        self.values = {key: [values[row] for row in rows.tolist()]
                       for key, rows in group_pair_indices(good["commit"], good["benchmark"]).items()} if values else {}
        self.rules = rules
        self.exact = exact_benchmarks(calibration, rules)

    def label(self, new: str, old: str, benchmark: str) -> Label | None:
        """None when either side was never measured or the benchmark is not configured."""
        if (new, benchmark) not in self.values or (old, benchmark) not in self.values or benchmark not in self.rules.metrics:
            return None
        return label_pair(self.values[(old, benchmark)], self.values[(new, benchmark)], self.rules.alpha,
                          self.rules.min_effect, self.exact.get(benchmark, False), self.rules.directions[benchmark])

    def labels_and_effects(self, tuples: Iterable[tuple[str, str, str]]) -> tuple[list[bool | None], np.ndarray]:
        """The label (None where unlabelled) and the measured relative change (NaN where
        unlabelled) of each (new, old, benchmark)."""
        labels, effects = [], []
        for new, old, benchmark in tuples:
            found = self.label(new, old, benchmark)
            known = found is not None and found.label is not None
            labels.append(found.label if known else None)
            effects.append(found.effect if known else math.nan)
        return labels, np.asarray(effects, dtype=float)


def update_labels(store: Store, rules: LabelRules) -> LabelSummary:
    """Label the store's history anew and write each commit's labels whose contents changed."""
    by_commit = history_labels(store.read("commits"), store.read("measurements"), store.read("profiles"),
                               store.read("calibration"), rules)
    for sha, table in by_commit.items():
        if not store.has("labels", sha) or not _same(store.read_one("labels", sha), table):
            store.write("labels", sha, table)
    rows = [row for table in by_commit.values() for row in table.select(["benchmark", "label", "reason"]).to_pylist()]
    return LabelSummary(_summarize(rows), _undecided_reasons(rows))


def history_labels(commits: pa.Table, measurements: pa.Table, profiles: pa.Table, calibration: pa.Table,
                   rules: LabelRules) -> dict[str, pa.Table]:
    """The labels of a history (the store's tables), commit by commit: each measured commit
    against its closest measured (and, unless profiling is off, profiled) ancestor.  Reads
    nothing and writes nothing."""
    if not commits.num_rows or not measurements.num_rows:
        return {}
    parents = {sha: list(parents or ()) for sha, parents in zip(commits["sha"].to_pylist(), commits["parents"].to_pylist())}
    labeller = PairLabeller(measurements, calibration, rules)
    values = labeller.values
    profiled = commit_benchmark_pairs(profiles) if profiles.num_rows else set()

    rows = defaultdict(list)
    pairs = closest_pairs(sorted({commit for commit, _ in values}), list(rules.metrics), parents, set(values),
                          profiled if rules.profiled else None)
    for sha, old, benchmark, hops in pairs:
        if (sha, benchmark) not in values:
            continue  # a new commit is labelled only where it was measured itself
        label = labeller.label(sha, old, benchmark)
        rows[sha].append({"new": sha, "old": old, "benchmark": benchmark, "metric": rules.metrics[benchmark],
                          "hops": hops, "alpha": rules.alpha, "min_effect": rules.min_effect, **label.as_row()})
    return {sha: pa.Table.from_pylist(commit_rows) for sha, commit_rows in rows.items()}


def _undecided_reasons(rows: list[dict]) -> dict[str, str]:
    """benchmark -> the commonest reason of its undecided labels (the first by name, on a tie)."""
    reasons = defaultdict(Counter)
    for row in rows:
        if row["label"] is None:
            reasons[row["benchmark"]][row["reason"]] += 1
    return {benchmark: min(reason for reason, count in counts.items() if count == max(counts.values()))
            for benchmark, counts in sorted(reasons.items())}


def _same(stored: pa.Table, fresh: pa.Table) -> bool:
    """The same rows, value for value (NaN equal to NaN; types aside: a stored file has the
    store's declared types)."""
    if stored.column_names != fresh.column_names or stored.num_rows != fresh.num_rows:
        return False
    return all(_same_value(a, b) for old, new in zip(stored.to_pylist(), fresh.to_pylist()) for a, b in zip(old.values(), new.values()))


def _same_value(a, b) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return a == b


def _summarize(rows: list[dict]) -> list[dict]:
    counts: dict[str, dict] = {}
    for row in rows:
        count = counts.setdefault(row["benchmark"], {"benchmark": row["benchmark"], "pairs": 0, "positive": 0, "negative": 0,
                                                      "undecided": 0})
        count["pairs"] += 1
        count["positive" if row["label"] is True else "negative" if row["label"] is False else "undecided"] += 1
    return [counts[benchmark] for benchmark in sorted(counts)]
