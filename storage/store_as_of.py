"""A store as a team had it at a point of its history: every table's rows of earlier commits only.

The replay (selector/evaluation/replay.py) retrains the project's own model as a team would have, every
few commits, on what the store held then: `StoreAsOf` answers `read` as the store does, with
each table filtered to the rows whose commit (a pair's new commit) is among the commits given,
so nothing of a later commit reaches training.  Calibration is kept whole: it is made once, on
the history's first commit.  What it writes goes nowhere: it is read-only.
"""

from __future__ import annotations

from typing import Callable, Iterable

import pyarrow as pa
import pyarrow.compute as pc

from perf_selector.storage.store import Store

# the column that says which commit a table's row belongs to (pairs: their new commit)
COMMIT_COLUMNS = {"commits": "sha", "functions": "commit", "objects": "commit", "measurements": "commit",
                  "profiles": "commit", "labels": "new", "confirmations": "new", "perturbed": "new"}


class StoreAsOf:
    """`store` holding only `commits`' rows (see the module)."""

    def __init__(self, store: Store, commits: Iterable[str]) -> None:
        self.store = store
        self.commits = pa.array(sorted(set(commits)), type=pa.string())
        self.location = store.location
        self.root = store.root

    def read(self, table: str, keys: list[str] | None = None) -> pa.Table:
        rows = self.store.read(table, keys)
        column = COMMIT_COLUMNS.get(table)
        if column is None or not rows.num_rows or column not in rows.column_names:
            return rows
        return rows.filter(pc.is_in(rows[column].cast(pa.string()), value_set=self.commits))

    def binary_lookup(self, shas: list[str], digests: list[str | None]) -> Callable[[str], str | None]:
        return self.store.binary_lookup(shas, digests)
