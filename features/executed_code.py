"""How much of a run executes changed code, and what the change predicts for its instruction count.

For each changed function the benchmark reaches, the old and new code are aligned by basic
blocks (collectors/block_diff.py) and weighed with c_o's per-instruction execution counts
(callgrind ``--dump-instr=yes``):

- the **executed changed share** is the old run's instructions that executed in changed
  blocks (plus those of reached functions that were deleted), over the whole run;
- the **predicted effect** applies the old execution counts to the new code: each new
  block of a replacement is predicted to run as often as the most similar old block it
  replaces, an inserted block as often as the old block before it, a deleted block not
  at all (a block's count is its first instruction's); callees that changed contribute
  through their own blocks.  Summed over functions and divided
  by the whole run, it is the predicted relative change of the instruction count.

Where the profile has no per-instruction counts (perf, Pin, stores collected before they
were recorded) or a binary is missing, a changed function counts as one region: all its
executed instructions changed, and its count scales with its static length.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from collectors.block_diff import Region


@dataclass(frozen=True)
class ExecutedChange:
    share: float  # 0-1 of the run's instructions executed in changed code
    predicted_effect: float  # predicted (new - old) / old of the run's instructions


NO_CHANGE = ExecutedChange(0.0, 0.0)


@dataclass(frozen=True)
class FunctionChange:
    """One changed function as a tuple sees it."""

    regions: list[Region] | None  # None: not aligned (no binaries): judged by its length
    addresses: np.ndarray  # c_o's executed instruction addresses in the function (sorted), maybe empty
    counts: np.ndarray  # aligned with `addresses`
    self_instructions: float  # c_o's self count of the function (the fallback's weight)
    old_length: int  # static instruction counts
    new_length: int


def executed_change(functions: list[FunctionChange], deleted_instructions: float, run_instructions: float) -> ExecutedChange:
    """The share and predicted effect over the changed functions, in a run of `run_instructions`."""
    if run_instructions <= 0:
        return NO_CHANGE
    changed, delta = deleted_instructions, 0.0
    for function in functions:
        if function.regions is None or len(function.addresses) == 0:
            changed += function.self_instructions
            delta += function.self_instructions * (function.new_length / max(function.old_length, 1) - 1.0)
            continue
        for region in function.regions:
            old_cost = _counts_at(function, region.old_addresses).sum()
            changed += old_cost
            if region.new_blocks:
                lengths, anchors = np.array(region.new_blocks, dtype=np.int64).T
                delta += float((_counts_at(function, anchors) * lengths).sum())
            delta -= old_cost
    return ExecutedChange(min(changed / run_instructions, 1.0), delta / run_instructions)


def _counts_at(function: FunctionChange, addresses: np.ndarray) -> np.ndarray:
    """The old execution counts of `addresses` (0 for instructions that never ran)."""
    if len(addresses) == 0:
        return np.zeros(0)
    positions = np.minimum(np.searchsorted(function.addresses, addresses), len(function.addresses) - 1)
    return np.where(function.addresses[positions] == addresses, function.counts[positions], 0).astype(float)
