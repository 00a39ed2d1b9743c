"""A changed compare whose decisions the old run shows to be unchanged (issue 47).

A limit raised in a guard (`if (len > 0x10000) error()` becoming `> 0x10000000`), a bound check
before a jump table whose table grew (`cmp eax, 83; ja default` becoming `cmp eax, 84`): only a
compare's immediate changed, and it decides its block's conditional branch.  For an ordered
condition (above, below, greater, less, with or without equal) the set of values that take the
branch only shrinks or only grows as the constant moves:

- `ja`/`jae`/`jg`/`jge` (x above the constant) take fewer values when it grows;
- `jb`/`jbe`/`jl`/`jle` take more.

So when the taken set shrank and the old run never took the branch, or it grew and the old run
always took it, every value the old run compared is decided as before: the changed constant steers
nothing, though it reaches a branch.  That needs exact counts (an instruction never sampled may have
run) and the values compared to be the old run's, which the other regions of the change answer for.
The old run always took the branch when the instruction after it never ran; it never took it when
its target never ran, or when the instruction after it ran as often as the branch and nothing but
falling through reaches it: no branch of the function targets it, no entry of its jump tables
names it (an interpreter's loop, whose cases a compare's side may fall into; a function with an
indirect jump whose table is not found may be entered anywhere), and it is no call.

An equality (`je`, `jne`), a sign or parity test, a changed `test` mask, a changed constant
anywhere but a compare's immediate, flags read by anything but the block's last branch, or a side
outside the function: no side can tell, and the region is left to the other rules.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple, Protocol

import iced_x86

if TYPE_CHECKING:
    from perf_selector.collectors.code_image import CodeImage


_TABLE_ENTRIES = 65536  # a jump table longer than any switch read as one
_DIRECT = (iced_x86.FlowControl.CONDITIONAL_BRANCH, iced_x86.FlowControl.UNCONDITIONAL_BRANCH)
_CALLS = (iced_x86.FlowControl.CALL, iced_x86.FlowControl.INDIRECT_CALL)
_CC = iced_x86.ConditionCode
# condition -> (compares signed, takes the values above the constant)
_ORDERED = {_CC.A: (False, True), _CC.AE: (False, True), _CC.G: (True, True), _CC.GE: (True, True),
            _CC.B: (False, False), _CC.BE: (False, False), _CC.L: (True, False), _CC.LE: (True, False)}


class Block(Protocol):
    """What this module reads of a block_diff.Block (which imports this module)."""

    addresses: tuple[int, ...]  # of its instructions, in order
    constants: tuple[tuple, ...]  # per instruction: the parts its shape leaves out (immediates, ...)


class QuietBranch(NamedTuple):
    """A branch a changed compare decides, in the old code, and the way it must have always gone."""

    branch: int  # address of the conditional branch
    target: int  # where it goes when taken
    next: int  # the instruction after it
    never_taken: bool  # the old run must never have taken it (else: always)
    only_falls_through: bool  # nothing but falling through from the branch reaches `next`, and it is no call


def quiet_branches(old_image: CodeImage, old_ranges: list[tuple[int, int]], new_image: CodeImage,
                   pairs: list[tuple[Block, Block]]) -> tuple[QuietBranch, ...] | None:
    """For a constants-only region's (old block, new block) pairs: each changed compare's branch
    and the way the old run must have always taken it for every value to be decided as before; None
    when a changed constant is not a compare's immediate deciding its block's ordered conditional
    branch."""
    inside = [range(address, address + size) for address, size in old_ranges]
    sides: list[QuietBranch] = []
    jumped_to: set[int] | None = set()
    for old, new in pairs:
        changed = [k for k, (before, after) in enumerate(zip(old.constants, new.constants)) if before != after]
        if not changed:
            continue
        old_code = [_decoded(old_image, address) for address in old.addresses]
        new_code = [_decoded(new_image, address) for address in new.addresses]
        branch = old_code[-1]
        if branch.flow_control != iced_x86.FlowControl.CONDITIONAL_BRANCH or branch.condition_code not in _ORDERED:
            return None
        (k,) = changed if len(changed) == 1 else (None,)
        if k is None or old.constants[k][:-1] != new.constants[k][:-1]:
            return None  # one instruction, and only its last operand (a compare's immediate) changed
        if any(instruction.rflags_modified for instruction in old_code[k + 1:-1]):
            return None  # the compare must be the last to set the flags the branch reads
        never_taken = _taken_set_shrinks(old_code[k], new_code[k], branch)
        if never_taken is None or not all(_in(successor, inside) and not _decoded(old_image, successor).rflags_read
                                          for successor in (branch.near_branch_target, branch.next_ip)):
            return None  # a side that reads the flags decides on them again; one outside has no count here
        if not sides:  # the function's code is read once, for its first compare
            jumped_to = _jumped_to(old_image, old_ranges, inside)
        only_falls_through = jumped_to is not None and branch.next_ip not in jumped_to \
            and _decoded(old_image, branch.next_ip).flow_control not in _CALLS
        sides.append(QuietBranch(branch.ip, branch.near_branch_target, branch.next_ip, never_taken, only_falls_through))
    return tuple(sides)


def _jumped_to(image: CodeImage, ranges: list[tuple[int, int]], inside: list[range]) -> set[int] | None:
    """Every place a jump of the function lands: its direct branches' targets and its jump tables'
    entries; None when it has more indirect jumps than tables found (it may land anywhere).  A call
    is left to the caller: a profile may count a call's line of calls with the instruction."""
    code = [instruction for start, size in ranges for instruction in iced_x86.Decoder(64, image.read(start, size), ip=start)]
    landings = {instruction.near_branch_target for instruction in code if instruction.flow_control in _DIRECT}
    jumps = sum(instruction.flow_control == iced_x86.FlowControl.INDIRECT_BRANCH for instruction in code)
    if not jumps:
        return landings
    tables = [targets for targets in (_table_targets(instruction, image, inside) for instruction in code) if targets]
    if len(tables) < jumps:
        return None
    return landings.union(*tables)


def _table_targets(instruction: iced_x86.Instruction, image: CodeImage, inside: list[range]) -> set[int]:
    """The entries of the jump table an instruction names, as gcc lays them out: `lea reg, [rip+T]`
    before `movsxd r, [reg+i*4]; add r, reg; jmp r` (T plus each 32-bit entry), or `jmp [T+i*8]`
    (64-bit addresses); read while they land in the function.  Empty for any other instruction."""
    if instruction.mnemonic == iced_x86.Mnemonic.LEA and instruction.is_ip_rel_memory_operand:
        table, width, relative = instruction.ip_rel_memory_address, 4, True
    elif instruction.flow_control == iced_x86.FlowControl.INDIRECT_BRANCH and instruction.op0_kind == iced_x86.OpKind.MEMORY \
            and instruction.memory_base == iced_x86.Register.NONE and instruction.memory_index_scale == 8:
        table, width, relative = instruction.memory_displacement, 8, False
    else:
        return set()
    targets: set[int] = set()
    for entry in range(_TABLE_ENTRIES):
        data = image.read(table + width * entry, width)
        if len(data) < width:
            break
        raw = int.from_bytes(data, "little", signed=relative)
        target = table + raw if relative else raw
        if not _in(target, inside):
            break
        targets.add(target)
    return targets


def _taken_set_shrinks(old: iced_x86.Instruction, new: iced_x86.Instruction, branch: iced_x86.Instruction) -> bool | None:
    """Whether fewer values take `branch` with the new compare (more: False); None when `old` and
    `new` are not one compare of one operand with two different immediates."""
    if old.mnemonic != iced_x86.Mnemonic.CMP or new.mnemonic != iced_x86.Mnemonic.CMP or old.op_count != 2:
        return None
    if not (_is_immediate(old.op1_kind) and _is_immediate(new.op1_kind)):
        return None
    signed, takes_above = _ORDERED[branch.condition_code]
    width = _operand_bits(old)
    before, after = _value(old.immediate(1), width, signed), _value(new.immediate(1), width, signed)
    if before == after:
        return None
    return (after > before) == takes_above


def _decoded(image: CodeImage, address: int) -> iced_x86.Instruction:
    return next(iter(iced_x86.Decoder(64, image.read(address, 15), ip=address)))


def _in(address: int, ranges: list[range]) -> bool:
    return any(address in part for part in ranges)


def _is_immediate(kind) -> bool:
    return kind in (iced_x86.OpKind.IMMEDIATE8, iced_x86.OpKind.IMMEDIATE16, iced_x86.OpKind.IMMEDIATE32,
                    iced_x86.OpKind.IMMEDIATE8TO16, iced_x86.OpKind.IMMEDIATE8TO32, iced_x86.OpKind.IMMEDIATE8TO64,
                    iced_x86.OpKind.IMMEDIATE32TO64)


def _operand_bits(compare: iced_x86.Instruction) -> int:
    if compare.op0_kind == iced_x86.OpKind.REGISTER:
        return 8 * iced_x86.RegisterExt.size(compare.op0_register)
    return 8 * iced_x86.MemorySizeExt.size(compare.memory_size)


def _value(immediate: int, bits: int, signed: bool) -> int:
    """The immediate as the compare sees it at the operand's width (iced gives a sign-extended one as
    64 bits)."""
    value = immediate & ((1 << bits) - 1)
    return value - (1 << bits) if signed and value >= 1 << (bits - 1) else value
