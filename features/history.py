"""The collected history in the form the feature builder reads: plain DataFrames.

The selector layer loads them from the store (:func:`selector.tuples_io.load_history`);
tests and the synthetic benchmark build them directly.  Nothing here reads files.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc


@dataclass
class History:
    commits: pd.DataFrame  # sha, parents, author_time, build_status, build_config, toolchain
    functions: pd.DataFrame  # commit, name, fingerprint, instructions, callees, data_refs
    objects: pd.DataFrame  # commit, name, fingerprint
    profiles: pd.DataFrame  # commit, benchmark, function, in_binary, calls, self_instructions, inclusive_instructions, samples
    measurements: pd.DataFrame  # commit, benchmark, repetition, status, value
    labels: pd.DataFrame  # new, old, benchmark, label, ...
    _codes: dict = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        for name in ("objects", "profiles", "measurements", "labels"):
            if getattr(self, name) is None:
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
        good = self.measurements[(self.measurements["repetition"] >= 0) & (self.measurements["status"] == "ok")]
        return _pairs(good)

    def profiled(self) -> set[tuple[str, str]]:
        if self.profiles.empty:
            return set()
        return _pairs(self.profiles)


def _pairs(frame: pd.DataFrame) -> set[tuple[str, str]]:
    # de-duplicate in pandas first: iterating a million Arrow-backed strings in Python is slow
    unique = frame[["commit", "benchmark"]].drop_duplicates()
    return set(zip(unique["commit"].tolist(), unique["benchmark"].tolist()))


def name_codes(names: pd.Series, sort: bool = False) -> tuple[np.ndarray, pd.Index]:
    """Integer codes for names (or any strings), so set operations between commits run on
    sorted int arrays.  Arrow-backed columns (Store.read(arrow_dtypes=True)) are encoded by
    Arrow, about four times faster than pd.factorize on millions of strings.

    With `sort`, codes follow the names' order, so "the lower code" means the same
    function in any history: ties broken by code then do not depend on which commits
    were loaded (training loads them all, `select` a few)."""
    if not isinstance(names.dtype, pd.ArrowDtype):
        codes, uniques = pd.factorize(names, sort=sort)
        return codes.astype(np.int64), uniques
    encoded = pc.dictionary_encode(names.array.__arrow_array__()).combine_chunks()
    codes = encoded.indices.fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int64)
    dictionary = encoded.dictionary
    if sort and len(dictionary):
        order = pc.sort_indices(dictionary).to_numpy()
        position = np.empty(len(order), dtype=np.int64)
        position[order] = np.arange(len(order))
        codes = np.where(codes >= 0, position[np.maximum(codes, 0)], -1)
        dictionary = dictionary.take(pa.array(order))
    return codes, pd.Index(dictionary.to_pylist(), dtype=object)


def group_indices(keys: pd.Series) -> dict:
    """Row positions of each distinct key, as ``DataFrame.groupby(...).indices`` gives them."""
    if not isinstance(keys.dtype, pd.ArrowDtype):
        return dict(keys.groupby(keys, sort=False).indices) if len(keys) else {}
    codes, uniques = name_codes(keys)
    order = np.argsort(codes, kind="stable")
    bounds = np.flatnonzero(np.diff(codes[order])) + 1
    groups = np.split(order, bounds) if len(order) else []
    return {uniques[codes[group[0]]]: group for group in groups if codes[group[0]] >= 0}
