"""The test of one pair beyond significance: the calibrated spread a change must exceed,
equivalence (confidently below min_effect, however few the runs), near-exact counts and
the borderline pairs left undecided.  Pure functions; the CLI and real programs are
exercised in test_measurement_bias.py and test_undecided.py."""

from __future__ import annotations

import pyarrow as pa
import pytest

from storage.labels import LabelRules, calibrated_benchmarks, exact_benchmarks, label_pair


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
    from storage.labels import PairLabeller

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

    from storage.labels import label_paired

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
    from selector.calibrate import repetitions_needed
    from storage.labels import unfit_benchmarks

    # At alpha 0.05 the test needs 4 runs a side to reach alpha at all; a 1% effect in 2% noise
    # needs about 66 runs a side for 80% power, and more noise needs quadratically more.
    assert repetitions_needed(0.0, 0.01, 0.05) == 4
    quiet, noisy = repetitions_needed(0.02, 0.01, 0.05), repetitions_needed(0.04, 0.01, 0.05)
    assert 60 <= quiet <= 70 and noisy == pytest.approx(4 * quiet, rel=0.05)
    timed = pa.Table.from_pylist([{"benchmark": "b", "metric": "instructions", "exact": False, "fit": False,
                                   "unfit_reason": "5 repetitions cannot detect min_effect 0.01"}])
    assert unfit_benchmarks(timed, RULES) == {"b": "5 repetitions cannot detect min_effect 0.01"}
    assert unfit_benchmarks(calibration(exact=True), RULES) == {}
