"""A jump table's cases priced at their own counts, on real gcc builds measured by callgrind.

tests/programs/jump_table.c interprets bytecode through a switch that gcc compiles to a jump
table: `jmp rax` to each case, with no-op padding before the cases it aligns.  The cases are no
known leaders (their addresses are in the table), so a block used to run from the padding into
the case, and a block's count is its first instruction's: the padding's, which never runs.  Every
changed case then seemed never to run again, and the predicted effect said the whole changed
share was gone.  Padding is a block of its own now.
"""

from __future__ import annotations

import pytest

from tests.helpers.scripted_history import measured_effect, scripted_history

BASE = {"EXTRA_FIELDS": "", "DUP_EXTRA": ""}
STEPS = [  # (name, what changes from the commit before)
    ("fields moved", {"EXTRA_FIELDS": "long created;"}),  # every case's displacements, no work
    ("more work", {"DUP_EXTRA": "vm->stack[vm->sp - 1] ^= vm->steps * 7;"}),  # one case does more
]


@pytest.fixture(scope="module")
def steps(tmp_path_factory):
    """Each step's (measured effect, its feature row)."""
    store, shas, table = scripted_history(tmp_path_factory.mktemp("jump_table") / "project", "jump_table.c", BASE, STEPS)
    return {name: (measured_effect(store, shas[name]), table.loc[name]) for name, _ in STEPS}


def test_moved_fields_in_every_case_predict_no_lost_work(steps):
    measured, row = steps["fields moved"]
    assert measured == 0  # the same instructions, run as often
    assert row["executed_changed_share"] > 0.3  # the cases carry the run, and each changed
    # before padding had blocks of its own: about 40%, the cases anchored to padding that never ran
    assert abs(row["predicted_effect"]) < 0.25 * 100 * row["executed_changed_share"]


def test_more_work_in_one_case_is_predicted_as_more_work(steps):
    measured, row = steps["more work"]
    predicted = row["predicted_effect"] / 100
    assert measured > 0.01
    assert predicted > 0 and 0.5 * measured < predicted < 2 * measured
