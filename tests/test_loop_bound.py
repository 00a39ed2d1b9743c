"""A changed loop bound in code run once, on real gcc builds measured by callgrind.

tests/programs/loop_bound.c runs a hot function a million times and, once, a tally whose loop
runs TALLY_ROUNDS times.  The bound grows from 64 to 3,000,000, so gcc encodes it in four bytes
where it took one (`cmp rdx, 0x40` becomes `cmp rdx, 0x2dc6c0`): still only a changed constant,
whose effect the old counts cannot price (the tally comes to carry most of the run).  The
constant hazard must fire, whatever the immediate's width, so that no model prunes it; then the
bound shrinks back (the tally carried most of the run: it fires again).  Last, a bound inside one
width grows from 100 to 120 in a tally that carries a ten-thousandth of the run: a loop bound on
no path that carries the run, whose reach (the tally's inclusive share times the growth squared)
is under CONSTANT_REACH, fires no hazard.
"""

from __future__ import annotations

import pytest

from perf_selector.features.catalogue import FEATURE_NAMES
from perf_selector.features.steering import CONSTANT_REACH, within_reach
from perf_selector.models.decision import fired_hazards
from tests.helpers import program_text, regions_between
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


@pytest.mark.parametrize("step", ["wider", "narrower"])
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


def test_a_bound_grown_a_little_in_code_that_carries_little_fires_no_hazard(history):
    store, shas, table = history
    row = table.loc["same width"]
    assert row["executed_steering_share"] > 0  # the compare's constant reaches the loop's branch
    assert row["executed_constant_change"] == 0  # 120 / 100 squared times the tally's share: out of reach
    assert "executed_constant_change" not in fired_hazards(table.loc[["same width"], FEATURE_NAMES].to_numpy(float)[0])
    assert abs(measured_effect(store, shas["same width"])) < CONSTANT_REACH  # 20 more rounds of a million-call run


ESCAPING = r"""
#include <stdio.h>
static int state;
__attribute__((noipa)) int mode(void) { return MODE; }
__attribute__((noipa)) void set_mode(int *to) { *to = MODE; }
int main(void) { set_mode(&state); printf("%d %d\n", mode(), state); return 0; }
"""


@pytest.mark.parametrize("bounds, growth", [(("100", "120"), 1.2), (("120", "100"), 1.0), (("64", "3000000"), 46875.0)])
def test_a_loop_bound_ends_in_the_loops_branch_and_grows_as_its_immediate(tmp_path, bounds, growth):
    """The tally's compare is its only change: its value ends in the loop's branch (though the body's
    `test` replaces the flags only in part, clearing OF and CF and leaving AF undefined, before a
    cmov reads them), and its growth is the new bound over the old (1 for one that shrinks: it can
    take away at most the work it bounded)."""
    (region,) = regions_between(tmp_path, program_text("loop_bound.c"), "tally", {"TALLY_ROUNDS": list(bounds)})
    assert region.constants_only and region.steers and region.contained
    assert region.growth == pytest.approx(growth)
    assert within_reach(region, 1e-4) == (1e-4 * growth ** 2 >= CONSTANT_REACH)


@pytest.mark.parametrize("function", ["mode", "set_mode"])
def test_a_constant_returned_or_stored_through_a_pointer_is_within_reach_whatever_its_function_carries(tmp_path, function):
    (region,) = regions_between(tmp_path, ESCAPING, function, {"MODE": ["3", "4"]})
    assert region.constants_only and region.steers and not region.contained
    assert within_reach(region, 1e-9)
