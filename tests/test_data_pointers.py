"""Data reached through data, on real gcc builds measured by callgrind.

tests/programs/data_tables.c looks a key up in a member table that main reaches only through
pointers stored in data (a registry, then a class structure).  Its code never changes: a new
member changes what every lookup walks, which no changed block tells, and which the
executed-changed rule must still run (Berry's generated member maps, docs/studies/
2026-11-28-straight-line-and-berry.md).  A table nothing points to changes nothing.
"""

from __future__ import annotations

import numpy as np
import pytest

from perf_selector.collectors.data_pointers import pointer_graph, reached_through
from perf_selector.collectors.elf_image import ElfImage
from perf_selector.features.catalogue import FEATURE_NAMES
from perf_selector.models.decision import decide_by_policy
from perf_selector.models.names import STEPPING_ASIDE_RULE
from tests.helpers import compile_c
from tests.helpers.scripted_history import scripted_history, scripted_source

BASE = {"MEMBERS": '{"alpha", 1}, {"zeta", 2}', "OTHER": '{"x", 1}'}
STEPS = [  # (name, what changes from the commit before)
    ("members", {"MEMBERS": '{"alpha", 1}, {"beta", 3}, {"zeta", 2}'}),  # every lookup walks one more member
    ("other", {"OTHER": '{"x", 1}, {"y", 2}'}),  # a table nothing points to
]


@pytest.fixture(scope="module")
def history(tmp_path_factory):
    return scripted_history(tmp_path_factory.mktemp("pointers") / "project", "data_tables.c", BASE, STEPS)


@pytest.mark.parametrize("flags", ["-O2 -g", "-O2 -g -no-pie -fno-pie"])
def test_the_pointer_graph_follows_relocations_and_fixed_addresses(tmp_path, flags):
    """A position-independent binary's pointers are relocations, a fixed-address one's are words
    of the objects' bytes: both lead from the registry to the member table, and to nothing else."""
    binary = compile_c(scripted_source(BASE, "data_tables.c"), tmp_path / "tables", flags)
    image = ElfImage.load(binary)
    objects = sorted((symbol.address, symbol.address + symbol.size, symbol.raw) for symbol in image.symbols
                     if symbol.raw in ("registry", "klass", "members", "unreferenced"))
    starts, ends, names = (np.array([row[i] for row in objects], dtype=object if i == 2 else np.int64) for i in range(3))
    graph = pointer_graph(image, names, starts, ends)
    assert graph["registry"] == {"klass"} and graph["klass"] == {"members"}
    assert reached_through({"registry"}, graph) == {"registry", "klass", "members"}


def _runs(table, step: str) -> bool:
    row = table.loc[[step], FEATURE_NAMES].to_numpy(float)
    return bool(decide_by_policy(STEPPING_ASIDE_RULE, np.zeros(1), np.full(1, 0.5), row, 0.01)[0])


def test_a_table_reached_through_pointers_that_changed_is_run(history):
    store, shas, table = history
    members = table.loc["members"]
    assert members["executed_changed_share"] == 0  # no code changed
    assert members["changed_data_reached"] >= 1  # the member table, reached through the registry and the class
    assert _runs(table, "members")
    assert abs(float(store.read_one("labels", shas["members"]).to_pandas()["effect"].iloc[0])) >= 0.01


def test_a_table_nothing_points_to_is_not_reached(history):
    store, shas, table = history
    other = table.loc["other"]
    assert other["changed_data_reached"] == 0
    assert not _runs(table, "other")
    assert abs(float(store.read_one("labels", shas["other"]).to_pandas()["effect"].iloc[0])) < 0.001  # the loader maps more bytes
