"""The collected history in the form the feature builder reads.

Training loads it from the store as DataFrames (:func:`load_history`, below);
`selector select` hands over the Arrow tables it read, because importing pandas would
cost more than the rest of a selection.  The feature builder reads both (as Arrow, see
:func:`as_arrow`); the methods here that enumerate tuples are for training and take
DataFrames.  Tests and the synthetic benchmark build histories directly.  Only :func:`load_history`
reads the store.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from collectors.errors import UserError

if TYPE_CHECKING:
    from typing import TypeAlias

    import pandas as pd

    from storage.store import Store

    Table: TypeAlias = "pd.DataFrame | pa.Table"


@dataclass
class History:
    """The store's tables (storage.schema), as DataFrames (training: :func:`load_history`) or
    as Arrow tables (`select`); the feature builder reads either, the tuple methods below
    need DataFrames.  Two types for one thing: issue 19's one table type would end it."""

    commits: Table  # sha, parents, author_time, build_status, build_config, toolchain
    functions: Table  # commit, name, fingerprint, instructions, callees, data_refs
    objects: Table  # commit, name, fingerprint
    profiles: Table  # commit, benchmark, function, in_binary, calls, self_instructions, inclusive_instructions, samples
    measurements: Table  # commit, benchmark, repetition, warmup, status, value
    labels: Table  # new, old, benchmark, label, ...
    # commit -> a local path of its binary, or None: lets the features align changed code
    # block by block (features/executed_code.py); without it they judge whole functions
    binaries: Callable[[str], str | None] | None = None

    def __post_init__(self) -> None:
        for name in ("objects", "profiles", "measurements", "labels"):
            if getattr(self, name) is None:
                import pandas as pd

                setattr(self, name, pd.DataFrame())

    @property
    def parents(self) -> dict[str, list[str]]:
        return {sha: list(parents) for sha, parents in zip(self.commits["sha"], self.commits["parents"])}

    def built(self) -> list[str]:
        """Commits with a successful build and static analysis, oldest first."""
        ok = self.commits[self.commits["build_status"] == "ok"].sort_values("author_time", kind="stable")
        with_functions = set(self.functions["commit"].unique()) if len(self.functions) else set()
        return [sha for sha in ok["sha"] if sha in with_functions]

    def measured(self) -> set[tuple[str, str]]:
        """(commit, benchmark) with at least one successful measured run."""
        if self.measurements.empty:
            return set()
        return _pairs(measured_runs(self.measurements))

    def profiled(self) -> set[tuple[str, str]]:
        if self.profiles.empty:
            return set()
        return _pairs(self.profiles)


def _pairs(frame: pd.DataFrame) -> set[tuple[str, str]]:
    # de-duplicate in pandas first: iterating a million Arrow-backed strings in Python is slow
    unique = frame[["commit", "benchmark"]].drop_duplicates()
    return set(zip(unique["commit"].tolist(), unique["benchmark"].tolist()))


def as_arrow(frame: "pd.DataFrame | pa.Table | None") -> pa.Table:
    """A table of the history as Arrow: the feature builder reads Arrow, so that `select`
    can hand it what it read from the store without importing pandas (which costs about as
    much as the rest of a selection: the README's Performance section); training hands it DataFrames, converted here (Arrow-backed columns at no cost)."""
    if frame is None:
        return pa.table({})
    if isinstance(frame, pa.Table):
        return frame
    if not len(frame.columns):
        return pa.table({})
    with warnings.catch_warnings():
        # pyarrow reads tz-aware columns through Series.values, which pandas 3.1 deprecates
        # (pyarrow's to mend); the values it reads are the right UTC instants.
        warnings.filterwarnings("ignore", message="Series.values returning an ndarray that drops timezone")
        return pa.Table.from_pandas(frame, preserve_index=False)


def measured_runs(measurements):
    """The measured runs that count: not warm-ups, and successful.  The one place this rule
    is written, for an Arrow table (the push path) or a DataFrame."""
    if isinstance(measurements, pa.Table):
        return measurements.filter(pc.and_(pc.invert(_warmups(measurements)), pc.equal(measurements["status"], "ok")))
    if len(measurements) == 0:
        return measurements
    return measurements[~_warmups(measurements) & (measurements["status"] == "ok")]


def not_warmups(measurements):
    """The runs of a DataFrame that are not warm-ups, failed ones included (what reuse copies)."""
    return measurements[~_warmups(measurements)] if len(measurements) else measurements


def _warmups(measurements):
    """The warm-up mask.  The `warmup` column says it; files written before the column (and an
    older version's rows, null in a table that mixes them) say it by repetition -1."""
    if isinstance(measurements, pa.Table):
        by_repetition = pc.less(measurements["repetition"], 0)
        if "warmup" not in measurements.column_names:
            return by_repetition
        return pc.if_else(pc.is_null(measurements["warmup"]), by_repetition, measurements["warmup"])
    by_repetition = measurements["repetition"] < 0
    if "warmup" not in measurements:
        return by_repetition
    return measurements["warmup"].astype("boolean").fillna(by_repetition).astype(bool)


def name_codes(names: pa.Array | pa.ChunkedArray, sort: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Integer codes for names (or any strings), so set operations between commits run on
    sorted int arrays, and the distinct names (an object array: ``names[code]``).  Arrow
    encodes them, faster than pd.factorize on millions of strings (benchmarks/features_speed.py);
    missing names get -1.

    With `sort`, codes follow the names' order, so "the lower code" means the same
    function in any history: ties broken by code then do not depend on which commits
    were loaded (training loads them all, `select` a few)."""
    if not len(names):
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=object)
    encoded = pc.dictionary_encode(names)
    if isinstance(encoded, pa.ChunkedArray):
        encoded = encoded.combine_chunks()  # one dictionary for all chunks
    codes = encoded.indices.fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int64)
    dictionary = encoded.dictionary
    if sort and len(dictionary):
        order = pc.sort_indices(dictionary).to_numpy()
        position = np.empty(len(order), dtype=np.int64)
        position[order] = np.arange(len(order))
        codes = np.where(codes >= 0, position[np.maximum(codes, 0)], -1)
        dictionary = dictionary.take(pa.array(order))
    uniques = np.empty(len(dictionary), dtype=object)
    uniques[:] = dictionary.to_pylist()
    return codes, uniques


def group_indices(keys: pa.Array | pa.ChunkedArray) -> dict:
    """Row positions of each distinct key, in row order (as ``DataFrame.groupby(...).indices``)."""
    codes, uniques = name_codes(keys)
    return {uniques[code]: rows for code, rows in _groups(codes).items()}


def group_pair_indices(first: pa.Array | pa.ChunkedArray, second: pa.Array | pa.ChunkedArray) -> dict:
    """Row positions of each distinct (first, second) key, in row order."""
    codes, key_of = pair_codes(first, second)
    return {key_of(code): rows for code, rows in _groups(codes).items()}


def pair_codes(first: pa.Array | pa.ChunkedArray, second: pa.Array | pa.ChunkedArray):
    """Integer codes of (first, second) keys (-1 where either is missing), and the key of a code."""
    first_codes, first_uniques = name_codes(first)
    second_codes, second_uniques = name_codes(second)
    width = max(len(second_uniques), 1)
    codes = np.where((first_codes >= 0) & (second_codes >= 0), first_codes * width + second_codes, -1)
    return codes, lambda code: (first_uniques[code // width], second_uniques[code % width])


def _groups(codes: np.ndarray) -> dict[int, np.ndarray]:
    order = np.argsort(codes, kind="stable")
    bounds = np.flatnonzero(np.diff(codes[order])) + 1
    groups = np.split(order, bounds) if len(order) else []
    return {int(codes[group[0]]): group for group in groups if codes[group[0]] >= 0}


def load_history(store: Store) -> History:
    """The whole history the store holds (DataFrames: what training reads)."""
    commits = store.read("commits")
    if commits.empty:
        raise UserError(f"{store.location}: the store holds no commits; run `selector collect` first")
    return History(
        commits=commits,
        functions=store.read("functions", arrow_dtypes=True),
        objects=store.read("objects"),
        profiles=store.read("profiles"),
        measurements=store.read("measurements"),
        labels=store.read("labels"),
        binaries=store.binary_lookup(commits["sha"].tolist(), commits["binary_sha256"].tolist()),
    )
