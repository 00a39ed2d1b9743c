"""Changed data and the code that reads it, on real gcc builds measured by callgrind (issue 47: what
tells the size of a change; docs/studies/2026-12-07-a-table-the-hot-code-looks-up.md).

tests/programs/table_readers.c loops, for each byte of a buffer, as many times as a constant table
says: `weigh` names its table itself, `weigh_copy` reads a heap copy that `main` hands to the loader
once.  One entry of either table grows from 2 to 200: no instruction changes, and the run grows by
about 9% either way.  Only the first is a table the hot code looks up, as Berry's interned strings
are looked up in its generated constant string table, whose buckets all move when a built-in adds a
name: changed_data_readers_share weighs it by `weigh`'s own share of the run.  The copy read at
start-up weighs `main`'s, almost nothing (as an interpreter's boot image does: what it changes in the
run is not told by who reads it); changed_data_reached counts both, and the rule runs both.
"""

from __future__ import annotations

import pytest

from tests.helpers.scripted_history import measured_effect, rule_runs_step, scripted_history

# Each step grows one table's entry 7 from 2 to 200 (the commit before as its old side).
STEPS = [("hot table", {"HOT_WEIGHT": "200"}), ("start-up table", {"COPIED_WEIGHT": "200"})]


@pytest.fixture(scope="module")
def history(tmp_path_factory):
    base = {"HOT_WEIGHT": "2", "COPIED_WEIGHT": "2"}
    return scripted_history(tmp_path_factory.mktemp("readers") / "project", "table_readers.c", base, STEPS)


@pytest.mark.parametrize("step", ["hot table", "start-up table"])
def test_a_changed_table_moves_the_run_with_no_code_changed_and_the_rule_runs_it(history, step):
    store, shas, table = history
    row = table.loc[step]
    assert row["executed_changed_share"] == 0 and row["changed_functions"] == 0
    assert row["changed_data_reached"] >= 1
    assert rule_runs_step(table, step, min_effect=0.01)
    assert measured_effect(store, shas[step]) > 0.05


def test_a_table_the_hot_loop_looks_up_weighs_as_its_readers_share_of_the_run(history):
    _, _, table = history
    assert 0.3 < table.loc["hot table", "changed_data_readers_share"] < 0.7  # weigh's own share; weigh_copy the rest


def test_a_table_read_once_at_start_up_weighs_only_the_start_up_code(history):
    _, _, table = history
    assert table.loc["start-up table", "changed_data_readers_share"] < 0.001  # main, which hands it to the loader
