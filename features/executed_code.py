"""How much of a run executes changed code, and what the change predicts for its cost.

For each changed function the benchmark reaches, the old and new code are aligned by basic
blocks (collectors/block_diff.py) and weighed with c_o's per-instruction counts, of one of
two kinds (the profile's ``count_kind``), never mixed:

- ``instructions`` (callgrind ``--dump-instr=yes``): how often each instruction ran; the
  run is the sum of every function's own instructions.  A block's count is its first
  instruction's.
- ``samples`` (perf): how many samples landed on each instruction; the run is the sum of
  every function's samples (all objects, the kernel included), so shares are of the run's
  time.  Samples spread over a block's instructions, so a block's count per instruction
  is their sum over its length.

Then:

- the **executed changed share** is the old run's count in changed blocks (plus that of
  reached functions that were deleted), over the whole run;
- the **predicted effect** applies the old counts to the new code: each new block of a
  replacement is predicted to run as often as the most similar old block it replaces, an
  inserted block as often as the old block before it, a deleted block not at all;
  callees that changed contribute through their own blocks.  Summed over functions and
  divided by the whole run, it is the predicted relative change of the run's instruction
  count (``instructions``) or time (``samples``: each instruction of a block is taken to
  cost what the old block's instructions cost on average).

Where the profile has no per-instruction counts (Pin, stores collected before they were
recorded) or a binary is missing, a changed function counts as one region: all its
executed instructions (or samples) changed, and its count scales with its static length.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from perf_selector.collectors.metrics import INSTRUCTIONS as INSTRUCTION_METRIC

if TYPE_CHECKING:
    from perf_selector.collectors.block_diff import Region

# The profile's `count_kind` (collectors/profiler.py writes it; absent from older stores)
INSTRUCTIONS, SAMPLES = INSTRUCTION_METRIC.name, "samples"


@dataclass(frozen=True)
class ExecutedChange:
    share: float  # 0-1 of the run's instructions (or samples) executed in changed code
    predicted_effect: float  # predicted (new - old) / old of the run's instructions (or samples)
    steering_share: float = 0.0  # 0-1 of the run in changed code that steers (Region.steers), or not aligned


NO_CHANGE = ExecutedChange(0.0, 0.0)


@dataclass(frozen=True)
class FunctionChange:
    """One changed function as a tuple sees it."""

    regions: list[Region] | None  # None: not aligned (no binaries): judged by its length
    addresses: np.ndarray  # c_o's executed (sampled) instruction addresses in the function (sorted), maybe empty
    counts: np.ndarray  # aligned with `addresses`: executions or samples, as the profile counts
    own_count: float  # c_o's own count of the function, of the same kind (the fallback's weight)
    old_length: int  # static instruction counts
    new_length: int


def executed_change(functions: list[FunctionChange], deleted_count: float, run_count: float,
                    kind: str = INSTRUCTIONS) -> ExecutedChange:
    """The share and predicted effect over the changed functions, in a run of `run_count`
    (`deleted_count`: the own counts of reached functions that were deleted; all three of `kind`)."""
    if run_count <= 0:
        return NO_CHANGE
    changed, delta, steering = deleted_count, 0.0, deleted_count
    for function in functions:
        if function.regions is None or len(function.addresses) == 0:
            changed += function.own_count
            steering += function.own_count
            delta += function.own_count * (function.new_length / max(function.old_length, 1) - 1.0)
            continue
        for region in function.regions:
            old_cost = counts_at(function, region.old_addresses).sum()
            changed += old_cost
            steering += old_cost if steers_in_run(function, region, kind) else 0.0
            if region.new_blocks:
                delta += float((_block_rates(function, region, kind) * _new_lengths(region)).sum())
            delta -= old_cost
    return ExecutedChange(min(changed / run_count, 1.0), delta / run_count, min(steering / run_count, 1.0))


def ran_steering_code(function: FunctionChange, kind: str = INSTRUCTIONS) -> bool:
    """Whether c_o's run went through changed code of the function that steers.

    The run went through a changed region when an old block of it ran, or new code sits where
    the old run passed (its anchor ran).  Code the run never reached cannot steer it: the inputs
    are the same, so only a change the run did execute could send it there, and that change is
    counted where it is.  A region steers (Region.steers) when its control flow differs, or its
    changed values reach a decision, a call's arguments or memory outside the frame; one that only
    redoes straight-line work in the frame cannot move what the code calls, how much it allocates
    or what it leaves for others.  Unknown (True where the function has regions) without aligned
    regions or per-instruction counts, and with samples, which a start-up function run once seldom
    receives."""
    if function.regions is None or len(function.addresses) == 0 or kind == SAMPLES:
        return function.regions is None or len(function.regions) > 0
    return any(steers_in_run(function, region, kind) and (counts_at(function, region.old_addresses).sum() > 0
                                                           or (region.new_blocks and (_block_rates(function, region, kind) > 0).any()))
               for region in function.regions)


def steers_in_run(function: FunctionChange, region: Region, kind: str = INSTRUCTIONS) -> bool:
    """Whether the region steers (Region.steers) in c_o's run: not when its only change is compares'
    immediates whose branches the old run's exact counts show to have gone one way only, the way the
    new constants still send every value that went it (collectors/compare_sides.py).  Samples show
    no such thing: an instruction never sampled may have run."""
    if not region.steers:
        return False
    if region.quiet_branches is None or kind == SAMPLES or len(function.addresses) == 0:
        return True
    for quiet in region.quiet_branches:
        branch, target, after = counts_at(function, np.array([quiet.branch, quiet.target, quiet.next], dtype=np.int64))
        if quiet.never_taken:
            if not (target == 0 or (quiet.only_falls_through and after == branch)):
                return True
        elif after != 0:
            return True
    return False


def _new_lengths(region: Region) -> np.ndarray:
    return np.array([block.instructions for block in region.new_blocks], dtype=float)


def _block_rates(function: FunctionChange, region: Region, kind: str) -> np.ndarray:
    """Each new block's anchor count per instruction: the anchor's executions (its first
    instruction's count), or its samples over its length."""
    blocks = np.array(region.new_blocks, dtype=np.int64).reshape(-1, 4)
    if kind != SAMPLES:
        return counts_at(function, blocks[:, 1])
    before = np.concatenate([[0.0], np.cumsum(function.counts, dtype=float)])
    first = np.searchsorted(function.addresses, blocks[:, 1], side="left")
    last = np.searchsorted(function.addresses, blocks[:, 2], side="right")
    return (before[last] - before[first]) / np.maximum(blocks[:, 3], 1)


def counts_at(function: FunctionChange, addresses: np.ndarray) -> np.ndarray:
    """The old counts at `addresses` (0 for instructions that never ran, or were never sampled)."""
    if len(addresses) == 0:
        return np.zeros(0)
    positions = np.minimum(np.searchsorted(function.addresses, addresses), len(function.addresses) - 1)
    return np.where(function.addresses[positions] == addresses, function.counts[positions], 0).astype(float)
