"""Changed code that steers execution: it runs once and decides what runs afterwards.

The executed share of a change (features/executed_code.py) weighs changed code by how
often it runs.  Some code runs once and still decides the run: start-up code that fills a
function-pointer table or sets a global parameter the hot loop reads, a constant that sets
a loop's trip count, a CPU-feature check that picks a SIMD path.  Its executed share is
tiny, its effect is not.  Three things tell such a change apart (features/catalogue.py
defines the features, features/builder.py gathers what they need):

- the data objects the changed code *writes* (collectors/code_effects.py decodes its
  stores) that the benchmark's other reached functions reference: the share of the run
  those readers take;
- a changed block that differs from the old one only in constants (immediates and
  displacements: ``collectors.block_diff.Region.constants_only``), ran in c_o's profile and
  steers (a changed constant reaches a decision: ``Region.steers``): the inclusive share of
  the function holding it, what the constant can steer;
- changed code that asks the CPU what it supports (``cpuid``, ``xgetbv``, gcc's
  ``__cpu_model``, glibc's ``__x86_get_cpu_features``...) or resolves an IFUNC symbol;
- an executed constant-only change that stores the changed constant into a struct field
  ([register + D], not the stack frame: ``Region.fields``), and the share of the run in
  reached functions that read a field at an overlapping offset: an init function sets a
  parameter in a heap struct (libdeflate's ``c->p.n.max_optim_passes = 4``), the hot code
  reads it.  Which struct a register points to is not known statically: the match is by
  offset only, a heuristic (another struct may hold a field at the same offset).

"Changed code" is a changed function the benchmark reaches, and the new functions it
calls (directly or through other new ones): new code runs only if changed code calls it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterable

import numpy as np

from perf_selector.features.executed_code import INSTRUCTIONS, FunctionChange, counts_at, steers_in_run

if TYPE_CHECKING:
    from perf_selector.collectors.block_diff import Region

# A tenth of the usual minimum effect (1%), as models.decision.STRAIGHT_LINE_MARGIN: a compare's
# constant or a loop bound whose reach is below it is no hazard (issue 47: a hazard fires on "a
# compare's constant or a loop bound on a path that carries the run").
CONSTANT_REACH = 1e-3

# Symbols through which compiled code reads what the CPU supports
CPU_FEATURE_SYMBOLS = frozenset({
    "__cpu_model", "__cpu_features2", "__cpu_indicator_init",  # gcc's __builtin_cpu_supports / _init (libgcc)
    "__cpu_features", "__get_cpu_features", "__x86_get_cpu_features", "__x86_get_cpuid_feature_leaf",  # glibc's
    "__x86_cpu_features",
})


@dataclass(frozen=True)
class Steering:
    hot_data_written_share: float  # 0-1 of the run's instructions (or samples) in functions reading what changed code writes
    executed_constant_share: float  # 0-1: the largest inclusive share among functions with an executed constant-only change
    cpu_dispatch: bool  # changed code asks the CPU what it supports, or resolves an IFUNC
    field_readers_share: float = 0.0  # 0-1 in functions reading a struct field an executed changed constant is stored to


NO_STEERING = Steering(0.0, 0.0, False)


def changed_constant_fields(function: FunctionChange) -> frozenset[tuple[int, int]]:
    """The (field offset, bytes) the function's executed constant-only regions store changed constants to."""
    if function.regions is None or not len(function.addresses):
        return frozenset()
    return frozenset(field for region in function.regions if region.fields and region.constants_only
                     and counts_at(function, region.old_addresses).sum() > 0 for field in region.fields)


def runs_changed_constant(function: FunctionChange, inclusive_share: float = 1.0, kind: str = INSTRUCTIONS) -> bool:
    """Whether a region of the function changed only constants, steers (a changed constant reaches a
    decision: a compare's, a loop bound, a call's argument, a store through a pointer, an address),
    and its old code ran (or was sampled), on a path that carries the run (within_reach).  A
    constant that only feeds straight-line work, or a store to a global (changed_writes_hot_data's
    to judge), changes nothing the counts do not price; nor does a compare's changed immediate whose
    branch the old run shows to go as it went (executed_code.steers_in_run).  `inclusive_share`: of the run, what
    the function and its callees carried in c_o's (1 where unknown); `kind`: what the counts count
    (executions or samples)."""
    if function.regions is None or not len(function.addresses):
        return False
    return any(region.constants_only and steers_in_run(function, region, kind) and counts_at(function, region.old_addresses).sum() > 0
               and within_reach(region, inclusive_share) for region in function.regions)


def within_reach(region: Region, inclusive_share: float) -> bool:
    """Whether a changed constant can move the run by CONSTANT_REACH.  One whose values end in the
    function's own conditional branches (Region.contained: a compare's constant, a loop bound)
    changes what the function and its callees do: at most what they carried, times the constant's
    growth squared (a trip count scales the loop's work; two nested loops bounded by it, its
    square).  Any other (returned, stored, passed on, another field or literal) may steer code far
    from it, whatever its function carried."""
    if not region.contained:
        return True
    return inclusive_share * region.growth ** 2 >= CONSTANT_REACH


def names_cpu_features(names: Iterable[str]) -> bool:
    """Whether any of a function's callees or data references is one of CPU_FEATURE_SYMBOLS."""
    return any(name.removesuffix("@plt") in CPU_FEATURE_SYMBOLS for name in names)


def reader_share(own: np.ndarray, readers: list[int], run: float) -> float:
    """The readers' own counts (positions into `own`) over the run's, at most 1."""
    if run <= 0 or not readers:
        return 0.0
    return min(float(own[readers].sum()) / run, 1.0)


def largest_inclusive_share(inclusive: np.ndarray, positions: np.ndarray, root_inclusive: float) -> float:
    """The largest inclusive count at `positions` over the whole run's (0 without inclusive counts: perf)."""
    if root_inclusive <= 0 or not len(positions):
        return 0.0
    return float(inclusive[positions].max()) / root_inclusive
