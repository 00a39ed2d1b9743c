"""The test of one pair beyond significance: the calibrated spread a change must exceed,
equivalence (confidently below min_effect, however few the runs), near-exact counts and
the borderline pairs left undecided.  Pure functions; the CLI and real programs are
exercised in test_measurement_bias.py and test_undecided.py."""

from __future__ import annotations

import pyarrow as pa
import pytest

from perf_selector.storage.labels import LabelRules, calibrated_benchmarks, exact_benchmarks, label_pair


def test_a_change_within_the_layout_spread_is_undecided_and_beyond_it_changed():
    within = label_pair([100.0], [103.0], alpha=0.05, min_effect=0.01, exact=True, spread=0.045)
    assert within.label is None and within.decided_by == "" and "within the spread" in within.reason
    beyond = label_pair([100.0], [106.0], alpha=0.05, min_effect=0.01, exact=True, spread=0.045)
    assert beyond.label is True and beyond.decided_by == "exact" and beyond.spread == 0.045
    small = label_pair([100.0], [100.5], alpha=0.05, min_effect=0.01, exact=True, spread=0.045)
    assert small.label is False and small.decided_by == "exact"


def test_an_effect_far_below_min_effect_is_unchanged_even_with_one_run_a_side():
    # LevelDB under callgrind: two runs of one build differ by about 1e-6.
    near = label_pair([1_000_000.0], [1_000_001.0], alpha=0.05, min_effect=0.01, noise=2e-6)
    assert near.label is False and near.decided_by == "equivalence"
    # Not calibrated and one run a side: nothing is known of the noise.
    unknown = label_pair([1_000_000.0], [1_000_001.0], alpha=0.05, min_effect=0.01)
    assert unknown.label is None and "calibrate" in unknown.reason
    # Noisy (5%): one run a side cannot show an effect of 0.1% to be below 1%.
    noisy = label_pair([100.0], [100.1], alpha=0.05, min_effect=0.01, noise=0.05)
    assert noisy.label is None


def test_many_quiet_runs_show_equivalence_and_a_noisy_small_effect_stays_borderline():
    old = [100.0, 100.2, 99.9, 100.1, 99.8, 100.0, 100.1, 99.9]
    same = [100.1, 99.9, 100.0, 100.2, 99.8, 100.0, 99.9, 100.1]
    assert label_pair(old, same, alpha=0.05, min_effect=0.01).decided_by == "equivalence"
    noisy_old = [100.0, 104.0, 96.0, 101.0, 99.0]
    noisy_new = [101.0, 105.0, 97.0, 102.0, 100.0]
    borderline = label_pair(noisy_old, noisy_new, alpha=0.05, min_effect=0.01)
    assert borderline.label is None and "borderline" in borderline.reason
    changed = label_pair(old, [110.0, 110.1, 109.9, 110.2, 109.8, 110.0, 110.1, 109.9], alpha=0.05, min_effect=0.01)
    assert changed.label is True and changed.decided_by == "test"


def calibration(**columns) -> pa.Table:
    row = {"benchmark": "b", "metric": "instructions", "exact": False, "cv": 1e-7, **columns}
    return pa.Table.from_pylist([row])


RULES = LabelRules(alpha=0.05, min_effect=0.01, metrics={"b": "instructions"}, directions={"b": "lower"})


def test_a_near_exact_count_is_labelled_by_its_effect_and_its_runs_reused():
    near = calibration(tolerance=1e-6, layout_spread=0.0)
    assert exact_benchmarks(near, RULES) == {"b": True}
    assert calibrated_benchmarks(near, RULES)["b"].spread == pytest.approx(1e-6)
    loose = calibration(tolerance=0.02, layout_spread=0.0)  # threads decide what runs: 2% A/A
    assert exact_benchmarks(loose, RULES) == {"b": False}
    assert calibrated_benchmarks(loose, RULES)["b"].spread == pytest.approx(0.02)


def test_a_calibration_stored_before_tolerances_reads_as_exact_or_not():
    old = pa.Table.from_pylist([{"benchmark": "b", "metric": "instructions", "exact": True, "cv": 0.0}])
    found = calibrated_benchmarks(old, RULES)["b"]
    assert found.repeatable and found.spread == 0.0


def test_a_change_between_two_run_contexts_is_not_a_label_until_confirmed():
    from perf_selector.storage.labels import PairLabeller

    def runs(commit: str, value: float, context: str) -> list[dict]:
        return [{"commit": commit, "benchmark": "b", "metric": "instructions", "repetition": 0, "warmup": False,
                 "value": value, "status": "ok", "context": context}]

    exact = calibration(exact=True, tolerance=0.0, layout_spread=0.0)
    same = PairLabeller(pa.Table.from_pylist(runs("o", 100.0, "c1") + runs("n", 110.0, "c1")), exact, RULES)
    assert same.label("n", "o", "b").label is True
    moved = PairLabeller(pa.Table.from_pylist(runs("o", 100.0, "c1") + runs("n", 110.0, "c2")), exact, RULES)
    mixed = moved.label("n", "o", "b")
    assert mixed.label is None and "different run contexts" in mixed.reason and "selector confirm" in mixed.reason
    # Unchanged stays unchanged: a layout can make a change appear, the label already says there is none.
    quiet = PairLabeller(pa.Table.from_pylist(runs("o", 100.0, "c1") + runs("n", 100.0, "c2")), exact, RULES)
    assert quiet.label("n", "o", "b").label is False


def test_a_paired_confirmation_sees_through_drift_that_hides_a_change_from_the_unpaired_test():
    import numpy as np

    from perf_selector.storage.labels import label_paired

    # The machine's speed wanders by a factor of two over the session; every round, the new
    # binary takes 10% longer than the old one run beside it.
    drift = np.linspace(1.0, 2.0, 12)
    old = list(100.0 * drift)
    new = list(110.0 * drift * (1 + 0.01 * np.sin(np.arange(12))))
    assert label_pair(old, new, alpha=0.05, min_effect=0.01).label is not True
    paired = label_paired(old, new, alpha=0.05, min_effect=0.01)
    assert paired.label is True and paired.effect == pytest.approx(0.10, abs=0.01)
    same = label_paired(old, list(np.array(old) * (1 + 0.001 * np.sin(np.arange(12)))), alpha=0.05, min_effect=0.01)
    assert same.label is False and "equivalent" in same.reason


def test_calibration_says_how_many_repetitions_a_timed_label_needs_and_collect_reports_too_few():
    from perf_selector.selector.collection.calibrate import repetitions_needed
    from perf_selector.storage.labels import unfit_benchmarks

    # At alpha 0.05 the test needs 4 runs a side to reach alpha at all; a 1% effect in 2% noise
    # needs about 66 runs a side for 80% power, and more noise needs quadratically more.
    assert repetitions_needed(0.0, 0.01, 0.05) == 4
    quiet, noisy = repetitions_needed(0.02, 0.01, 0.05), repetitions_needed(0.04, 0.01, 0.05)
    assert 60 <= quiet <= 70 and noisy == pytest.approx(4 * quiet, rel=0.05)
    timed = pa.Table.from_pylist([{"benchmark": "b", "metric": "instructions", "exact": False, "fit": False,
                                   "unfit_reason": "5 repetitions cannot detect min_effect 0.01"}])
    assert unfit_benchmarks(timed, RULES) == {"b": "5 repetitions cannot detect min_effect 0.01"}
    assert unfit_benchmarks(calibration(exact=True), RULES) == {}


def test_a_shift_within_the_session_drift_is_not_a_change_and_equivalence_holds_with_the_drift_added():
    # Twenty quiet runs a side, the new side 5% slower: the test rejects equality at once.  If
    # two sessions of one build lie up to 8% apart, that 5% may be the machine, not the commit.
    old = [100.0 + 0.1 * (i % 5) for i in range(20)]
    new = [105.0 + 0.1 * (i % 5) for i in range(20)]
    assert label_pair(old, new, alpha=0.05, min_effect=0.01).label is True
    drifting = label_pair(old, new, alpha=0.05, min_effect=0.01, drift=0.08)
    assert drifting.label is None and drifting.decided_by == "" and "drift" in drifting.reason and "confirm" in drifting.reason
    beyond = label_pair(old, new, alpha=0.05, min_effect=0.01, drift=0.03)
    assert beyond.label is True and "session drift" in beyond.reason
    # Identical-looking sides are equivalent only while the drift that could hide a change
    # stays below min_effect.
    same = [100.0 + 0.1 * ((i + 2) % 5) for i in range(20)]
    assert label_pair(old, same, alpha=0.05, min_effect=0.01, drift=0.002).decided_by == "equivalence"
    hidden = label_pair(old, same, alpha=0.05, min_effect=0.01, drift=0.02)
    assert hidden.label is None and "borderline" in hidden.reason
    # A repeatable metric does not drift: the effect decides.
    assert label_pair([100.0], [105.0], alpha=0.05, min_effect=0.01, exact=True, drift=0.08).label is True


def test_session_drift_is_how_far_apart_two_sessions_medians_lie_and_only_noisy_metrics_have_it():
    from perf_selector.selector.collection.calibrate import session_drift

    # Medians 100, 102 and 110: pairwise 2%, 10% and 7.8%; the 0.95 quantile (higher) is the largest.
    assert session_drift([[99.0, 100.0, 101.0], [101.0, 102.0, 103.0], [109.0, 110.0, 111.0]], 0.05) == pytest.approx(0.10)
    assert session_drift([[5.0, 5.0]], 0.05) == 0.0
    rules = LabelRules(alpha=0.05, min_effect=0.01, metrics={"b": "wall_time"}, directions={"b": "lower"})
    timed = pa.Table.from_pylist([{"benchmark": "b", "metric": "wall_time", "exact": False, "cv": 0.05,
                                   "tolerance": 0.3, "layout_spread": 0.0, "session_drift": 0.04}])
    assert calibrated_benchmarks(timed, rules)["b"].drift == pytest.approx(0.04)
    counted = calibration(exact=True, tolerance=0.0, layout_spread=0.0, session_drift=0.04)
    assert calibrated_benchmarks(counted, RULES)["b"].drift == 0.0
    before = calibration(tolerance=0.3, layout_spread=0.0)  # stored before drift was measured
    assert calibrated_benchmarks(before, RULES)["b"].drift == 0.0


def test_an_interleaved_confirmation_is_not_held_against_the_drift_between_sessions():
    from perf_selector.storage.labels import PairLabeller

    rules = LabelRules(alpha=0.05, min_effect=0.01, metrics={"b": "wall_time"}, directions={"b": "lower"})
    timed = pa.Table.from_pylist([{"benchmark": "b", "metric": "wall_time", "exact": False, "cv": 0.01,
                                   "tolerance": 0.05, "layout_spread": 0.0, "session_drift": 0.08}])
    runs = [{"commit": commit, "benchmark": "b", "metric": "wall_time", "repetition": i, "warmup": False,
             "value": base + 0.1 * (i % 5), "status": "ok", "context": "c"}
            for commit, base in (("o", 100.0), ("n", 105.0)) for i in range(20)]
    unpaired = PairLabeller(pa.Table.from_pylist(runs), timed, rules)
    assert unpaired.label("n", "o", "b").label is None
    confirmations = pa.Table.from_pylist([
        {"new": "n", "old": "o", "benchmark": "b", "metric": "wall_time", "side": side, "round": r, "status": "ok",
         "value": (105.0 if side == "new" else 100.0) * (1 + 0.002 * (r % 3))}
        for r in range(12) for side in ("old", "new")])
    paired = PairLabeller(pa.Table.from_pylist(runs), timed, rules, confirmations).label("n", "o", "b")
    assert paired.label is True and paired.decided_by == "confirmation"


def _timed_runs(medians: dict[str, float], spread: float = 0.1) -> pa.Table:
    """Twenty wall times of each commit around its median."""
    return pa.Table.from_pylist([
        {"commit": commit, "benchmark": "b", "metric": "wall_time", "repetition": i, "warmup": False,
         "value": median * (1 + spread * ((i % 5) - 2) / 100), "status": "ok", "context": "c"}
        for commit, median in medians.items() for i in range(20)])


TIMED = LabelRules(alpha=0.05, min_effect=0.01, metrics={"b": "wall_time"}, directions={"b": "lower"})


def test_two_identical_binaries_are_unchanged_however_far_apart_their_sessions_ran():
    from perf_selector.storage.labels import PairLabeller

    # A comment-only commit builds the same binary; the machine ran 30% slower that day.
    runs = _timed_runs({"o": 100.0, "n": 130.0})
    calibrated = pa.Table.from_pylist([{"benchmark": "b", "metric": "wall_time", "exact": False, "cv": 0.01,
                                        "tolerance": 0.05, "layout_spread": 0.0, "session_drift": 0.02}])
    blind = PairLabeller(runs, calibrated, TIMED).label("n", "o", "b")
    assert blind.label is True  # without the binaries' digests, 30% beyond a 2% drift is a change
    same = PairLabeller(runs, calibrated, TIMED, binaries={"o": "digest-1", "n": "digest-1"}).label("n", "o", "b")
    assert same.label is False and same.decided_by == "identical" and same.effect == pytest.approx(0.30)
    other = PairLabeller(runs, calibrated, TIMED, binaries={"o": "digest-1", "n": "digest-2"}).label("n", "o", "b")
    assert other.label is True
    # A command that reads the checkout may run other inputs with the same binary.
    reading = LabelRules(alpha=0.05, min_effect=0.01, metrics={"b": "wall_time"}, directions={"b": "lower"},
                         reads_checkout=frozenset({"b"}))
    assert PairLabeller(runs, calibrated, reading, binaries={"o": "digest-1", "n": "digest-1"}).label("n", "o", "b").label


def test_the_drift_of_the_historys_identical_binaries_is_what_an_unpaired_label_must_exceed():
    from perf_selector.storage.labels import FEWEST_DRIFT_PAIRS, PairLabeller

    # Six commits of one binary measured across a drifting day (up to 25% apart), then a
    # commit that changes the code and runs 20% slower than its parent: as large as the
    # drift, so undecided; 40% slower is beyond it.
    medians = {"c0": 100.0, "c1": 110.0, "c2": 95.0, "c3": 118.75, "c4": 100.0, "c5": 105.0, "c6": 126.0, "c7": 147.0}
    binaries = {f"c{i}": "same" for i in range(6)} | {"c6": "slower", "c7": "slowest"}
    chain = [(f"c{i}", f"c{i - 1}", "b") for i in range(1, 8)]
    no_calibration = pa.table({})
    labeller = PairLabeller(_timed_runs(medians), no_calibration, TIMED, binaries=binaries, neighbours=chain)
    assert len([pair for pair in chain if binaries[pair[0]] == binaries[pair[1]]]) == FEWEST_DRIFT_PAIRS
    assert labeller.drift_of_history["b"] == pytest.approx(0.25)
    assert [labeller.label(new, old, "b").decided_by for new, old, _ in chain[:5]] == ["identical"] * 5
    within = labeller.label("c6", "c5", "b")
    assert within.label is None and "drift" in within.reason
    beyond = PairLabeller(_timed_runs(medians | {"c6": 147.0}), no_calibration, TIMED, binaries=binaries,
                          neighbours=chain).label("c6", "c5", "b")
    assert beyond.label is True
    # Fewer identical pairs than FEWEST_DRIFT_PAIRS say nothing of the history's drift.
    assert PairLabeller(_timed_runs(medians), no_calibration, TIMED, binaries=binaries,
                        neighbours=chain[:3]).drift_of_history == {}
