"""Labels: did a benchmark's performance change between two commits?  The one labels
module: the test of one pair, labelling a history, and keeping the store's labels current.

**The test of one pair** (:func:`label_pair`).  A pair is *changed* when Mann-Whitney U
rejects equality at `alpha` **and** the relative change of the median is at least
`min_effect` **and** beyond the benchmark's *spread*: what calibration saw the metric do
on one build when only the run's context changed (environment size, path length:
measurement bias) or from run to run (the tolerance of a near-exact count), and, for a
timed metric whose two sides were measured in different sessions, the *drift*: how far
the medians of two sessions of one build lie apart (calibration's session A/A).  Drift
moves every run of a session alike, so the test, which weighs runs against runs, takes
it for a change; only the effect's size can be held against it.  It is
*unchanged* when the effect is confidently below `min_effect` (equivalence: the effect
plus its one-sided `alpha` margin, from the calibrated noise or the runs' own, stays
below it), however few the runs.  Everything else is *undecided*: a pair that could
still reach `min_effect`, or whose effect is within what layout alone does.

A metric that calibration showed to be repeatable (A/A runs identical, or within a
tolerance of a tenth of `min_effect`: multi-threaded code under callgrind) is labelled by
the effect alone: with (nearly) identical repetitions the test has nothing to add, and
with one repetition it cannot reject anything.  Each label says what decided it
(`decided_by`) and the spread it was decided against.

**Labelling a history** (:func:`history_labels`, a function of the store's tables that
reads and writes nothing; :func:`update_labels` reads them and writes what changed;
:class:`PairLabeller` labels any pair).  The pairs are the ones the feature builder uses
(:func:`storage.history.closest_pairs`): for commit `c_n` and benchmark `b`, `c_o` is the
closest ancestor (merges included) with measurements of `b` and, unless profiling is off,
a profile of `b`.  Labels are recomputed on every collection, since a newly collected
commit can become the closest ancestor of others; only files whose contents change are
rewritten.  A pair with an interleaved confirmation (the `confirmations` table, written by
`selector confirm`: both binaries run in turn in one session) is labelled from those runs,
with the same test and calibration but no drift, since its two sides shared a session
(`decided_by = "confirmation"`).

**Changed labels confirmed under perturbation** (:func:`perturbed_effects`, applied by
:class:`PairLabeller`).  Layouts differ from commit to commit, and one commit's spread does
not bound another's, so a changed pair is re-measured on both sides in several perturbed run
contexts (the `perturbed` table, which `selector collect` fills: selector/collection/perturbed_labels.py)
and stays changed only if it holds in every configured context it was measured in: a count's
effect keeps its sign and exceeds max(min_effect, spread) (:func:`holds_under`); a noisy
metric's rounds there are not shown, by the paired test, within min_effect or changed the
other way.  Otherwise it is undecided, the reason naming the context and its effect.

The project's settings arrive as :class:`LabelRules` (the application makes them from
``selector.toml``), so this layer reads no configuration file.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from dataclasses import asdict, dataclass, field, replace
from typing import TYPE_CHECKING, Container, Iterable, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from perf_selector.collectors.metrics import is_count
from perf_selector.collectors.run_context import Perturbation
from perf_selector.storage.history import closest_pairs, commit_benchmark_pairs, group_pair_indices, measured_runs

if TYPE_CHECKING:
    from perf_selector.storage.store import Store


@dataclass(frozen=True)
class LabelRules:
    """What labelling needs of the project's configuration."""

    alpha: float  # the Mann-Whitney test's level
    min_effect: float  # the smallest relative change of the median that counts
    metrics: dict[str, str]  # benchmark -> its configured metric: runs of another metric are never compared
    directions: dict[str, str]  # benchmark -> "lower" or "higher" is better
    profiled: bool = True  # an old side needs a profile of the benchmark (profiling is on)
    # benchmarks whose command reads files of the checkout: two identical binaries may still
    # run different inputs, so their runs are not alike
    reads_checkout: Container[str] = frozenset()
    # the run contexts a changed label is re-measured in (`[labels] perturbed_contexts`); empty: none
    perturbed_contexts: tuple[Perturbation, ...] = ()


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
    spread: float = 0.0  # the calibrated spread (layout, tolerance) the effect had to exceed
    decided_by: str = ""  # exact | test | equivalence | confirmation; empty when undecided

    def as_row(self) -> dict:
        return asdict(self)


def label_pair(
    old: Sequence[float], new: Sequence[float], alpha: float, min_effect: float, exact: bool = False, direction: str = "lower",
    spread: float = 0.0, noise: float | None = None, drift: float = 0.0,
) -> Label:
    """The label of one pair of samples.  `exact`: the metric is repeatable (label by the
    effect); `spread`: the relative effect layout alone can make (calibration); `noise`:
    the calibrated relative spread of one run (None when not calibrated); `drift`: the
    relative effect two sessions of one build show (calibration), for a noisy metric whose
    sides ran in different sessions: a change must exceed it, and equivalence must hold
    with it added, since it moves a whole side and no test of runs against runs sees it."""
    old_values = np.asarray([v for v in old if v is not None and not math.isnan(v)], dtype=float)
    new_values = np.asarray([v for v in new if v is not None and not math.isnan(v)], dtype=float)
    spread = float(spread or 0.0)
    if len(old_values) == 0 or len(new_values) == 0:
        return Label(len(old_values), len(new_values), math.nan, math.nan, math.nan, math.nan, math.nan, exact, None, False,
                     "no successful runs on one side", spread)
    median_old, median_new = float(np.median(old_values)), float(np.median(new_values))
    effect = _relative_change(median_old, median_new)
    statistic, p_value = _mann_whitney(old_values, new_values)
    size = abs(effect)
    large_enough = size >= min_effect and effect != 0
    beyond_spread = large_enough and size > spread
    within_spread = _within_spread(size, min_effect, spread)
    if exact:
        if beyond_spread:
            label, reason, decided_by = True, f"exact metric: |effect| {size:.3g} >= {min_effect:g} and > spread {spread:.3g}", "exact"
        elif large_enough:
            label, reason, decided_by = None, within_spread, ""
        else:
            label, reason, decided_by = False, f"exact metric: |effect| {size:.3g} < {min_effect:g}", "exact"
    else:
        drift = float(drift or 0.0)
        bound = equivalence_bound(old_values, new_values, median_old, size, alpha, noise)
        if bound is not None and drift:
            bound = max(bound, size + drift)
        significant = p_value < alpha
        beyond_drift = size > drift
        if bound is not None and bound < min_effect:
            label, decided_by = False, "equivalence"
            reason = f"equivalent: |effect| {size:.3g} + its margin at alpha {alpha:g} = {bound:.3g} < {min_effect:g}"
        elif len(old_values) < 2 or len(new_values) < 2:
            label, decided_by = None, ""
            reason = "fewer than 2 runs on one side and the metric is not known to be exact (run selector calibrate)"
        elif smallest_p_value(len(old_values), len(new_values)) >= alpha:
            # With 2 runs a side the test's smallest p-value is 0.33: it could never say "changed",
            # and a label of "unchanged" would be a guess presented as a finding.
            label, decided_by = None, ""
            reason = (f"{len(old_values)} and {len(new_values)} runs: too few for the Mann-Whitney test to reach "
                      f"alpha {alpha:g} (add repetitions, or run selector calibrate if the metric is exact)")
        elif significant and beyond_spread and beyond_drift:
            label, decided_by = True, "test"
            reason = (f"p={p_value:.3g} < alpha {alpha:g}; |effect|={size:.3g} >= {min_effect:g} and > spread {spread:.3g}"
                      + (f" and > session drift {drift:.3g}" if drift else ""))
        elif significant and beyond_spread:
            label, decided_by = None, ""
            reason = (f"|effect| {size:.3g} >= {min_effect:g} but within the drift {drift:.3g} between two sessions of one "
                      "build (selector calibrate's, or the history's identical binaries'): the sides ran in different "
                      "sessions, so the machine's drift can make it (selector confirm runs both in one session)")
        elif significant and large_enough:
            label, reason, decided_by = None, within_spread, ""
        else:
            # Neither a change nor shown to be below min_effect: more runs (or an interleaved
            # confirmation) can still decide it either way.
            label, decided_by = None, ""
            reason = (f"borderline: p={p_value:.3g}, |effect|={size:.3g}, and the effect's upper bound "
                      f"{'%.3g' % bound if bound is not None else 'unknown'} reaches {min_effect:g}: neither a change nor "
                      "equivalence (more repetitions, or selector confirm)")
    return Label(len(old_values), len(new_values), median_old, median_new, effect, statistic, p_value, exact, label,
                 _regression(label, effect, direction), reason, spread, decided_by)


def _within_spread(size: float, min_effect: float, spread: float) -> str:
    """Why an effect of `size` is undecided: large enough, but no larger than layout alone makes."""
    return (f"|effect| {size:.3g} >= {min_effect:g} but within the spread {spread:.3g} that the run's context alone "
            "makes (selector calibrate): a change cannot be told from layout")


def _regression(label: bool | None, effect: float, direction: str) -> bool:
    """A change the wrong way for the metric's direction."""
    return bool(label) and ((effect > 0) if direction == "lower" else (effect < 0))


# The median's standard error over the mean's, for normal data (sqrt(pi/2)): the effect is a
# change of medians.
_MEDIAN_EFFICIENCY = math.sqrt(math.pi / 2)


def equivalence_bound(old: np.ndarray, new: np.ndarray, median_old: float, size: float, alpha: float,
                      noise: float | None) -> float | None:
    """The upper one-sided `alpha` bound of the relative effect's size (TOST's bound): the
    effect plus t (or z, with calibrated noise) times its standard error.  The noise is
    the larger of the calibrated one (one run's relative spread) and what the pair's own
    runs show; None when neither is known (one run a side, never calibrated)."""
    from scipy.stats import norm, t

    observed, freedom = None, len(old) + len(new) - 2
    if freedom > 0 and median_old:
        pooled = ((len(old) - 1) * np.var(old, ddof=1 if len(old) > 1 else 0)
                  + (len(new) - 1) * np.var(new, ddof=1 if len(new) > 1 else 0)) / freedom
        observed = math.sqrt(max(pooled, 0.0)) / abs(median_old)
    if noise is None and observed is None:
        return None
    if noise is not None and (observed is None or noise >= observed):
        deviation, quantile = noise, float(norm.ppf(1 - alpha))
    else:
        deviation, quantile = observed, float(t.ppf(1 - alpha, freedom))
    margin = quantile * deviation * _MEDIAN_EFFICIENCY * math.sqrt(1 / len(old) + 1 / len(new))
    return size + margin


def smallest_p_value(n_old: int, n_new: int) -> float:
    """The smallest two-sided p-value the exact Mann-Whitney test can give for these sample
    sizes: both orderings that separate the samples completely, of all C(n_old+n_new, n_old)."""
    return min(1.0, 2 / math.comb(n_old + n_new, n_old))


def drift_quantile(effects: Sequence[float], alpha: float) -> float:
    """The drift a set of A/A effects between sessions shows: the 1 - `alpha` quantile of their
    sizes (0 when there are none).  Calibration's sessions and the history's pairs of
    identical binaries are both measured by it."""
    if not len(effects):
        return 0.0
    return float(np.quantile(np.abs(np.asarray(effects, dtype=float)), 1 - alpha, method="higher"))


def fewest_decisive_runs(alpha: float) -> int:
    """The fewest runs a side with which the Mann-Whitney test can reach `alpha` at all."""
    return next(n for n in range(1, 100) if smallest_p_value(n, n) < alpha)


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
    unfit: dict[str, str] = field(default_factory=dict)  # benchmark -> why calibration found it cannot be labelled as configured


# A count whose A/A runs differ by at most this share of min_effect is labelled by the
# effect alone (near-exact: multi-threaded code under callgrind differs by about 1e-6).
NEAR_EXACT_SHARE_OF_MIN_EFFECT = 0.1


@dataclass(frozen=True)
class Calibrated:
    """What calibration found of one benchmark's metric, as labels use it."""

    repeatable: bool  # label by the effect alone: A/A identical, or within the near-exact tolerance
    spread: float  # the relative effect the run's context (and the tolerance) alone makes: labels must exceed it
    noise: float | None  # one run's relative spread (coefficient of variation over all A/A runs)
    drift: float = 0.0  # the relative effect two sessions of one build show: unpaired labels must exceed it


def calibrated_benchmarks(calibration: pa.Table, rules: LabelRules) -> dict[str, Calibrated]:
    """Each calibrated benchmark of the configured metric: repeatable or not, its spread and
    noise.  Calibrations stored before tolerances and context spreads were measured read
    as exact-or-not, with no spread."""
    if not calibration.num_rows:
        return {}
    found = {}
    for row in calibration.to_pylist():
        if rules.metrics.get(row["benchmark"]) != row["metric"]:
            continue
        tolerance = row.get("tolerance")
        tolerance = 0.0 if tolerance is None and row["exact"] else tolerance
        repeatable = bool(row["exact"]) or (tolerance is not None and near_exact(tolerance, rules.min_effect))
        spread = label_spread(row["metric"], repeatable, tolerance or 0.0, row.get("layout_spread") or 0.0)
        drift = 0.0 if repeatable else row.get("session_drift") or 0.0  # a count does not drift with the machine
        found[row["benchmark"]] = Calibrated(repeatable, spread, row.get("cv"), drift)
    return found


def near_exact(tolerance: float, min_effect: float) -> bool:
    """A/A runs that differ by at most this are repeatable enough to label by the effect alone."""
    return tolerance <= NEAR_EXACT_SHARE_OF_MIN_EFFECT * min_effect


def label_spread(metric: str, repeatable: bool, tolerance: float, layout_spread: float) -> float:
    """The relative effect a label must exceed: the layout spread, and for a count (or any
    repeatable metric) its A/A tolerance too.  A count's tolerance is what threads decide, a
    bound on its effect.  A timed metric's A/A range is run-to-run scatter, the test's (and the
    equivalence bound's) to weigh: as a threshold it grows with the runs (20 A/A wall times on
    a busy machine spanned 56-135% of their median, which no change could exceed)."""
    counted = repeatable or is_count(metric)
    return max(layout_spread, tolerance if counted else 0.0)


def exact_benchmarks(calibration: pa.Table, rules: LabelRules) -> dict[str, bool]:
    """Benchmarks whose metric calibration found repeatable (A/A identical, or near-exact
    within the tolerance): labelled by the effect alone, and their runs reusable."""
    return {name: found.repeatable for name, found in calibrated_benchmarks(calibration, rules).items()}


# The fewest pairs of identical binaries a benchmark needs before their effects are taken
# for the drift of the history's sessions.
FEWEST_DRIFT_PAIRS = 5


class PairLabeller:
    """Labels any (new, old, benchmark) pair from measurements (the store's table, or part of
    it), with the project's rules and the exactness the calibration table found.  A pair with
    an interleaved confirmation (the `confirmations` table) is labelled from its runs instead:
    both sides measured in one session, so the drift between collections cancels.

    Given each commit's binary (`binaries`: commit -> the content digest of its build), a
    noisy metric's pair of two identical binaries is unchanged (`decided_by = "identical"`):
    the same code and data in the same normalised context, so whatever the runs show is the
    machine's.  Those pairs are also the history's own A/A: the sessions of a real collection
    (other load, hours or days apart) drift more than calibration's minutes can show, so the
    1 - alpha quantile of their effects (:meth:`learn_history_drift`) joins the calibrated drift
    that an unpaired label must exceed; `neighbours` are the pairs whose identical ones say it
    (the closest pairs of the history, as labelled)."""

    def __init__(self, measurements: pa.Table, calibration: pa.Table, rules: LabelRules,
                 confirmations: pa.Table | None = None, binaries: dict[str, str] | None = None,
                 neighbours: Iterable[tuple[str, str, str]] = (), perturbed: pa.Table | None = None) -> None:
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
        self.calibrated = calibrated_benchmarks(calibration, rules)
        self.confirmed = confirmed_values(confirmations, rules)
        self.perturbed = perturbed_rounds(perturbed, rules)
        self.contexts = _run_contexts(good)
        self.binaries = {commit: digest for commit, digest in (binaries or {}).items() if digest}
        self.drift_of_history: dict[str, float] = {}
        self.learn_history_drift(neighbours)

    def label(self, new: str, old: str, benchmark: str) -> Label | None:
        """None when either side was never measured or the benchmark is not configured."""
        if (new, benchmark) not in self.values or (old, benchmark) not in self.values or benchmark not in self.rules.metrics:
            return None
        calibrated = self.calibrated.get(benchmark, Calibrated(False, 0.0, None))
        if not calibrated.repeatable and self._identical(new, old, benchmark):
            label = self._unpaired(new, old, benchmark, calibrated)
            return replace(label, label=False, regression=False, decided_by="identical", reason=(
                f"identical binaries, run alike: a difference is the machine's, not the commit's ({label.reason})"))
        confirmed = self.confirmed.get((new, old, benchmark))
        if confirmed is None:
            label = self._within_one_context(self._unpaired(new, old, benchmark, calibrated), new, old, benchmark)
        else:
            # Runs that shared a session, round by round: the confirmation decides, by the paired test.
            old_values, new_values = confirmed
            label = label_paired(old_values, new_values, self.rules.alpha, self.rules.min_effect, calibrated.repeatable,
                                 self.rules.directions[benchmark], spread=calibrated.spread)
            label = replace(label, decided_by="confirmation" if label.label is not None else "",
                            reason=f"interleaved in one session ({len(old_values)} rounds): {label.reason}")
        return self._under_perturbation(label, new, old, benchmark)

    def _under_perturbation(self, label: Label, new: str, old: str, benchmark: str) -> Label:
        """A changed `label`, unless its re-measurement under a configured perturbed context
        (the `perturbed` table) lost its sign or fell to max(min_effect, spread): then undecided,
        naming the context.  A pair not yet re-measured keeps its label (`selector collect`
        re-measures every changed pair it labels, and the stored ones that lack it)."""
        measured = self.perturbed.get((new, old, benchmark))
        if label.label is not True or not measured or not self.rules.perturbed_contexts:
            return label
        contexts = [(context, measured[context]) for context in self.rules.perturbed_contexts if context in measured]
        if not contexts:
            return label
        effects = []
        for context, (old, new) in contexts:
            effect = _median_effect(old, new)
            refuted = self._refuted_in_context(label, benchmark, old, new, effect)
            if refuted:
                # Undecided, not unchanged: the effect depends on the layout, so neither "changed" nor
                # "below min_effect" holds of the commit; unchanged would need the effect shown below
                # min_effect in every context (equivalence), and in the normalised one it was not.
                return replace(label, label=None, regression=False, decided_by="", reason=(
                    f"not confirmed under perturbation: in the context {context.describe()} {refuted}, against "
                    f"{label.effect:+.3%} as labelled: the change cannot be told from layout; {label.reason}"))
            effects.append(effect)
        effects = ", ".join(f"{effect:+.3%}" for effect in effects)
        return replace(label, reason=f"{label.reason}; held in {len(contexts)} perturbed contexts ({effects})")

    def _refuted_in_context(self, label: Label, benchmark: str, old: dict[int, float], new: dict[int, float],
                            effect: float | None) -> str:
        """Why one perturbed context's runs refute a changed `label`, or "" when they do not.

        A count (repeatable, one run a side) is what it is: it must keep the sign and exceed
        max(min_effect, spread) there, as a change must anywhere.  A noisy metric's few rounds a
        context are judged by the paired test of `selector confirm` (each round's sides ran in
        turn): the label falls only where they show the effect within min_effect (equivalence)
        or a change of the other sign; a point estimate that merely falls short is what noise
        does to a real change (a +9.6% wall-clock slowdown measured +0.93% in one context)."""
        if effect is None:
            return "no successful run on a side"
        threshold = max(self.rules.min_effect, label.spread)
        if label.exact:
            if holds_under(effect, label.effect, self.rules.min_effect, label.spread):
                return ""
            return (f"the effect was {effect:+.3%} (a change keeps its sign and exceeds max(min_effect, spread) = "
                    f"{threshold:.3g} in every context)")
        rounds = sorted(old.keys() & new.keys())  # a round pairs only where both its sides ran
        paired = label_paired([old[r] for r in rounds], [new[r] for r in rounds], self.rules.alpha, self.rules.min_effect,
                              False, self.rules.directions[benchmark], label.spread)
        opposite = paired.label is True and (paired.effect > 0) != (label.effect > 0)
        if paired.label is False or opposite:
            return f"the effect was {effect:+.3%} ({paired.reason})"
        return ""

    def _unpaired(self, new: str, old: str, benchmark: str, calibrated: Calibrated) -> Label:
        """The label of the two sides' own runs, from two sessions: beyond the calibrated drift
        and the history's."""
        drift = 0.0 if calibrated.repeatable else max(calibrated.drift, self.drift_of_history.get(benchmark, 0.0))
        return label_pair(self.values[(old, benchmark)], self.values[(new, benchmark)], self.rules.alpha,
                          self.rules.min_effect, calibrated.repeatable, self.rules.directions[benchmark],
                          spread=calibrated.spread, noise=calibrated.noise, drift=drift)

    def _identical(self, new: str, old: str, benchmark: str) -> bool:
        """Did both sides run the same binary on the same inputs?"""
        digest = self.binaries.get(new)
        return digest is not None and digest == self.binaries.get(old) and benchmark not in self.rules.reads_checkout

    def learn_history_drift(self, neighbours: Iterable[tuple[str, str, str]]) -> dict[str, float]:
        """Take the history's drift from the `neighbours` (new, old, benchmark: the closest
        pairs labels compare) whose sides are identical binaries, and return it: benchmark ->
        the drift_quantile of their effects, for the benchmarks calibration did not find
        repeatable that have at least FEWEST_DRIFT_PAIRS such pairs."""
        effects: dict[str, list[float]] = defaultdict(list)
        for new, old, benchmark in neighbours:
            if (new, benchmark) not in self.values or (old, benchmark) not in self.values or \
                    not self._identical(new, old, benchmark) or \
                    self.calibrated.get(benchmark, Calibrated(False, 0.0, None)).repeatable:
                continue
            sides = [[v for v in self.values[(commit, benchmark)] if v is not None and not math.isnan(v)] for commit in (old, new)]
            if all(sides):
                effects[benchmark].append(_relative_change(float(np.median(sides[0])), float(np.median(sides[1]))))
        self.drift_of_history = {benchmark: drift_quantile(found, self.rules.alpha)
                                 for benchmark, found in effects.items() if len(found) >= FEWEST_DRIFT_PAIRS}
        return self.drift_of_history

    def _within_one_context(self, label: Label, new: str, old: str, benchmark: str) -> Label:
        """`label`, unless its sides ran in different contexts (another environment or path
        length: another layout), where a change may be the layout's: then undecided, until
        an interleaved confirmation runs both in one context."""
        old_contexts, new_contexts = self.contexts.get((old, benchmark), set()), self.contexts.get((new, benchmark), set())
        if not old_contexts or not new_contexts or old_contexts == new_contexts or label.label is not True:
            return label
        return replace(label, label=None, regression=False, decided_by="", reason=(
            f"measured in different run contexts ({', '.join(sorted(old_contexts))} and {', '.join(sorted(new_contexts))}: "
            f"another environment or path length, another layout): run selector confirm; {label.reason}"))

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


def _run_contexts(runs: pa.Table) -> dict[tuple[str, str], set[str]]:
    """(commit, benchmark) -> the run contexts its runs had (collectors/run_context.py); none
    known for stores collected before contexts were recorded, and for imported results."""
    if not runs.num_rows or "context" not in runs.column_names:
        return {}
    contexts = defaultdict(set)
    for commit, benchmark, context in zip(runs["commit"].to_pylist(), runs["benchmark"].to_pylist(),
                                          runs["context"].to_pylist()):
        if context:
            contexts[(commit, benchmark)].add(context)
    return dict(contexts)


def confirmed_values(confirmations: pa.Table | None, rules: LabelRules) -> dict[tuple[str, str, str], tuple[list, list]]:
    """(new, old, benchmark) -> the old and the new side's values of its interleaved confirmation,
    round by round (the i-th of each list ran in the same round): its measured rounds in which
    both sides succeeded, of the benchmark's configured metric.  A confirmation without such a
    round decides nothing and is left out."""
    if confirmations is None or not confirmations.num_rows:
        return {}
    rounds: dict[tuple[str, str, str], dict[int, dict[str, float]]] = defaultdict(lambda: defaultdict(dict))
    for row in confirmations.select(["new", "old", "benchmark", "metric", "side", "round", "status", "value"]).to_pylist():
        if row["status"] == "ok" and row["round"] >= 0 and rules.metrics.get(row["benchmark"]) == row["metric"]:
            rounds[(row["new"], row["old"], row["benchmark"])][row["round"]][row["side"]] = row["value"]
    paired = {}
    for key, by_round in rounds.items():
        both = [by_round[number] for number in sorted(by_round) if {"old", "new"} <= set(by_round[number])]
        if both:
            paired[key] = ([sides["old"] for sides in both], [sides["new"] for sides in both])
    return paired


def perturbed_effects(perturbed: pa.Table | None, rules: LabelRules
                      ) -> dict[tuple[str, str, str], dict[Perturbation, float | None]]:
    """(new, old, benchmark) -> each perturbed context it was re-measured in -> the relative
    effect of the medians there (new over old, measured rounds of the configured metric; None
    when a side has no successful run there)."""
    return {pair: {context: _median_effect(old, new) for context, (old, new) in contexts.items()}
            for pair, contexts in perturbed_rounds(perturbed, rules).items()}


def _median_effect(old: dict[int, float], new: dict[int, float]) -> float | None:
    """The relative effect of the medians of each side's runs; None when a side has none."""
    if not old or not new:
        return None
    return _relative_change(float(np.median(list(old.values()))), float(np.median(list(new.values()))))


def perturbed_rounds(perturbed: pa.Table | None, rules: LabelRules
                     ) -> dict[tuple[str, str, str], dict[Perturbation, tuple[dict[int, float], dict[int, float]]]]:
    """(new, old, benchmark) -> each perturbed context it was re-measured in -> (old, new): the
    successful measured rounds of the configured metric on each side, by round (the sides of
    one round ran one after the other: they pair)."""
    if perturbed is None or not perturbed.num_rows:
        return {}
    sides: dict[tuple, dict[str, dict[int, float]]] = defaultdict(lambda: {"old": {}, "new": {}})
    columns = ["new", "old", "benchmark", "metric", "environment_padding", "path_padding", "side", "round", "status", "value"]
    for row in perturbed.select(columns).to_pylist():
        if rules.metrics.get(row["benchmark"]) != row["metric"]:
            continue
        context = Perturbation(row["environment_padding"], row["path_padding"])
        values = sides[(row["new"], row["old"], row["benchmark"], context)]
        if row["status"] == "ok" and row["round"] >= 0 and row["value"] is not None and not math.isnan(row["value"]):
            values[row["side"]][row["round"]] = row["value"]
    rounds: dict[tuple[str, str, str], dict[Perturbation, tuple[dict[int, float], dict[int, float]]]] = defaultdict(dict)
    for (new, old, benchmark, context), values in sides.items():
        rounds[(new, old, benchmark)][context] = (values["old"], values["new"])
    return dict(rounds)


def holds_under(effect: float, labelled: float, min_effect: float, spread: float) -> bool:
    """Does a change of `labelled` hold where the effect is `effect`: the same sign, at least
    `min_effect` and beyond `spread` (what label_pair asks of a change)?"""
    size = abs(effect)
    return size >= min_effect and size > spread and effect != 0 and (effect > 0) == (labelled > 0)


def label_paired(old: Sequence[float], new: Sequence[float], alpha: float, min_effect: float, exact: bool = False,
                 direction: str = "lower", spread: float = 0.0) -> Label:
    """The label of an interleaved confirmation: `old[i]` and `new[i]` ran in the same round, so
    each round's ratio new/old cancels what drifts slower than a round.  The effect is the
    median ratio's change; the test is Wilcoxon's signed-rank test on the log ratios (paired,
    far stronger than comparing the two samples when the machine's speed wanders: the
    same 10% slowdown at a 17% CV gave p 0.014 paired and 0.09 unpaired); equivalence bounds
    the effect by the ratios' own scatter.  A repeatable metric is labelled by its effect, as
    :func:`label_pair` does."""
    if exact or len(old) < 2:
        return label_pair(old, new, alpha, min_effect, exact, direction, spread)
    from scipy.stats import t, wilcoxon

    logs = np.log(np.asarray(new, dtype=float) / np.asarray(old, dtype=float))
    median_old, median_new = float(np.median(old)), float(np.median(new))
    effect = float(np.expm1(np.median(logs)))
    size = abs(effect)
    p_value = 1.0 if np.all(logs == 0) else float(wilcoxon(logs, alternative="two-sided").pvalue)
    statistic = float(np.sum(logs > 0))
    bound = size + float(t.ppf(1 - alpha, len(logs) - 1)) * float(np.std(logs, ddof=1)) * _MEDIAN_EFFICIENCY / math.sqrt(len(logs))
    smallest = 2 / 2 ** len(logs)  # Wilcoxon's smallest two-sided p-value for n rounds
    large_enough = size >= min_effect and effect != 0
    if bound < min_effect:
        label, decided_by = False, "confirmation"
        reason = f"paired, equivalent: |effect| {size:.3g} + its margin at alpha {alpha:g} = {bound:.3g} < {min_effect:g}"
    elif p_value < alpha and large_enough and size > spread:
        label, decided_by = True, "confirmation"
        reason = f"paired: Wilcoxon p={p_value:.3g} < alpha {alpha:g}; |effect|={size:.3g} >= {min_effect:g} and > spread {spread:.3g}"
    elif p_value < alpha and large_enough:
        label, decided_by = None, ""
        reason = "paired: " + _within_spread(size, min_effect, spread)
    else:
        label, decided_by = None, ""
        reason = (f"paired, borderline: Wilcoxon p={p_value:.3g}, |effect|={size:.3g}, upper bound {bound:.3g} reaches "
                  f"{min_effect:g}" + (f" ({len(logs)} rounds cannot reach alpha)" if smallest >= alpha else ""))
    return Label(len(old), len(new), median_old, median_new, effect, statistic, p_value, exact, label,
                 _regression(label, effect, direction), reason, spread, decided_by)


def update_labels(store: Store, rules: LabelRules, by_commit: dict[str, pa.Table] | None = None) -> LabelSummary:
    """Label the store's history anew (or take `by_commit`, :func:`store_history_labels` of the
    store as it is) and write each commit's labels whose contents changed."""
    calibration = store.read("calibration")
    if by_commit is None:
        by_commit = store_history_labels(store, rules, calibration)
    for sha, table in by_commit.items():
        if not store.has("labels", sha) or not _same(store.read_one("labels", sha), table):
            store.write("labels", sha, table)
    rows = [row for table in by_commit.values() for row in table.select(["benchmark", "label", "reason"]).to_pylist()]
    # a calibrated benchmark the history no longer measures (a name taken out of a suite) says nothing
    labelled = {row["benchmark"] for row in rows}
    unfit = {name: why for name, why in unfit_benchmarks(calibration, rules).items() if name in labelled}
    return LabelSummary(_summarize(rows), _undecided_reasons(rows), unfit)


def store_history_labels(store: Store, rules: LabelRules, calibration: pa.Table | None = None) -> dict[str, pa.Table]:
    """:func:`history_labels` of the store's tables, commit by commit (nothing written)."""
    # Confirmed pairs keep the labels their interleaved runs decided (`selector confirm`); changed
    # ones re-measured under perturbed contexts stay changed only if they held there.
    return history_labels(store.read("commits"), store.read("measurements"), store.read("profiles"),
                          store.read("calibration") if calibration is None else calibration, rules,
                          store.read("confirmations"), store.read("perturbed"))


def unfit_benchmarks(calibration: pa.Table, rules: LabelRules) -> dict[str, str]:
    """benchmark -> why calibration found its metric cannot label it as configured (A/A
    counts that differ by more than min_effect; too few repetitions for the noise)."""
    if not calibration.num_rows or "fit" not in calibration.column_names:
        return {}
    return {row["benchmark"]: row["unfit_reason"] for row in calibration.to_pylist()
            if row["fit"] is False and rules.metrics.get(row["benchmark"]) == row["metric"]}


def history_labels(commits: pa.Table, measurements: pa.Table, profiles: pa.Table, calibration: pa.Table,
                   rules: LabelRules, confirmations: pa.Table | None = None, perturbed: pa.Table | None = None,
                   ) -> dict[str, pa.Table]:
    """The labels of a history (the store's tables), commit by commit: each measured commit
    against its closest measured (and, unless profiling is off, profiled) ancestor; a pair
    with an interleaved confirmation is labelled from it, and a changed one re-measured under
    perturbed contexts stays changed only if it held in them.  Reads nothing and writes nothing."""
    if not commits.num_rows or not measurements.num_rows:
        return {}
    parents = {sha: list(parents or ()) for sha, parents in zip(commits["sha"].to_pylist(), commits["parents"].to_pylist())}
    labeller = PairLabeller(measurements, calibration, rules, confirmations, binary_digests(commits), perturbed=perturbed)
    values = labeller.values  # of each benchmark's configured metric
    profiled = commit_benchmark_pairs(profiles) if profiles.num_rows else set()

    rows = defaultdict(list)
    # The benchmarks measured and configured: a suite's are known by the names it was measured under.
    benchmarks = sorted({benchmark for _, benchmark in values if benchmark in rules.metrics})
    pairs = closest_pairs(sorted({commit for commit, _ in values}), benchmarks, parents, set(values),
                          profiled if rules.profiled else None)
    # The closest pairs of identical binaries say how far the history's sessions drift.
    labeller.learn_history_drift([(sha, old, benchmark) for sha, old, benchmark, _ in pairs])
    for sha, old, benchmark, hops in pairs:
        if (sha, benchmark) not in values:
            continue  # a new commit is labelled only where it was measured itself
        label = labeller.label(sha, old, benchmark)
        rows[sha].append({"new": sha, "old": old, "benchmark": benchmark, "metric": rules.metrics[benchmark],
                          "hops": hops, "alpha": rules.alpha, "min_effect": rules.min_effect, **label.as_row()})
    return {sha: pa.Table.from_pylist(commit_rows) for sha, commit_rows in rows.items()}


def binary_digests(commits: pa.Table) -> dict[str, str]:
    """commit -> the content digest of its binary; empty for a store that does not record them."""
    if not commits.num_rows or "content_digest" not in commits.column_names:
        return {}
    return {sha: digest for sha, digest in zip(commits["sha"].to_pylist(), commits["content_digest"].to_pylist()) if digest}


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
