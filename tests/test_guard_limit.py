"""A guard's changed limit in an interpreter's loop, on real gcc builds measured by callgrind (issue 47:
hazards that fire only when code steers).

tests/programs/guard_limit.c checks, before each of a million steps of a switch compiled to a jump
table, its stack's depth (at most 3) against STACK_LIMIT (`cmp r12, LIMIT` and a branch to or
around the spill), and the operation against SKIP_LIMIT (a branch to the loop's latch).  Only a
compare's immediate changes (the limits are chosen so that gcc allocates the same registers), the
interpreter loop carries the whole run, and the constant hazard fired on every such change.  The
old run's exact counts tell which cannot decide otherwise:

- a limit raised above a guard the old run never passed (SKIP_LIMIT 100 to 120, STACK_LIMIT 40 to
  48): fewer values pass it, none did, none will; it steers nothing, no hazard fires, the rule
  skips it, and the count does not move;
- a limit lowered (48 to 8): more depths pass it, and which the old run had is not known from the
  compare: the hazard fires, though here the count does not move;
- lowered below the depth reached (8 to 2): it fires, and the spilling moves the run;
- raised (2 to 3) where the old run went both ways: it fires, and the count moves.
"""

from __future__ import annotations

import iced_x86
import pytest

from perf_selector.collectors.code_image import CodeImage
from perf_selector.features.catalogue import FEATURE_NAMES
from perf_selector.models.decision import fired_hazards
from tests.helpers import program_text, regions_between
from tests.helpers.scripted_history import measured_effect, rule_runs_step, scripted_history

MIN_EFFECT = 0.01
BASE = {"STACK_LIMIT": "40", "SKIP_LIMIT": "100"}

STEPS = [  # (name, what changes from the commit before)
    ("skip raised", {"SKIP_LIMIT": "120"}),
    ("raised, never passed", {"STACK_LIMIT": "48"}),
    ("lowered", {"STACK_LIMIT": "8"}),
    ("below the depth", {"STACK_LIMIT": "2"}),
    ("raised, passed both ways", {"STACK_LIMIT": "3"}),
]


@pytest.fixture(scope="module")
def history(tmp_path_factory):
    return scripted_history(tmp_path_factory.mktemp("guard") / "project", "guard_limit.c", BASE, STEPS)


def _fires(table, step: str) -> bool:
    return "executed_constant_change" in fired_hazards(table.loc[[step], FEATURE_NAMES].to_numpy(float)[0])


@pytest.mark.parametrize("step", ["skip raised", "raised, never passed"])
def test_a_limit_raised_over_a_guard_the_old_run_never_passed_steers_nothing_and_is_skipped(history, step):
    store, shas, table = history
    row = table.loc[step]
    assert row["executed_changed_share"] > 0.01  # the guard runs on every step of the run
    assert row["executed_steering_share"] == 0  # its constant reaches the guard's branch, which goes as it went
    assert row["executed_constant_change"] == 0 and not _fires(table, step)
    assert not rule_runs_step(table, step, MIN_EFFECT)  # straight-line work, and none: the rule skips it
    assert measured_effect(store, shas[step]) == 0


@pytest.mark.parametrize("step", ["lowered", "below the depth", "raised, passed both ways"])
def test_a_limit_whose_branch_could_go_otherwise_fires_the_constant_hazard(history, step):
    _, _, table = history
    assert table.loc[step, "executed_constant_change"] > 0.9  # the interpreter loop's inclusive share
    assert _fires(table, step) and rule_runs_step(table, step, MIN_EFFECT)


@pytest.mark.parametrize("step", ["below the depth", "raised, passed both ways"])
def test_the_guards_that_fire_do_move_the_run(history, step):
    store, shas, _ = history
    assert abs(measured_effect(store, shas[step])) >= MIN_EFFECT


def test_the_side_that_must_never_have_run_is_the_spills(tmp_path):
    """Raised, the stack guard is told by its spilling side: the branch's target if gcc branches to
    the spill (it must never have been taken), the instruction after it if gcc branches around it
    (it must always have been)."""
    (region,) = regions_between(tmp_path, program_text("guard_limit.c"), "run", {"STACK_LIMIT": ["40", "48"], "SKIP_LIMIT": ["100", "100"]})
    assert region.constants_only and region.contained
    (quiet,) = region.quiet_branches
    image = CodeImage.load(str(tmp_path / "side0"))
    spill = image.function_parts(["spill"], 0)[0][0]
    side = quiet.target if quiet.never_taken else quiet.next
    calls = [i.near_branch_target for i in iced_x86.Decoder(64, image.read(side, 32), ip=side) if i.mnemonic == iced_x86.Mnemonic.CALL]
    assert calls[:1] == [spill]


EQUALITY = r"""
#include <stdio.h>
__attribute__((noipa)) long count(long n) {
    long total = 0;
    for (long i = 0; i < n; i++)
        if ((i & 1023) == MAGIC) total += i * 7; else total ^= i;
    return total;
}
int main(void) { printf("%ld\n", count(1000000)); return 0; }
"""


def test_an_equalitys_changed_constant_is_never_quiet(tmp_path):
    """Which value equals the new constant the old run cannot say: no branch is told."""
    regions = regions_between(tmp_path, EQUALITY, "count", {"MAGIC": ["700", "900"]})
    assert regions and all(region.quiet_branches is None for region in regions)
