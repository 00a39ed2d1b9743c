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
from functools import cached_property
from typing import TYPE_CHECKING, Iterable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from perf_selector.collectors.build_config import build_changed
from perf_selector.collectors.data_pointers import reached_through
from perf_selector.collectors.errors import BinaryError
from perf_selector.features.catalogue import ALLOCATORS, CATALOGUE, RECENT_LABELS, PairDiff, ProfileView, TupleView, common_indices
from perf_selector.features.executed_code import (
    INSTRUCTIONS, NO_CHANGE, SAMPLES, ExecutedChange, FunctionChange, executed_change, ran_steering_code,
)
from perf_selector.features.steering import (
    NO_STEERING, Steering, changed_constant_fields, largest_inclusive_share, names_cpu_features, reader_share,
    runs_changed_constant,
)
from perf_selector.storage.history import History, group_indices, group_pair_indices, measured_runs, name_codes, pair_codes
from perf_selector.collectors.metrics import INSTRUCTIONS as INSTRUCTION_METRIC

if TYPE_CHECKING:
    import pandas as pd

    from perf_selector.collectors.block_diff import Region
    from perf_selector.collectors.code_effects import CodeEffects
    from perf_selector.collectors.code_image import CodeImage

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


@dataclass
class _ObjectLayout:
    """A commit's data objects by address: which object an address falls in."""

    starts: np.ndarray  # sorted
    ends: np.ndarray
    names: np.ndarray
    writable: np.ndarray

    @cached_property
    def writable_names(self) -> frozenset[str]:
        return frozenset(self.names[self.writable].tolist())

    def writable_at(self, addresses: Iterable[int]) -> frozenset[str]:
        """The writable objects holding any of `addresses`."""
        found = set()
        for address in addresses:
            index = int(np.searchsorted(self.starts, address, side="right")) - 1
            if index >= 0 and address < self.ends[index] and self.writable[index]:
                found.add(self.names[index])
        return frozenset(found)


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
        self._effects: dict[tuple[str, int], CodeEffects | None] = {}  # (commit, function code): its decoded stores, cpuid
        self._loads: dict[tuple[str, int], tuple[tuple[int, int], ...]] = {}  # (commit, function code): struct fields it reads
        self._written: dict[tuple[str, int], frozenset[str]] = {}
        self._layouts: dict[str, _ObjectLayout | None] = {}
        self._pointer_graphs: dict[str, dict] = {}
        self._code_of_name: dict[str, int] | None = None
        objects = history.objects
        self._objects = objects
        self._object_rows = group_indices(objects["commit"]) if objects.num_rows else {}
        self._object_names = _objects(objects, "name")
        self._object_fingerprints = _objects(objects, "fingerprint")
        commits = history.commits
        shas = commits["sha"].to_pylist()
        self._seconds = dict(zip(shas, _epoch_seconds(commits["author_time"]).tolist()))  # plain floats: fast lookups
        self._config = dict(zip(shas, zip(commits["build_config"].to_pylist(), commits["toolchain"].to_pylist())))
        self._noise = self._noise_table(history.measurements)
        self._recent = self._recent_labels(history.labels)
        self._allocator_calls = self._allocator_table(profiles)
        self._runs = self._run_table(profiles)
        self._pairs: dict[tuple[str, str], PairDiff] = {}
        self._profiles: dict[tuple[str, str], ProfileView] = {}
        self._profile_rows = group_pair_indices(in_binary["commit"], in_binary["benchmark"]) if in_binary.num_rows else {}
        self._in_binary = in_binary
        self._instruction_lists: pa.Table | None = None  # _instruction_columns
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
        instructions = functions[INSTRUCTION_METRIC.name].to_numpy().astype(np.int64)
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
            changed_allocating=np.sort(changed[np.isin(changed, new.allocating, assume_unique=True)]),
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
            reach_data=lambda roots: reached_through(roots, self._pointer_graph(commit)),
        )

    def _pointer_graph(self, commit: str) -> dict:
        """Which of `commit`'s data objects point into which (empty without its binary or object addresses)."""
        if commit not in self._pointer_graphs:
            self._pointer_graphs[commit] = self._read_pointer_graph(commit)
        return self._pointer_graphs[commit]

    def _read_pointer_graph(self, commit: str) -> dict:
        from perf_selector.collectors.data_pointers import pointer_graph
        from perf_selector.collectors.elf_image import ElfImage

        layout, binaries = self._object_layout(commit), self.history.binaries
        path = binaries(commit) if binaries is not None and layout is not None else None
        if path is None:
            return {}
        try:
            return pointer_graph(ElfImage.load(path), layout.names, layout.starts, layout.ends)
        except (BinaryError, OSError, ValueError):
            return {}

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
            build_config_changed=build_changed(self._config.get(new), self._config.get(old)),
            recent_change_rate=self._recent_rate(benchmark, known),
            noise=self._noise.get((known, benchmark), 0.0),
        )
        changes = self._function_changes(view, new, old, known, benchmark)
        view.executed = self._executed(view, changes, known, benchmark)
        kind = self._runs.get((known, benchmark), (INSTRUCTIONS, 0.0))[0]
        if changes:
            view.code_steers = np.array([ran_steering_code(f, kind) for f in changes], dtype=bool)
        view.steering = self._steering(view, changes, new, known, benchmark)
        view.data_readers_share = self._changed_data_readers_share(view, known, benchmark)
        return view

    # ------------------------------------------------------- executed code
    def _run_counts(self, known: str, benchmark: str, profile: ProfileView) -> tuple[str, float, np.ndarray]:
        """(count kind, the whole run's count, each reached function's own count) of a profile,
        all of the profile's own kind: a run total of samples never meets instruction counts."""
        kind, run = self._runs.get((known, benchmark), (INSTRUCTIONS, 0.0))
        own = profile.cycles if kind == SAMPLES else profile.instructions
        if kind == INSTRUCTIONS:
            run = run or profile.root_inclusive
        return kind, run, own

    def _function_changes(self, view: TupleView, new: str, old: str, known: str, benchmark: str) -> list[FunctionChange]:
        """The changed functions the benchmark reaches (aligned with ``view.changed_reached``), as
        the executed-code features weigh them."""
        in_changed, in_profile = view.changed_reached
        if not len(in_changed):
            return []
        _, _, own = self._run_counts(known, benchmark, view.profile)
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
        return functions

    def _executed(self, view: TupleView, functions: list[FunctionChange], known: str, benchmark: str) -> ExecutedChange:
        deleted = view.deleted_reached[1]
        if not functions and not len(deleted):
            return NO_CHANGE
        kind, run, own = self._run_counts(known, benchmark, view.profile)
        return executed_change(functions, float(own[deleted].sum()), run, kind)

    # ---------------------------------------------------- steering code
    def _steering(self, view: TupleView, functions: list[FunctionChange], new: str, known: str, benchmark: str) -> Steering:
        """What the changed code the benchmark reaches steers (features/steering.py)."""
        if not functions:
            return NO_STEERING
        in_changed, in_profile = view.changed_reached
        sources = self._steering_sources(view.diff.changed[in_changed], view.diff.new, new)
        profile = view.profile
        carried = profile.inclusive[in_profile] / profile.root_inclusive if profile.root_inclusive > 0 \
            else np.ones(len(in_profile))
        kind = self._run_counts(known, benchmark, profile)[0]
        constant_positions = in_profile[[runs_changed_constant(function, float(share), kind)
                                         for function, share in zip(functions, carried)]]
        return Steering(
            hot_data_written_share=self._hot_data_written_share(profile, sources, new, known, benchmark),
            executed_constant_share=largest_inclusive_share(profile.inclusive, constant_positions, profile.root_inclusive),
            cpu_dispatch=any(self._dispatches(new, code) for code in sources),
            field_readers_share=self._field_readers_share(profile, functions, sources, known, benchmark),
        )

    def _field_readers_share(self, profile: ProfileView, functions: list[FunctionChange], sources: list[int], known: str,
                             benchmark: str) -> float:
        """The share of the run in reached functions (other than the changed code) that read a struct field
        at an offset an executed changed constant is stored to (decoded in `known`'s binary)."""
        from perf_selector.collectors.code_effects import overlaps

        stored = frozenset().union(*(changed_constant_fields(function) for function in functions))
        if not stored:
            return 0.0
        _, run, own = self._run_counts(known, benchmark, profile)
        writers = set(sources)
        readers = [position for position, code in enumerate(profile.codes.tolist())
                   if own[position] > 0 and code not in writers and overlaps(self._field_loads(known, code), stored)]
        return reader_share(own, readers, run)

    def _field_loads(self, commit: str, code: int) -> tuple[tuple[int, int], ...]:
        """The struct fields the function reads in `commit`'s binary (none when it is not at hand)."""
        from perf_selector.collectors.code_effects import field_loads

        key = (commit, code)
        if key not in self._loads:
            located = self._function_code(commit, code)
            try:
                self._loads[key] = field_loads(*located) if located is not None else ()
            except (BinaryError, OSError, ValueError):
                self._loads[key] = ()
        return self._loads[key]

    def _steering_sources(self, changed_reached: np.ndarray, new_codes: np.ndarray, commit: str) -> list[int]:
        """The changed functions the benchmark reaches, then the new functions of `commit` they call,
        directly or through other new ones: new code runs only when changed code calls it."""
        sources = changed_reached.tolist()
        new_set = set(new_codes.tolist())
        seen, pending = set(sources), list(sources)
        while pending and new_set:
            for callee in self._callee_codes(commit, pending.pop()):
                if callee in new_set and callee not in seen:
                    seen.add(callee)
                    sources.append(callee)
                    pending.append(callee)
        return sources

    def _hot_data_written_share(self, profile: ProfileView, sources: list[int], new: str, known: str, benchmark: str) -> float:
        """The share of the run in reached functions (other than the writers) that reference an
        object the `sources` write."""
        written = frozenset().union(*(self._written_objects(new, code) for code in sources))
        readers = self._referencing(profile, known, written, excluded=frozenset(sources))
        _, run, own = self._run_counts(known, benchmark, profile)
        return reader_share(own, readers, run)

    def _changed_data_readers_share(self, view: TupleView, known: str, benchmark: str) -> float:
        """The share of the run in reached functions that reference, themselves, a data object
        whose contents changed between the pair (`known`'s references)."""
        readers = self._referencing(view.profile, known, view.diff.changed_objects)
        _, run, own = self._run_counts(known, benchmark, view.profile)
        return reader_share(own, readers, run)

    def _referencing(self, profile: ProfileView, commit: str, objects: frozenset[str],
                     excluded: frozenset[int] = frozenset()) -> list[int]:
        """Positions in `profile` of the reached functions, other than `excluded`, that reference one of
        `objects` in `commit`'s binary."""
        table = self._commits.get(commit)
        if not objects or table is None or not len(table.referencing):
            return []
        in_profile, in_referencing = common_indices(profile.codes, table.referencing)
        return [position for position, code in zip(in_profile.tolist(), table.referencing[in_referencing].tolist())
                if code not in excluded and not objects.isdisjoint(table.data_refs[code])]

    def _written_objects(self, commit: str, code: int) -> frozenset[str]:
        """The writable data objects the function's stores resolve to in `commit`'s binary; without
        the binary (or the objects' addresses), the writable objects it references."""
        key = (commit, code)
        if key not in self._written:
            effects, layout = self._code_effects(commit, code), self._object_layout(commit)
            if effects is not None and layout is not None:
                self._written[key] = layout.writable_at(effects.written)
            else:
                references = frozenset(self._commits[commit].data_refs.get(code, ()))
                self._written[key] = references & layout.writable_names if layout is not None else references
        return self._written[key]

    def _dispatches(self, commit: str, code: int) -> bool:
        """Whether the function asks the CPU what it supports: it calls or reads one of
        CPU_FEATURE_SYMBOLS, executes cpuid or xgetbv, or resolves an IFUNC (the last two need the binary)."""
        row = self._function_row(commit, code)
        if row is None:
            return False
        if names_cpu_features([*self._commits[commit].data_refs.get(code, ()), *self._callees(row)]):
            return True
        effects = self._code_effects(commit, code)
        return effects is not None and (effects.queries_cpu or effects.resolves_ifunc)

    def _code_effects(self, commit: str, code: int) -> CodeEffects | None:
        """The function's decoded stores and CPU queries, or None when its binary or code is not at hand."""
        key = (commit, code)
        if key not in self._effects:
            self._effects[key] = self._decode_effects(commit, code)
        return self._effects[key]

    def _decode_effects(self, commit: str, code: int) -> CodeEffects | None:
        from perf_selector.collectors.code_effects import code_effects  # imported here, as the block alignment is

        located = self._function_code(commit, code)
        if located is None:
            return None
        try:
            return code_effects(*located)
        except (BinaryError, OSError, ValueError):
            return None

    def _object_layout(self, commit: str) -> _ObjectLayout | None:
        """`commit`'s data objects by address, or None when the objects table has no addresses."""
        if commit not in self._layouts:
            self._layouts[commit] = self._read_layout(commit)
        return self._layouts[commit]

    def _read_layout(self, commit: str) -> _ObjectLayout | None:
        rows = self._object_rows.get(commit)
        if rows is None or not {"address", "size", "writable"} <= set(self._objects.column_names):
            return None
        taken = self._objects.select(["name", "address", "size", "writable"]).take(pa.array(rows))
        starts, sizes = _integers(taken["address"]), _integers(taken["size"])
        order = np.argsort(starts, kind="stable")
        names = np.empty(len(rows), dtype=object)
        names[:] = taken["name"].to_pylist()
        writable = pc.fill_null(taken["writable"].cast(pa.bool_()), False).to_numpy(zero_copy_only=False).astype(bool)
        return _ObjectLayout(starts[order], (starts + sizes)[order], names[order], writable[order])

    def _function_row(self, commit: str, code: int) -> int | None:
        """The function's row in the functions table, in `commit`."""
        table = self._commits.get(commit)
        if table is None:
            return None
        position = int(np.searchsorted(table.codes, code))
        return int(table.rows[position]) if position < len(table.codes) and table.codes[position] == code else None

    def _callees(self, row: int) -> list[str]:
        return self._functions["callees"][row].as_py() or []

    def _callee_codes(self, commit: str, code: int) -> list[int]:
        row = self._function_row(commit, code)
        if row is None:
            return []
        if self._code_of_name is None:
            self._code_of_name = {name: code for code, name in enumerate(self.names.tolist())}
        return [self._code_of_name[name] for name in self._callees(row) if name in self._code_of_name]

    def _function_code(self, commit: str, code: int) -> tuple[CodeImage, list[tuple[int, int]]] | None:
        """The binary of `commit` and the (address, size) of the function's parts in it, or None
        when the binary, the function or its parts' addresses are not at hand."""
        from perf_selector.collectors.block_diff import load_image

        binaries = self.history.binaries
        row = self._function_row(commit, code)
        if binaries is None or row is None or not {"parts", "address"} <= set(self._functions.column_names):
            return None
        path = binaries(commit)
        if path is None:
            return None
        image = load_image(path)
        ranges = image.function_parts(self._functions["parts"][row].as_py() or [], int(self._functions["address"][row].as_py()))
        return (image, ranges) if ranges else None

    def _instruction_counts(self, commit: str, benchmark: str, code: int) -> tuple[np.ndarray, np.ndarray]:
        """`commit`'s per-instruction counts of one function in its profile of `benchmark` (sorted by address)."""
        empty = np.zeros(0, dtype=np.int64)
        if "instruction_addresses" not in self._in_binary.column_names:
            return empty, empty
        rows = self._profile_rows.get((commit, benchmark), empty)
        rows = rows[self._profile_codes[rows] == code]
        if not len(rows):
            return empty, empty
        taken = self._instruction_columns().take(pa.array(rows))
        addresses = pc.list_flatten(taken["instruction_addresses"]).to_numpy(zero_copy_only=False).astype(np.int64)
        counts = pc.list_flatten(taken["instruction_counts"]).to_numpy(zero_copy_only=False).astype(np.int64)
        order = np.argsort(addresses, kind="stable")
        return addresses[order], counts[order]

    def _instruction_columns(self) -> pa.Table:
        """The profiles' per-instruction addresses and counts, each column one chunk, made at the
        first call.  The profiles arrive in one chunk per stored profile (hundreds), and a take
        from list columns of many chunks gathers every chunk first, at each call: 84% of the time
        of `selector evaluate` building ten corpus stores' features (sampled), and 2.19x the
        whole feature building of zlib's (benchmarks/instruction_counts_take.py)."""
        if self._instruction_lists is None:
            self._instruction_lists = self._in_binary.select(["instruction_addresses", "instruction_counts"]).combine_chunks()
        return self._instruction_lists

    def _function_regions(self, new: str, old: str, code: int) -> list[Region] | None:
        """The aligned blocks of one changed function, or None when a binary or its code is not at hand."""
        key = (new, old, code)
        if key not in self._regions:
            self._regions[key] = self._align(new, old, code)
        return self._regions[key]

    def _align(self, new: str, old: str, code: int) -> list[Region] | None:
        # imported here: decoding instructions costs a push only when a changed function was reached
        from perf_selector.collectors.block_diff import remembered_regions

        try:
            old_code, new_code = self._function_code(old, code), self._function_code(new, code)
            if old_code is None or new_code is None:
                return None
            return remembered_regions(*old_code, *new_code)
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

        from perf_selector.features.tuples import TUPLE_KEYS

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


def _integers(column: pa.ChunkedArray) -> np.ndarray:
    """An integer column as int64, nulls as 0."""
    return pc.fill_null(column.cast(pa.int64()), 0).to_numpy(zero_copy_only=False).astype(np.int64)


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
