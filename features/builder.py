"""Computing the feature table: one row per tuple, every feature of the catalogue.

Work is shared as far as it goes: each commit's function table becomes sorted integer
arrays once; each (c_n, c_o) pair is compared once for all benchmarks; each (c_o, b)
profile is ranked once.  Set operations run on sorted numpy arrays.

The history is read as Arrow tables: `selector select` builds its few rows with this
same code without importing pandas, so what the model sees on a push is computed
exactly as what it was trained on.  The feature table itself (:meth:`FeatureBuilder.table`,
for training and evaluation) is a DataFrame: the one place the tables become pandas.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from collectors.errors import BinaryError
from features.catalogue import ALLOCATORS, CATALOGUE, RECENT_LABELS, PairDiff, ProfileView, TupleView, common_indices
from features.executed_code import INSTRUCTIONS, NO_CHANGE, SAMPLES, ExecutedChange, FunctionChange, executed_change
from storage.history import History, group_indices, group_pair_indices, measured_runs, name_codes, pair_codes

if TYPE_CHECKING:
    import pandas as pd

    from collectors.block_diff import Region

ALLOCATOR_CALLEES = frozenset(ALLOCATORS | {f"{name}@plt" for name in ALLOCATORS})
PROFILE_VALUES = ("calls", "self_instructions", "inclusive_instructions", "samples")
TIME_UNITS = {"s": 1.0, "ms": 1e3, "us": 1e6, "ns": 1e9}


@dataclass
class _CommitTable:
    codes: np.ndarray  # sorted
    fingerprints: np.ndarray  # aligned
    instructions: np.ndarray
    allocating: np.ndarray  # codes of functions that call an allocator
    data_refs: dict[int, tuple[str, ...]]  # code -> referenced data objects
    referencing: np.ndarray  # sorted codes of the functions that reference data objects
    rows: np.ndarray  # aligned with `codes`: rows of the functions table


class FeatureBuilder:
    def __init__(self, history: History) -> None:
        self.history = history
        functions = history.functions
        profiles = history.profiles
        in_binary = profiles.filter(pc.fill_null(profiles["in_binary"].cast(pa.bool_()), False)) if profiles.num_rows else profiles
        # Functions and profiled names are numbered together in name order, so that "the lower
        # code" (ties among the hottest functions) means the same function whichever commits
        # were loaded: training loads them all, `select` a few.
        profiled = in_binary["function"] if in_binary.num_rows else pa.chunked_array([], pa.large_string())
        codes, self.names = name_codes(_joined(functions["name"], profiled), sort=True)
        function_codes, self._profile_codes = codes[: functions.num_rows], codes[functions.num_rows:]
        self._commits = self._commit_tables(functions, function_codes)
        self._functions = functions
        self._regions: dict[tuple[str, str, int], list[Region] | None] = {}
        objects = history.objects
        self._object_rows = group_indices(objects["commit"]) if objects.num_rows else {}
        self._object_names = _objects(objects, "name")
        self._object_fingerprints = _objects(objects, "fingerprint")
        commits = history.commits
        shas = commits["sha"].to_pylist()
        self._seconds = dict(zip(shas, _epoch_seconds(commits["author_time"]).tolist()))  # plain floats: fast lookups
        self._config = {sha: f"{config}|{toolchain}" for sha, config, toolchain in
                        zip(shas, commits["build_config"].to_pylist(), commits["toolchain"].to_pylist())}
        self._noise = self._noise_table(history.measurements)
        self._recent = self._recent_labels(history.labels)
        self._allocator_calls = self._allocator_table(profiles)
        self._runs = self._run_table(profiles)
        self._pairs: dict[tuple[str, str], PairDiff] = {}
        self._profiles: dict[tuple[str, str], ProfileView] = {}
        self._profile_rows = group_pair_indices(in_binary["commit"], in_binary["benchmark"]) if in_binary.num_rows else {}
        self._in_binary = in_binary
        # calls, self instructions, inclusive instructions, samples: one float matrix, missing = 0
        self._profile_values = np.column_stack([
            _floats(in_binary[column]) if column in in_binary.column_names else np.zeros(in_binary.num_rows)
            for column in PROFILE_VALUES
        ]) if in_binary.num_rows else np.zeros((0, len(PROFILE_VALUES)))

    # ----------------------------------------------------------- per commit
    @staticmethod
    def _commit_tables(functions: pa.Table, codes: np.ndarray) -> dict[str, _CommitTable]:
        if not functions.num_rows:
            return {}
        fingerprints, _ = name_codes(functions["fingerprint"])
        instructions = functions["instructions"].to_numpy().astype(np.int64)
        calls_allocator = _any_in_lists(functions["callees"], ALLOCATOR_CALLEES)
        data_refs = _as_list_array(functions["data_refs"])
        has_refs = _list_lengths(data_refs) > 0
        referencing = np.flatnonzero(has_refs)
        refs_by_row = dict(zip(referencing.tolist(), map(tuple, data_refs.take(pa.array(referencing)).to_pylist())))
        tables = {}
        for commit, index in group_indices(functions["commit"]).items():
            order = index[np.argsort(codes[index], kind="stable")]
            tables[commit] = _CommitTable(
                codes=codes[order], fingerprints=fingerprints[order], instructions=instructions[order],
                allocating=codes[order][calls_allocator[order]],
                data_refs={int(codes[row]): refs_by_row[row] for row in order[has_refs[order]].tolist()},
                referencing=np.sort(codes[order[has_refs[order]]]).astype(np.int64),
                rows=order,
            )
        return tables

    @staticmethod
    def _noise_table(measurements: pa.Table) -> dict[tuple[str, str], float]:
        """Coefficient of variation of each (commit, benchmark)'s measured runs (0 for one run)."""
        if not measurements.num_rows:
            return {}
        good = measured_runs(measurements)
        values = _floats(good["value"], missing=np.nan)
        codes, key_of = pair_codes(good["commit"], good["benchmark"])
        measured = (codes >= 0) & ~np.isnan(values)
        groups, group_of = np.unique(codes[measured], return_inverse=True)
        values = values[measured]
        runs = np.bincount(group_of, minlength=len(groups))
        mean = np.bincount(group_of, weights=values, minlength=len(groups)) / runs
        squares = np.bincount(group_of, weights=(values - mean[group_of]) ** 2, minlength=len(groups))
        std = np.sqrt(squares / np.maximum(runs - 1, 1))  # one run: 0
        usable = (mean != 0) & np.isfinite(mean)
        cv = np.where(usable, std / np.where(usable, mean, 1.0), 0.0)
        return {key_of(code): float(value) for code, value in zip(groups.tolist(), cv.tolist())}

    def _recent_labels(self, labels: pa.Table) -> dict[str, tuple[np.ndarray, np.ndarray]]:
        """Per benchmark: author times of labelled new commits (sorted) and the running count of positives."""
        if not labels.num_rows:
            return {}
        known = labels.filter(pc.is_valid(labels["label"]))
        new = known["new"].to_pylist()
        label = known["label"].cast(pa.bool_()).to_numpy(zero_copy_only=False).astype(bool)
        recent = {}
        for benchmark, rows in group_indices(known["benchmark"]).items():
            times = np.array([self._seconds.get(new[row], np.nan) for row in rows.tolist()])
            order = np.argsort(times, kind="stable")
            positives = np.concatenate([[0], np.cumsum(label[rows][order])])
            recent[benchmark] = (times[order], positives)
        return recent

    @staticmethod
    def _allocator_table(profiles: pa.Table) -> dict[tuple[str, str], float]:
        if not profiles.num_rows:
            return {}
        allocating = profiles.filter(pc.fill_null(pc.is_in(profiles["function"].cast(pa.large_string()),
                                                           value_set=pa.array(sorted(ALLOCATORS), pa.large_string())), False))
        calls = _floats(allocating["calls"])
        return {key: float(calls[rows].sum()) for key, rows in
                group_pair_indices(allocating["commit"], allocating["benchmark"]).items()}

    @staticmethod
    def _run_table(profiles: pa.Table) -> dict[tuple[str, str], tuple[str, float]]:
        """What each (commit, benchmark) profile counts, and the whole run's count: every
        function's own instructions, or samples, in every object (the loader and libraries
        included, as the measured total has them; for samples the kernel too)."""
        if not profiles.num_rows:
            return {}
        groups = group_pair_indices(profiles["commit"], profiles["benchmark"])
        # one profiler a profile: its first row says the kind
        kinds = _count_kinds(profiles.take(pa.array([int(rows[0]) for rows in groups.values()], pa.int64())))
        own = {kind: _floats(profiles[column]) if column in profiles.column_names else np.zeros(profiles.num_rows)
               for kind, column in ((INSTRUCTIONS, "self_instructions"), (SAMPLES, "samples"))}
        return {key: (kind, float(own[kind][rows].sum())) for (key, rows), kind in zip(groups.items(), kinds)}

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
        view = TupleView(
            diff=self.pair(new, old),
            profile=self.profile(known, benchmark),
            hops=hops,
            days=days,
            build_config_changed=self._config.get(new) != self._config.get(old),
            recent_change_rate=self._recent_rate(benchmark, known),
            noise=self._noise.get((known, benchmark), 0.0),
        )
        view.executed = self._executed(view, new, old, known, benchmark)
        return view

    # ------------------------------------------------------- executed code
    def _executed(self, view: TupleView, new: str, old: str, known: str, benchmark: str) -> ExecutedChange:
        in_changed, in_profile = view.changed_reached
        deleted = view.deleted_reached[1]
        if not len(in_changed) and not len(deleted):
            return NO_CHANGE
        profile = view.profile
        kind, run = self._runs.get((known, benchmark), (INSTRUCTIONS, 0.0))
        # weights of the profile's own kind: a run total of samples never meets instruction counts
        own = profile.cycles if kind == SAMPLES else profile.instructions
        if kind == INSTRUCTIONS:
            run = run or profile.root_inclusive
        functions = []
        for index, position in zip(in_changed.tolist(), in_profile.tolist()):
            code = int(view.diff.changed[index])
            addresses, counts = self._instruction_counts(known, benchmark, code)
            # the counts are addresses in `known`'s binary: they fit old's code only when known is old
            regions = self._function_regions(new, old, code) if len(addresses) and known == old else None
            functions.append(FunctionChange(
                regions=regions, addresses=addresses, counts=counts,
                own_count=float(own[position]),
                old_length=int(view.diff.changed_old_instructions[index]),
                new_length=int(view.diff.changed_new_instructions[index]),
            ))
        return executed_change(functions, float(own[deleted].sum()), run, kind)

    def _instruction_counts(self, commit: str, benchmark: str, code: int) -> tuple[np.ndarray, np.ndarray]:
        """`commit`'s per-instruction counts of one function in its profile of `benchmark` (sorted by address)."""
        empty = np.zeros(0, dtype=np.int64)
        if "instruction_addresses" not in self._in_binary.column_names:
            return empty, empty
        rows = self._profile_rows.get((commit, benchmark), empty)
        rows = rows[self._profile_codes[rows] == code]
        if not len(rows):
            return empty, empty
        taken = self._in_binary.select(["instruction_addresses", "instruction_counts"]).take(pa.array(rows))
        addresses = pc.list_flatten(taken["instruction_addresses"]).to_numpy(zero_copy_only=False).astype(np.int64)
        counts = pc.list_flatten(taken["instruction_counts"]).to_numpy(zero_copy_only=False).astype(np.int64)
        order = np.argsort(addresses, kind="stable")
        return addresses[order], counts[order]

    def _function_regions(self, new: str, old: str, code: int) -> list[Region] | None:
        """The aligned blocks of one changed function, or None when a binary or its code is not at hand."""
        key = (new, old, code)
        if key not in self._regions:
            self._regions[key] = self._align(new, old, code)
        return self._regions[key]

    def _align(self, new: str, old: str, code: int) -> list[Region] | None:
        # imported here: decoding instructions costs a push only when a changed function was reached
        from collectors.block_diff import changed_regions, load_image

        binaries = self.history.binaries
        if binaries is None or not {"parts", "address"} <= set(self._functions.column_names):
            return None
        sides = []
        for commit in (old, new):
            path, table = binaries(commit), self._commits.get(commit)
            if path is None or table is None:
                return None
            position = int(np.searchsorted(table.codes, code))
            row = int(table.rows[position])
            sides.append((path, self._functions["parts"][row].as_py() or [], int(self._functions["address"][row].as_py())))
        try:
            (old_path, old_parts, old_address), (new_path, new_parts, new_address) = sides
            old_image, new_image = load_image(old_path), load_image(new_path)
            old_ranges = old_image.function_parts(old_parts, old_address)
            new_ranges = new_image.function_parts(new_parts, new_address)
            if not old_ranges or not new_ranges:
                return None
            return changed_regions(old_image, old_ranges, new_image, new_ranges)
        except (BinaryError, OSError, ValueError):
            return None

    def _recent_rate(self, benchmark: str, old: str) -> float:
        if benchmark not in self._recent:
            return 0.0
        times, positives = self._recent[benchmark]
        end = int(np.searchsorted(times, self._seconds[old], side="right"))
        start = max(0, end - RECENT_LABELS)
        return (positives[end] - positives[start]) / (end - start) if end > start else 0.0

    def rows(self, tuples: Iterable[tuple[str, str, str, int, str | None]]) -> list[list[float]]:
        """The catalogue's features, in its order, of each (new, old, benchmark, hops, profiled)
        tuple (profiled: see :meth:`view`; None for `old`)."""
        pair_features = [f for f in CATALOGUE if f.per_pair]
        tuple_features = [f for f in CATALOGUE if not f.per_pair]
        pair_values: dict[tuple[str, str], dict[str, float]] = {}
        rows = []
        for new, old, benchmark, hops, known in tuples:
            view = self.view(new, old, benchmark, hops, known)
            if (new, old) not in pair_values:
                pair_values[(new, old)] = {f.name: f.compute(view) for f in pair_features}
            values = {**pair_values[(new, old)], **{f.name: f.compute(view) for f in tuple_features}}
            rows.append([values[f.name] for f in CATALOGUE])
        return rows

    def table(self, tuples: pd.DataFrame) -> pd.DataFrame:
        """The feature table of `tuples` (new, old, benchmark, hops, and optionally `profiled`: see
        :meth:`view`), with the label when one is stored."""
        import pandas as pd

        from features.tuples import TUPLE_KEYS

        profiled = tuples["profiled"] if "profiled" in tuples else [None] * len(tuples)
        keys = tuples[[*TUPLE_KEYS, "hops"]].itertuples(index=False)
        rows = self.rows((new, old, benchmark, hops, known) for (new, old, benchmark, hops), known in zip(keys, profiled))
        features = pd.DataFrame(rows, columns=[f.name for f in CATALOGUE], index=tuples.index)
        table = pd.concat([tuples[[*TUPLE_KEYS, "hops"]].rename(columns={"hops": "tuple_hops"}), features], axis=1)
        labels = self.history.labels
        if labels.num_rows:
            labels = labels.select([*TUPLE_KEYS, "label"]).to_pandas()  # the model boundary: the feature table is pandas
            table = table.merge(labels, on=TUPLE_KEYS, how="left")
        else:
            table["label"] = pd.NA
        table["label"] = table["label"].astype("boolean")
        return table.drop(columns=["tuple_hops"])


def _joined(first: pa.ChunkedArray, second: pa.ChunkedArray) -> pa.ChunkedArray:
    """Two string columns as one (string and large_string alike; an empty column may be typed null)."""
    chunks = [chunk.cast(pa.large_string()) for column in (first, second) for chunk in column.chunks]
    return pa.chunked_array(chunks, type=pa.large_string())


def _objects(objects: pa.Table, column: str) -> np.ndarray:
    if not objects.num_rows:
        return np.zeros(0, dtype=object)
    values = np.empty(objects.num_rows, dtype=object)
    values[:] = objects[column].to_pylist()
    return values


def _epoch_seconds(times: pa.ChunkedArray) -> np.ndarray:
    """Seconds since the epoch of a timestamp column (a naive timestamp is taken as UTC, as pandas does)."""
    if pa.types.is_timestamp(times.type):
        return times.cast(pa.int64()).to_numpy(zero_copy_only=False).astype(float) / TIME_UNITS[times.type.unit]
    if pa.types.is_date(times.type):
        return _epoch_seconds(times.cast(pa.timestamp("s")))
    raise TypeError(f"author_time must be a timestamp, not {times.type}")


def _count_kinds(profiles: pa.Table) -> list[str]:
    """Each profile row's `count_kind`; stores written before the column say it by their profiler."""
    profiler = profiles["profiler"].to_pylist() if "profiler" in profiles.column_names else [None] * profiles.num_rows
    stated = profiles["count_kind"].to_pylist() if "count_kind" in profiles.column_names else [None] * profiles.num_rows
    return [kind or (SAMPLES if tool == "perf" else INSTRUCTIONS) for kind, tool in zip(stated, profiler)]


def _floats(column: pa.ChunkedArray, missing: float = 0.0) -> np.ndarray:
    """A numeric column as float64, nulls and NaN as `missing`."""
    values = column.cast(pa.float64()).to_numpy(zero_copy_only=False).astype(float)
    return np.where(np.isnan(values), missing, values)


def _as_list_array(column: pa.ChunkedArray) -> pa.Array:
    """The column as one Arrow list array (an all-empty column may arrive typed list<null>, or null)."""
    lists = column.combine_chunks()
    if pa.types.is_null(lists.type):
        return pa.array([[]] * len(lists), pa.list_(pa.string()))
    return lists


def _list_lengths(lists: pa.Array) -> np.ndarray:
    return pc.list_value_length(lists).fill_null(0).to_numpy(zero_copy_only=False)


def _any_in_lists(column: pa.ChunkedArray, values: frozenset[str]) -> np.ndarray:
    """Per row of a column of string lists: does the list hold any of `values`? (vectorized in Arrow)"""
    lists = _as_list_array(column)
    flat = pc.list_flatten(lists).cast(pa.string())  # lists that are all empty arrive typed list<null>
    hits = pc.is_in(flat, value_set=pa.array(sorted(values), type=pa.string())).fill_null(False).to_numpy(zero_copy_only=False)
    parents = pc.list_parent_indices(lists).to_numpy(zero_copy_only=False)
    return np.bincount(parents[hits], minlength=len(lists)) > 0


def build_feature_table(history: History, tuples: pd.DataFrame) -> pd.DataFrame:
    return FeatureBuilder(history).table(tuples)
