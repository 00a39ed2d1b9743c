"""The collected history in the form the feature builder reads: plain DataFrames.

The selector layer loads them from the store (:func:`selector.tuples_io.load_history`);
tests and the synthetic benchmark build them directly.  Nothing here reads files.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd


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


def name_codes(names: pd.Series) -> tuple[np.ndarray, pd.Index]:
    """Integer codes for names, so set operations between commits run on sorted int arrays."""
    codes, uniques = pd.factorize(names, sort=False)
    return codes.astype(np.int64), uniques
