"""Straight-line work against code that steers, on real gcc builds measured by callgrind.

tests/programs/straight_line.c runs a start-up function once, a hot function a million times,
and a mode main chooses once.  A scripted history changes one at a time (each commit against
its parent).  A change whose control flow is the old one and whose changed values reach no
decision is straight-line work: the old run's counts price it exactly, so the executed-changed
rule skips it when that price is far below min_effect, and runs it otherwise; code that steers
always runs.
"""

from __future__ import annotations

import pytest

from tests.helpers.scripted_history import measured_effect, rule_runs_step, scripted_history

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


def test_work_added_to_a_block_run_once_is_straight_line_and_skipped(history):
    _, _, table = history
    once = table.loc["once"]
    assert once["executed_changed_share"] > 0  # the changed block ran: the rule of old would run it
    assert once["executed_steering_share"] == 0
    assert abs(once["predicted_effect"]) < 100 * MIN_EFFECT / 10
    assert not rule_runs_step(table, "once", MIN_EFFECT)
    assert not bool(once["label"])  # and the count did not change by min_effect


def test_the_same_work_in_a_block_run_a_million_times_runs(history):
    store, shas, table = history
    hot = table.loc["hot"]
    assert abs(hot["predicted_effect"]) >= 100 * MIN_EFFECT  # two more instructions a million times
    assert rule_runs_step(table, "hot", MIN_EFFECT)
    assert abs(measured_effect(store, shas["hot"])) >= MIN_EFFECT


def test_a_changed_branch_condition_run_once_whose_other_side_carries_the_run_runs(history):
    store, shas, table = history
    mode = table.loc["mode"]
    assert mode["executed_steering_share"] > 0  # the compare's changed constant reaches the branch
    assert abs(mode["predicted_effect"]) < 100 * MIN_EFFECT  # its own cost says nothing of the other side
    assert rule_runs_step(table, "mode", MIN_EFFECT)
    assert abs(measured_effect(store, shas["mode"])) >= MIN_EFFECT


def test_start_up_code_that_only_reorders_its_own_straight_line_code_is_skipped(history):
    _, _, table = history
    reorder = table.loc["reorder"]
    assert reorder["changed_functions"] >= 1 and reorder["executed_changed_share"] > 0  # the binary did change
    assert reorder["executed_steering_share"] == 0
    assert not rule_runs_step(table, "reorder", MIN_EFFECT)
    assert not bool(reorder["label"])
