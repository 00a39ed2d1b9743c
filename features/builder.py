"""Computing the feature table: one row per tuple, every feature of the catalogue.

Work is shared as far as it goes: each commit's function table becomes sorted integer
arrays once; each (c_n, c_o) pair is compared once for all benchmarks; each (c_o, b)
profile is ranked once.  Set operations run on sorted numpy arrays.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from features.catalogue import ALLOCATORS, CATALOGUE, RECENT_LABELS, PairDiff, ProfileView, TupleView, common_indices
from features.history import History, group_indices, name_codes
from features.tuples import TUPLE_KEYS

ALLOCATOR_CALLEES = frozenset(ALLOCATORS | {f"{name}@plt" for name in ALLOCATORS})


@dataclass
class _CommitTable:
    codes: np.ndarray  # sorted
    fingerprints: np.ndarray  # aligned
    instructions: np.ndarray
    allocating: np.ndarray  # codes of functions that call an allocator
    data_refs: dict[int, tuple[str, ...]]  # code -> referenced data objects
    referencing: np.ndarray  # sorted codes of the functions that reference data objects


class FeatureBuilder:
    def __init__(self, history: History) -> None:
        self.history = history
        functions = history.functions
        in_binary = history.profiles[history.profiles["in_binary"].astype(bool)] if len(history.profiles) else history.profiles
        # Functions and profiled names are numbered together in name order, so that "the lower
        # code" (ties among the hottest functions) means the same function whichever commits
        # were loaded: training loads them all, `select` a few.
        profiled = in_binary["function"] if len(in_binary) else functions["name"].iloc[:0]
        codes, self.names = name_codes(_joined(functions["name"], profiled), sort=True)
        function_codes, self._profile_codes = codes[: len(functions)], codes[len(functions):]
        self._in_binary = in_binary
        self._commits = self._commit_tables(functions, function_codes)
        objects = history.objects
        self._object_rows = group_indices(objects["commit"]) if len(objects) else {}
        self._object_names = objects["name"].to_numpy() if len(objects) else np.zeros(0, dtype=object)
        self._object_fingerprints = objects["fingerprint"].to_numpy() if len(objects) else np.zeros(0, dtype=object)
        commits = history.commits.set_index("sha")
        times = pd.to_datetime(commits["author_time"], utc=True)
        self._seconds = ((times - pd.Timestamp(0, tz="UTC")).dt.total_seconds()).to_dict()  # plain floats: fast lookups
        self._config = (commits["build_config"].astype(str) + "|" + commits["toolchain"].astype(str)).to_dict()
        self._noise = self._noise_table(history.measurements)
        self._recent = self._recent_labels(history.labels)
        self._allocator_calls = self._allocator_table(history.profiles)
        self._pairs: dict[tuple[str, str], PairDiff] = {}
        self._profiles: dict[tuple[str, str], ProfileView] = {}
        self._profile_rows = dict(in_binary.groupby(["commit", "benchmark"]).indices) if len(in_binary) else {}
        # calls, self instructions, inclusive instructions, samples: one float matrix, missing = 0
        self._profile_values = np.column_stack([
            pd.to_numeric(in_binary[column], errors="coerce").fillna(0).to_numpy(float) if column in in_binary else np.zeros(len(in_binary))
            for column in ("calls", "self_instructions", "inclusive_instructions", "samples")
        ]) if len(in_binary) else np.zeros((0, 4))

    # ----------------------------------------------------------- per commit
    @staticmethod
    def _commit_tables(functions: pd.DataFrame, codes: np.ndarray) -> dict[str, _CommitTable]:
        fingerprints, _ = name_codes(functions["fingerprint"])
        instructions = functions["instructions"].to_numpy(np.int64)
        calls_allocator = _any_in_lists(functions["callees"], ALLOCATOR_CALLEES)
        data_refs = functions["data_refs"]
        has_refs = _list_lengths(data_refs) > 0
        referencing = np.flatnonzero(has_refs)
        refs_by_row = dict(zip(referencing.tolist(), (tuple(refs) for refs in data_refs.iloc[referencing])))
        tables = {}
        for commit, index in group_indices(functions["commit"]).items():
            order = index[np.argsort(codes[index], kind="stable")]
            tables[commit] = _CommitTable(
                codes=codes[order], fingerprints=fingerprints[order], instructions=instructions[order],
                allocating=codes[order][calls_allocator[order]],
                data_refs={int(codes[row]): refs_by_row[row] for row in order[has_refs[order]].tolist()},
                referencing=np.sort(codes[order[has_refs[order]]]).astype(np.int64),
            )
        return tables

    @staticmethod
    def _noise_table(measurements: pd.DataFrame) -> dict[tuple[str, str], float]:
        if measurements.empty:
            return {}
        good = measurements[(measurements["repetition"] >= 0) & (measurements["status"] == "ok")]
        stats = good.groupby(["commit", "benchmark"])["value"].agg(["mean", "std"])
        cv = (stats["std"].fillna(0.0) / stats["mean"].where(stats["mean"] != 0)).fillna(0.0)
        return cv.to_dict()

    def _recent_labels(self, labels: pd.DataFrame) -> dict[str, tuple[np.ndarray, np.ndarray]]:
        """Per benchmark: author times of labelled new commits (sorted) and the running count of positives."""
        if labels.empty:
            return {}
        known = labels[labels["label"].notna()]
        recent = {}
        for benchmark, group in known.groupby("benchmark"):
            times = np.array([self._seconds.get(sha, np.nan) for sha in group["new"]])
            order = np.argsort(times, kind="stable")
            positives = np.concatenate([[0], np.cumsum(group["label"].astype(bool).to_numpy()[order])])
            recent[benchmark] = (times[order], positives)
        return recent

    @staticmethod
    def _allocator_table(profiles: pd.DataFrame) -> dict[tuple[str, str], float]:
        if profiles.empty:
            return {}
        allocating = profiles[profiles["function"].isin(ALLOCATORS)]
        return allocating.groupby(["commit", "benchmark"])["calls"].sum().astype(float).to_dict()

    def _objects_of(self, commit: str) -> dict[str, str]:
        rows = self._object_rows.get(commit, ())
        return dict(zip(self._object_names[rows], self._object_fingerprints[rows])) if len(rows) else {}

    # -------------------------------------------------------------- per pair
    def pair(self, new: str, old: str) -> PairDiff:
        key = (new, old)
        if key not in self._pairs:
            self._pairs[key] = self._compare(self._commits[new], self._commits[old], new, old)
        return self._pairs[key]

    def _compare(self, new: _CommitTable, old: _CommitTable, new_sha: str, old_sha: str) -> PairDiff:
        in_new, in_old = common_indices(new.codes, old.codes)
        differs = new.fingerprints[in_new] != old.fingerprints[in_old]
        only_new = np.ones(len(new.codes), dtype=bool)
        only_new[in_new] = False
        only_old = np.ones(len(old.codes), dtype=bool)
        only_old[in_old] = False
        changed = new.codes[in_new[differs]]
        touched = np.concatenate([changed, new.codes[only_new]])
        old_objects, new_objects = self._objects_of(old_sha), self._objects_of(new_sha)
        return PairDiff(
            new=new.codes[only_new],
            deleted=old.codes[only_old],
            changed=changed,
            changed_old_instructions=old.instructions[in_old[differs]],
            changed_new_instructions=new.instructions[in_new[differs]],
            new_instructions=new.instructions[only_new],
            deleted_instructions=old.instructions[only_old],
            changed_objects=frozenset(name for name, fp in old_objects.items() if name in new_objects and new_objects[name] != fp),
            changed_calls_allocator=bool(np.isin(touched, new.allocating, assume_unique=True).any()),
        )

    # ---------------------------------------------------------- per profile
    def profile(self, commit: str, benchmark: str) -> ProfileView:
        key = (commit, benchmark)
        if key not in self._profiles:
            self._profiles[key] = self._profile_view(commit, benchmark)
        return self._profiles[key]

    def _profile_view(self, commit: str, benchmark: str) -> ProfileView:
        index = self._profile_rows.get((commit, benchmark), np.zeros(0, dtype=np.int64))
        # one row per function: entries of one function (clones, recursion levels) are summed,
        # in their stored order (a stable sort, then sums over runs of equal codes)
        order = np.argsort(self._profile_codes[index], kind="stable")
        codes, sums = self._profile_codes[index][order], self._profile_values[index][order]
        if len(codes) > 1 and (codes[1:] == codes[:-1]).any():
            codes, starts = np.unique(codes, return_index=True)
            sums = np.add.reduceat(sums, starts, axis=0)
        reached = (sums[:, [0, 1, 3]] > 0).any(axis=1)
        codes, sums = codes[reached], sums[reached]
        table = self._commits.get(commit)
        data_refs = frozenset()
        if table is not None and len(table.referencing):
            _, hits = common_indices(codes, table.referencing)
            data_refs = frozenset(ref for code in table.referencing[hits].tolist() for ref in table.data_refs[code])
        return ProfileView(
            codes=codes, calls=sums[:, 0], instructions=sums[:, 1], inclusive=sums[:, 2], cycles=sums[:, 3],
            root_inclusive=float(sums[:, 2].max()) if len(codes) else 0.0,
            allocator_calls=self._allocator_calls.get((commit, benchmark), 0.0),
            data_refs=data_refs,
        )

    # --------------------------------------------------------------- tuples
    def view(self, new: str, old: str, benchmark: str, hops: int, profiled: str | None = None) -> TupleView:
        """The tuple as the features see it.  `profiled` (default `old`) is the commit whose profile
        and measurements stand for the old side: bisecting compares each commit with its parent,
        which was never profiled, using the profile of the last known version."""
        known = profiled or old
        days = (self._seconds[new] - self._seconds[old]) / 86400
        return TupleView(
            diff=self.pair(new, old),
            profile=self.profile(known, benchmark),
            hops=hops,
            days=days,
            build_config_changed=self._config.get(new) != self._config.get(old),
            recent_change_rate=self._recent_rate(benchmark, known),
            noise=self._noise.get((known, benchmark), 0.0),
        )

    def _recent_rate(self, benchmark: str, old: str) -> float:
        if benchmark not in self._recent:
            return 0.0
        times, positives = self._recent[benchmark]
        end = int(np.searchsorted(times, self._seconds[old], side="right"))
        start = max(0, end - RECENT_LABELS)
        return (positives[end] - positives[start]) / (end - start) if end > start else 0.0

    def table(self, tuples: pd.DataFrame) -> pd.DataFrame:
        """The feature table of `tuples` (new, old, benchmark, hops, and optionally `profiled`: see
        :meth:`view`), with the label when one is stored."""
        pair_features = [f for f in CATALOGUE if f.per_pair]
        tuple_features = [f for f in CATALOGUE if not f.per_pair]
        pair_values: dict[tuple[str, str], dict[str, float]] = {}
        rows = []
        profiled = tuples["profiled"] if "profiled" in tuples else pd.Series([None] * len(tuples), index=tuples.index)
        for (new, old, benchmark, hops), known in zip(tuples[[*TUPLE_KEYS, "hops"]].itertuples(index=False), profiled):
            view = self.view(new, old, benchmark, hops, known)
            if (new, old) not in pair_values:
                pair_values[(new, old)] = {f.name: f.compute(view) for f in pair_features}
            values = {**pair_values[(new, old)], **{f.name: f.compute(view) for f in tuple_features}}
            rows.append([values[f.name] for f in CATALOGUE])
        features = pd.DataFrame(rows, columns=[f.name for f in CATALOGUE], index=tuples.index)
        table = pd.concat([tuples[[*TUPLE_KEYS, "hops"]].rename(columns={"hops": "tuple_hops"}), features], axis=1)
        labels = self.history.labels
        if len(labels):
            known = labels[[*TUPLE_KEYS, "label"]].rename(columns={"new": "new", "old": "old"})
            table = table.merge(known, on=TUPLE_KEYS, how="left")
        else:
            table["label"] = pd.NA
        table["label"] = table["label"].astype("boolean")
        return table.drop(columns=["tuple_hops"])


def _joined(first: pd.Series, second: pd.Series) -> pd.Series:
    """Two string columns as one, without leaving Arrow when both are Arrow-backed (ArrowDtype,
    or pandas' own string dtype, which is Arrow underneath)."""
    arrays = [column.array.__arrow_array__() if hasattr(column.array, "__arrow_array__") else None for column in (first, second)]
    if arrays[0] is None or arrays[1] is None:
        return pd.concat([first.astype(object), second.astype(object)], ignore_index=True)
    kind = arrays[0].type if arrays[0].type == arrays[1].type else pa.large_string()
    chunks = [chunk.cast(kind) for array in arrays for chunk in array.chunks]
    return pd.Series(pd.arrays.ArrowExtensionArray(pa.chunked_array(chunks, type=kind)))


def _as_list_array(column: pd.Series) -> pa.ListArray:
    """The column as one Arrow list array: free when it is Arrow-backed (Store.read(arrow_dtypes=True))."""
    if isinstance(column.dtype, pd.ArrowDtype):
        return column.array.__arrow_array__().combine_chunks()
    return pa.array(column.to_numpy(dtype=object))  # lists or numpy arrays: Arrow takes both (tolist() was 3x slower)


def _list_lengths(column: pd.Series) -> np.ndarray:
    return pc.list_value_length(_as_list_array(column)).fill_null(0).to_numpy(zero_copy_only=False)


def _any_in_lists(column: pd.Series, values: frozenset[str]) -> np.ndarray:
    """Per row of a column of string lists: does the list hold any of `values`? (vectorized in Arrow)"""
    lists = _as_list_array(column)
    flat = pc.list_flatten(lists).cast(pa.string())  # lists that are all empty arrive typed list<null>
    hits = pc.is_in(flat, value_set=pa.array(sorted(values), type=pa.string())).fill_null(False).to_numpy(zero_copy_only=False)
    parents = pc.list_parent_indices(lists).to_numpy(zero_copy_only=False)
    return np.bincount(parents[hits], minlength=len(column)) > 0


def build_feature_table(history: History, tuples: pd.DataFrame) -> pd.DataFrame:
    return FeatureBuilder(history).table(tuples)
