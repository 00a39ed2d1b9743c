"""Straight-line work against code that steers, on real gcc builds measured by callgrind.

tests/programs/straight_line.c runs a start-up function once, a hot function a million times,
and a mode main chooses once.  A scripted history changes one at a time (each commit against
its parent).  A change whose control flow is the old one and whose changed values reach no
decision is straight-line work: the old run's counts price it exactly, so the executed-changed
rule skips it when that price is far below min_effect, and runs it otherwise; code that steers
always runs.
"""

from __future__ import annotations

import numpy as np
import pytest

from perf_selector.features.catalogue import FEATURE_NAMES
from perf_selector.models.decision import decide_by_policy
from perf_selector.models.names import STEPPING_ASIDE_RULE
from tests.helpers.scripted_history import scripted_history

BASE = {
    "SETUP_WORK": "setup_sum = seed * 3 + 1; setup_xor = seed ^ 0x55;",
    "MIX_WORK": "value = value * 31 + 7;",
    "MODE_CONDITION": "argc > 0",
}
STEPS = [  # (name, what changes from the commit before)
    ("once", {"SETUP_WORK": "setup_sum = (seed * 3 + 1) ^ (seed >> 7); setup_xor = seed ^ 0x55;"}),  # work in a block run once
    ("hot", {"MIX_WORK": "value = (value * 31 + 7) ^ (value >> 7);"}),  # the same work in a block run a million times
    ("mode", {"MODE_CONDITION": "argc > 1"}),  # a branch run once: its other side now carries the run
    ("reorder", {"SETUP_WORK": "setup_xor = seed ^ 0x55; setup_sum = (seed * 3 + 1) ^ (seed >> 7);"}),  # same work, other order
]
MIN_EFFECT = 0.01


@pytest.fixture(scope="module")
def history(tmp_path_factory):
    return scripted_history(tmp_path_factory.mktemp("straight") / "project", "straight_line.c", BASE, STEPS)


def _effect(store, sha: str) -> float:
    """The measured relative change of the benchmark's count from the commit's parent (uncalibrated,
    two runs a side leave a change's label undecided; the count is exact)."""
    labels = store.read_one("labels", sha).to_pandas()
    return float(labels["effect"].iloc[0])


def _runs(table, step: str) -> bool:
    """Whether select's decision code, as the executed-changed rule decides, runs the step's benchmark."""
    row = table.loc[[step], FEATURE_NAMES].to_numpy(float)
    return bool(decide_by_policy(STEPPING_ASIDE_RULE, np.zeros(1), np.full(1, 0.5), row, MIN_EFFECT)[0])


def test_work_added_to_a_block_run_once_is_straight_line_and_skipped(history):
    _, _, table = history
    once = table.loc["once"]
    assert once["executed_changed_share"] > 0  # the changed block ran: the rule of old would run it
    assert once["executed_steering_share"] == 0
    assert abs(once["predicted_effect"]) < 100 * MIN_EFFECT / 10
    assert not _runs(table, "once")
    assert not bool(once["label"])  # and the count did not change by min_effect


def test_the_same_work_in_a_block_run_a_million_times_runs(history):
    store, shas, table = history
    hot = table.loc["hot"]
    assert abs(hot["predicted_effect"]) >= 100 * MIN_EFFECT  # two more instructions a million times
    assert _runs(table, "hot")
    assert abs(_effect(store, shas["hot"])) >= MIN_EFFECT


def test_a_changed_branch_condition_run_once_whose_other_side_carries_the_run_runs(history):
    store, shas, table = history
    mode = table.loc["mode"]
    assert mode["executed_steering_share"] > 0  # the compare's changed constant reaches the branch
    assert abs(mode["predicted_effect"]) < 100 * MIN_EFFECT  # its own cost says nothing of the other side
    assert _runs(table, "mode")
    assert abs(_effect(store, shas["mode"])) >= MIN_EFFECT


def test_start_up_code_that_only_reorders_its_own_straight_line_code_is_skipped(history):
    _, _, table = history
    reorder = table.loc["reorder"]
    assert reorder["changed_functions"] >= 1 and reorder["executed_changed_share"] > 0  # the binary did change
    assert reorder["executed_steering_share"] == 0
    assert not _runs(table, "reorder")
    assert not bool(reorder["label"])
