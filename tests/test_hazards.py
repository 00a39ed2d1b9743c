"""Hazards decide, models prune the ordinary (models/decision.py), on real gcc builds measured
by callgrind.

tests/programs/hazards.c is changed one hazard at a time, each commit against its parent: the
CPU-feature check picks the slower summing routine; main gains a start-up call that switches
on a mode the hot loop reads; the size cut-off in the hot loop's caller sends the work down
the slower path; then a comment.  Each hazard slows the benchmark (its label says so, read
from the store); `select` must run it with the shipped cross-project model and with the
executed-changed rule alone, and run nothing for the comment.
"""

from __future__ import annotations

from pathlib import Path

import msgspec
import numpy as np
import pytest

from perf_selector.features.catalogue import FEATURE_NAMES
from perf_selector.models.decision import (HARMLESS_AFTER, HAZARDS, SCORE_RESOLUTION, decide, fired_hazards, harmless_hazards,
                             harmless_mask)
from perf_selector.selector.config import SelectSection, load_config
from tests.helpers.scripted_history import scripted_history

CPU_CHECK = "__get_cpuid_count(7, 0, &a, &b, &c, &d) && (b & bit_AVX512F) != 0"  # valgrind has no AVX-512
BASE = {"DISPATCH": "(d & bit_SSE2) != 0", "MODE": "", "CUTOFF": "1024"}
STEPS = [
    ("dispatch", {"DISPATCH": CPU_CHECK}),  # the wide routine is no longer chosen
    ("mode", {"MODE": "enable_checking();"}),  # start-up switches on the checking mode
    ("cutoff", {"CUTOFF": "8192"}),  # every call now takes the simple, slower path
    ("comment", {"CUTOFF": "8192 /* below it the simple path is cheaper */"}),
]
EXPECTED_HAZARD = {"dispatch": "changed_cpu_dispatch", "mode": "changed_startup_share",
                   "cutoff": "executed_constant_change"}


@pytest.fixture(scope="module")
def hazards(tmp_path_factory):
    return scripted_history(tmp_path_factory.mktemp("hazards") / "project", "hazards.c", BASE, STEPS)


def _decisions(store, shas, policy: str) -> dict:
    """select's decision of each step against its parent, under [select] policy = `policy`."""
    from perf_selector.selector.selection.selection import select

    root = Path(store.root).parent
    config = load_config(root / "selector.toml")
    config = msgspec.structs.replace(config, select=SelectSection(policy=policy))
    return {step: select(root, config, store, shas[step]).benchmarks[0] for step, _ in STEPS}


@pytest.mark.slow
def test_each_hazard_slows_the_benchmark_and_fires_its_feature(hazards):
    store, shas, table = hazards
    effects = store.read("labels").to_pandas().set_index("new")["effect"]  # callgrind's counts, new against old
    for step, feature in EXPECTED_HAZARD.items():
        assert effects[shas[step]] > 0.2, step  # a real slowdown, far beyond min_effect
        assert feature in fired_hazards(table.loc[step, FEATURE_NAMES].to_numpy(float)), step
    assert effects[shas["comment"]] == 0.0
    assert fired_hazards(table.loc["comment", FEATURE_NAMES].to_numpy(float)) == []


@pytest.mark.slow
def test_a_changed_compare_immediate_counts_as_executed_changed_code(hazards):
    """The cut-off's `cmp` ran once a call: the block holding it changed (its immediate did), so
    the executed share counts it, small as it is, and the executed-changed rule runs the benchmark."""
    _, _, table = hazards
    row = table.loc["cutoff"]
    assert 0 < row["executed_changed_share"] < 1e-3
    assert row["predicted_effect"] == pytest.approx(0.0, abs=1e-3)  # the same instructions, another path
    assert row["executed_constant_change"] > 0.5  # process() carries the run


@pytest.mark.slow
@pytest.mark.parametrize("policy", ["auto", "rule"])
def test_every_hazard_runs_and_a_comment_runs_nothing(hazards, policy):
    store, shas, _ = hazards
    decisions = _decisions(store, shas, policy)
    for step in EXPECTED_HAZARD:
        assert decisions[step].decision == "run", (step, decisions[step].reason)
    assert decisions["comment"].decision == "skip", decisions["comment"].reason
    for step in EXPECTED_HAZARD:  # where the model alone would have pruned it, the hazard is why it runs
        decision = decisions[step]
        if decision.probability is not None and decision.probability < decision.threshold - 1e-6:
            assert decision.reason.startswith(f"hazard: {EXPECTED_HAZARD[step]}") or \
                decision.reason.startswith("hazard: ") and EXPECTED_HAZARD[step] in decision.reason, decision.reason
    if policy == "rule":
        assert all("executed-changed rule" in decisions[step].reason for step in EXPECTED_HAZARD)


def _row(**values: float) -> np.ndarray:
    row = np.zeros(len(FEATURE_NAMES))
    for name, value in values.items():
        row[FEATURE_NAMES.index(name)] = value
    return row


def test_a_hazard_runs_what_the_model_would_prune_within_the_rule():
    ordinary = _row(executed_changed_share=0.01)
    steering = _row(executed_changed_share=1e-6, executed_constant_change=0.26)
    unexecuted = _row(executed_constant_change=0.26)  # the rule does not run it: nor does the hazard
    features = np.vstack([ordinary, steering, unexecuted])
    low = np.full(3, 0.2)
    decided = decide(low, np.full(3, 0.5), features, 0.01, within=np.array([True, True, False]))
    assert decided.run.tolist() == [False, True, False]
    assert decided.why.tolist() == ["skip", "hazard", "skip"]


def test_data_written_for_cold_readers_is_no_hazard_and_for_hot_ones_it_is():
    """changed_writes_hot_data is the share of the run its readers carry (their own instructions):
    Duktape's readers of the heap state its changed code stores to carried 3e-7 of it."""
    cold = _row(executed_changed_share=1e-3, changed_writes_hot_data=2.8e-7)
    hot = _row(executed_changed_share=1e-6, changed_writes_hot_data=0.05)  # a hot loop reads what start-up wrote
    assert fired_hazards(cold) == [] and fired_hazards(hot) == ["changed_writes_hot_data"]
    assert fired_hazards(_row(changed_writes_hot_data=HAZARDS["changed_writes_hot_data"])) == ["changed_writes_hot_data"]


def test_a_hazard_the_projects_history_shows_harmless_may_be_pruned():
    steering = _row(executed_changed_share=1e-6, changed_cpu_dispatch=1.0)
    features = np.vstack([steering] * (HARMLESS_AFTER + 2))
    benchmarks = ["a"] * HARMLESS_AFTER + ["b", "b"]
    shown = harmless_hazards(features, np.zeros(len(features), bool), benchmarks)
    assert shown == {"a": {"changed_cpu_dispatch": {"fired": HARMLESS_AFTER, "changes": 0}}}  # b: too few pairs
    one_change = harmless_hazards(features, np.eye(1, len(features), 0, dtype=bool)[0], benchmarks)
    assert one_change == {}
    decided = decide(np.array([0.2, 0.2]), np.array([0.5, 0.5]), np.vstack([steering, steering]), 0.01,
                     harmless=harmless_mask(shown, ["a", "b"]))
    assert decided.run.tolist() == [False, True]


def test_a_score_a_float32_rounding_below_its_threshold_reaches_it():
    """The ONNX form scores in float32: the change train set the threshold to include scored
    0.3974410236 there against 0.3974410594.  One precision decides: it runs, and a score a
    real step below does not."""
    threshold = 0.3974410594
    scores = np.array([np.float32(0.3974410236), threshold - 10 * SCORE_RESOLUTION])
    decided = decide(scores, np.full(2, threshold), np.zeros((2, len(FEATURE_NAMES))), 0.01)
    assert decided.model_runs.tolist() == [True, False]


def test_every_hazard_is_a_feature_of_the_catalogue():
    assert set(HAZARDS) <= set(FEATURE_NAMES)


@pytest.mark.slow
def test_start_up_code_the_run_never_went_through_or_that_does_straight_line_work_fires_no_hazard(tmp_path):
    """main's branch for an argument the benchmark does not give changes (its scale): the run
    never went through it, so the start-up hazard does not fire.  The same main changing the
    value it does pass on the run's path fires it.  main then computes a stamp, which no code
    reads, with another factor: the run goes through the change, but it is straight-line work that
    moves nothing main's callees do, and fires no hazard (issue 47); nor does a changed constant
    in that work."""
    stamps = "stamp_sum = (unsigned long) argc * 3 + 1; stamp_xor = (unsigned long) argc ^ 0x55;"
    steps = [("untaken", {"SCALE": "8"}), ("taken", {"VERBOSITY": "3"}),
             ("straight", {"STAMP_WORK": stamps.replace("* 3", "* 5")}),
             ("stamp_constant", {"STAMP_WORK": stamps.replace("* 3", "* 5").replace("0x55", "0x66")})]
    _, _, table = scripted_history(tmp_path / "project", "other_mode.c",
                                   {"SCALE": "4", "VERBOSITY": "1", "STAMP_WORK": stamps}, steps)
    assert "changed_startup_share" not in fired_hazards(table.loc["untaken", FEATURE_NAMES].to_numpy(float))
    assert table.loc["untaken", "executed_changed_share"] == 0.0
    assert "changed_startup_share" in fired_hazards(table.loc["taken", FEATURE_NAMES].to_numpy(float))
    straight = table.loc["straight"]
    assert straight["changed_functions"] >= 1 and straight["executed_changed_share"] > 0  # main changed, and ran it
    assert straight["executed_steering_share"] == 0
    assert straight["changed_startup_share"] == 0.0
    assert fired_hazards(table.loc["straight", FEATURE_NAMES].to_numpy(float)) == []
    assert not bool(straight["label"])
    # a changed constant (the xor's) in code the run goes through, whose value only reaches a global
    # no code reads: no constant hazard, whatever share of the run main's callees carry
    constant = table.loc["stamp_constant"]
    assert constant["executed_changed_share"] > 0 and constant["executed_steering_share"] == 0
    assert constant["executed_constant_change"] == 0.0
    assert fired_hazards(table.loc["stamp_constant", FEATURE_NAMES].to_numpy(float)) == []
    assert not bool(constant["label"])



@pytest.mark.slow
def test_changed_code_that_allocates_is_a_hazard_and_other_changed_code_is_not(tmp_path):
    """LMDB's page allocator inverted the condition of its memset (init by default): the changed
    branch runs as often as before, and the work it turns on is a C library call the old run
    never made, outside every changed block.  Changed allocating code the run executes fires
    the hazard, and select runs it within the rule whatever the model scores; a change to the
    loop that never allocates does not fire it, nor does a change to the allocator's report that
    the run never makes (issue 47: the hazard fires on the change the run goes through)."""
    steps = [("flipped", {"INIT_WHEN": "!(flags & FLAG_CLEAN)"}), ("loop", {"STORES": "1600"}),
             ("report", {"REPORTED": "PAGE / 2"})]
    store, shas, table = scripted_history(tmp_path / "project", "page_init.c",
                                          {"INIT_WHEN": "flags & FLAG_CLEAN", "STORES": "1500", "REPORTED": "PAGE"}, steps)
    effects = store.read("labels").to_pandas().set_index("new")["effect"]  # callgrind's counts, new against old
    assert effects[shas["flipped"]] > 0.02  # the memset of every page: above the 1% minimum effect
    flipped = table.loc["flipped", FEATURE_NAMES].to_numpy(float)
    assert table.loc["flipped", "reached_changed_allocating"] >= 1
    assert "reached_changed_allocating" in fired_hazards(flipped)
    loop = table.loc["loop", FEATURE_NAMES].to_numpy(float)
    assert table.loc["loop", "reached_changed_allocating"] == 0 and "reached_changed_allocating" not in fired_hazards(loop)
    # the report's function calls malloc and ran, but its changed block did not
    assert effects[shas["report"]] == 0.0
    assert table.loc["report", "changed_calls_allocator"] == 1 and table.loc["report", "reached_changed_allocating"] == 0
    decided = decide(np.zeros(1), np.full(1, 0.5), flipped[None, :], 0.01, within=np.array([True]))
    assert decided.run.tolist() == [True] and decided.why.tolist() == ["hazard"], \
        table.loc["flipped", ["executed_changed_share", "predicted_effect", "executed_steering_share"]]
