"""A changed loop bound in code run once, on real gcc builds measured by callgrind.

tests/programs/loop_bound.c runs a hot function a million times and, once, a tally whose loop
runs TALLY_ROUNDS times.  The bound grows from 64 to 3,000,000, so gcc encodes it in four bytes
where it took one (`cmp rdx, 0x40` becomes `cmp rdx, 0x2dc6c0`): still only a changed constant,
whose effect the old counts cannot price (the tally comes to carry most of the run).  The
constant hazard must fire, whatever the immediate's width, so that no model prunes it; then a
bound inside one width.
"""

from __future__ import annotations

import pytest

from perf_selector.features.catalogue import FEATURE_NAMES
from perf_selector.models.decision import fired_hazards
from tests.helpers.scripted_history import measured_effect, rule_runs_step, scripted_history

MIN_EFFECT = 0.01

STEPS = [  # (name, what changes from the commit before)
    ("wider", {"TALLY_ROUNDS": "3000000"}),  # a byte's immediate becomes four bytes'
    ("narrower", {"TALLY_ROUNDS": "100"}),  # and back to a byte's
    ("same width", {"TALLY_ROUNDS": "120"}),
]


@pytest.fixture(scope="module")
def history(tmp_path_factory):
    return scripted_history(tmp_path_factory.mktemp("bound") / "project", "loop_bound.c", {"TALLY_ROUNDS": "64"}, STEPS)


@pytest.mark.parametrize("step", ["wider", "narrower", "same width"])
def test_a_changed_loop_bound_is_a_constant_change_whatever_its_encoded_width(history, step):
    _, _, table = history
    row = table.loc[step]
    assert row["executed_changed_share"] > 0 and row["executed_steering_share"] > 0
    assert row["executed_constant_change"] > 0  # the inclusive share of tally, which holds the compare
    assert "executed_constant_change" in fired_hazards(table.loc[[step], FEATURE_NAMES].to_numpy(float)[0])
    assert rule_runs_step(table, step, MIN_EFFECT)


def test_the_grown_bound_does_move_the_run(history):
    store, shas, _ = history
    assert measured_effect(store, shas["wider"]) >= MIN_EFFECT  # the tally now carries most of the run
