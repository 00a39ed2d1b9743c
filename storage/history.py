"""The collected history in the form the feature builder reads: the store's tables as
Arrow tables, for training (:func:`load_history`, all of them) and `selector select`
(the few commits a push compares) alike.  Tests and the synthetic benchmark build
histories directly.  Only :func:`load_history` reads the store.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, Iterable, Mapping, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from perf_selector.collectors.build_config import binary_config, kind_of
from perf_selector.collectors.commit_graph import closest_ancestor
from perf_selector.collectors.errors import UserError

if TYPE_CHECKING:
    from perf_selector.storage.store import Store


def _empty() -> pa.Table:
    return pa.table({})


@dataclass
class History:
    """The store's tables (storage.schema), as Arrow tables; a table nobody collected has no columns."""

    commits: pa.Table  # sha, parents, author_time, build_status, build_config, toolchain
    functions: pa.Table  # commit, name, fingerprint, instructions, callees, data_refs
    objects: pa.Table = field(default_factory=_empty)  # commit, name, fingerprint
    profiles: pa.Table = field(default_factory=_empty)  # commit, benchmark, function, in_binary, calls, ...
    measurements: pa.Table = field(default_factory=_empty)  # commit, benchmark, repetition, warmup, status, value
    labels: pa.Table = field(default_factory=_empty)  # new, old, benchmark, label, ...
    # commit -> a local path of its binary, or None: lets the features align changed code
    # block by block (features/executed_code.py); without it they judge whole functions
    binaries: Callable[[str], str | None] | None = None

    @property
    def parents(self) -> dict[str, list[str]]:
        return {sha: list(parents or ()) for sha, parents in
                zip(self.commits["sha"].to_pylist(), self.commits["parents"].to_pylist())}

    def built(self) -> list[str]:
        """Commits with a successful build and static analysis, oldest first."""
        ok = self.commits.filter(pc.equal(self.commits["build_status"], "ok"))
        ok = ok.take(pc.sort_indices(ok["author_time"]))  # Arrow's sort is stable
        with_functions = set(pc.unique(self.functions["commit"]).to_pylist()) if self.functions.num_rows else set()
        return [sha for sha in ok["sha"].to_pylist() if sha in with_functions]

    def measured(self) -> set[tuple[str, str]]:
        """(commit, benchmark) with at least one successful measured run."""
        if not self.measurements.num_rows:
            return set()
        return commit_benchmark_pairs(measured_runs(self.measurements))

    def profiled(self) -> set[tuple[str, str]]:
        if not self.profiles.num_rows:
            return set()
        return commit_benchmark_pairs(self.profiles)


def commit_benchmark_pairs(table: pa.Table) -> set[tuple[str, str]]:
    """The distinct (commit, benchmark) keys of a table."""
    # distinct keys first, in Arrow: iterating a million strings in Python is slow
    unique = table.select(["commit", "benchmark"]).group_by(["commit", "benchmark"]).aggregate([])
    return set(zip(unique["commit"].to_pylist(), unique["benchmark"].to_pylist()))


def benchmarks_in(table: pa.Table) -> set[str]:
    """The benchmarks a table (measurements, profiles) has rows of."""
    if not table.num_rows or "benchmark" not in table.column_names:
        return set()
    return set(pc.unique(table["benchmark"]).drop_null().to_pylist())


def built_commits(commits: pa.Table) -> set[str]:
    """The commits of a commits table whose build succeeded."""
    if not commits.num_rows:
        return set()
    return set(commits.filter(pc.equal(commits["build_status"], "ok"))["sha"].to_pylist())


def closest_pairs(
    new_commits: Iterable[str], benchmarks: list[str], parents: Mapping[str, Sequence[str]],
    measured: set[tuple[str, str]], profiled: set[tuple[str, str]] | None,
) -> list[tuple[str, str, str, int]]:
    """The pairing rule shared by labels and features: (new, old, benchmark, hops) where
    old is the closest ancestor measured for the benchmark and, unless `profiled` is
    None (profiling off), profiled for it too."""
    pairs = []
    for sha in new_commits:
        for benchmark in benchmarks:
            usable = lambda candidate, b=benchmark: (candidate, b) in measured and (profiled is None or (candidate, b) in profiled)
            found = closest_ancestor(sha, parents, usable)
            if found is not None:
                pairs.append((sha, found[0], benchmark, found[1]))
    return pairs


def measured_runs(measurements: pa.Table) -> pa.Table:
    """The measured runs that count: not warm-ups, and successful.  The one place this rule is written."""
    if not measurements.num_rows:
        return measurements
    return measurements.filter(pc.and_(pc.invert(_warmups(measurements)), pc.equal(measurements["status"], "ok")))


def not_warmups(measurements: pa.Table) -> pa.Table:
    """The runs that are not warm-ups, failed ones included (what reuse copies)."""
    return measurements.filter(pc.invert(_warmups(measurements))) if measurements.num_rows else measurements


def _warmups(measurements: pa.Table) -> pa.ChunkedArray:
    """The warm-up mask.  The `warmup` column says it; files written before the column (and an
    older version's rows, null in a table that mixes them) say it by repetition -1."""
    by_repetition = pc.less(measurements["repetition"], 0)
    if "warmup" not in measurements.column_names:
        return by_repetition
    return pc.if_else(pc.is_null(measurements["warmup"]), by_repetition, measurements["warmup"])


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
    """The whole history the store holds (what training reads)."""
    commits = store.read("commits")
    if not commits.num_rows:
        raise UserError(f"{store.location}: the store holds no commits; run `selector collect` first")
    binaries = store.binary_lookup(commits["sha"].to_pylist(), _column(commits, "binary_sha256"))
    return History(
        commits=with_current_build_configs(commits, binaries),
        functions=store.read("functions"),
        objects=store.read("objects"),
        profiles=store.read("profiles"),
        measurements=store.read("measurements"),
        labels=store.read("labels"),
        binaries=binaries,
    )


def with_current_build_configs(commits: pa.Table, binaries: Callable[[str], str | None],
                               only: Iterable[str] | None = None) -> pa.Table:
    """`commits` with each `build_config` stored before digests had a kind (a digest of every
    file of the tree named like a build file) replaced by what the commit's stored binary
    records (collectors.build_config.binary_config), where it records it: a store collected
    before is read as a current one, without collecting again (`selector collect` also
    rewrites such rows, with the build files' digest for binaries that record nothing).
    `only`: the commits to look at (`select` reads the few it compares), default all."""
    if not commits.num_rows or "build_config" not in commits.column_names:
        return commits
    wanted = set(only) if only is not None else None
    configs = commits["build_config"].to_pylist()
    recorded: dict[str, str | None] = {}  # binary path -> its record: commits of one binary read it once
    upgraded = False
    for row, (sha, config) in enumerate(zip(commits["sha"].to_pylist(), configs)):
        if kind_of(config) is not None or (wanted is not None and sha not in wanted):
            continue
        path = binaries(sha)
        if path is not None:
            if path not in recorded:
                recorded[path] = binary_config(path)
            if recorded[path] is not None:
                configs[row], upgraded = recorded[path], True
    if not upgraded:
        return commits
    index = commits.column_names.index("build_config")
    return commits.set_column(index, commits.schema.field(index), pa.array(configs, commits.schema.field(index).type))


def _column(table: pa.Table, name: str) -> list:
    """A column's values, None for each row of a table written before the column existed."""
    return table[name].to_pylist() if name in table.column_names else [None] * table.num_rows
