"""Where, inside a changed function, the old and the new code differ: basic blocks aligned.

The function fingerprint says *that* a function changed.  To say how much of a run the
change touches, the old and the new code of the function are cut into basic blocks
(leaders: the entry, every in-function branch target, every instruction after a jump or
return, and either end of a run of no-ops: padding is a block of its own) and the two block
sequences are aligned (difflib's longest matching runs).

Two blocks match when their instructions match after the same shift-invariant rules as
the fingerprints, plus register renaming:
- an address is replaced by what it designates: a branch inside the function by its
  kind, a call or jump out of it by the callee's name (``name@plt`` for a library), a
  RIP-relative or absolute address by the symbol it falls in and the offset there (or by
  its kind when no symbol holds it): the linker moving code is no change, calling another
  function or reading another object is;
- a load from read-only data no symbol holds (a literal pool entry: gcc merges the
  constants of consecutive field initialisations into one vector literal, ``movdqa xmm0,
  [rip+.LC5]`` ... ``movups [rax+0xc8], xmm0``) is replaced by the bytes it loads: a
  changed literal is a changed constant, a moved one is no change;
- registers are numbered by first appearance inside the block (their width kept), so a
  register-allocation change that renames registers consistently is no change either;
- everything else (mnemonic, immediates, displacements, scales, memory sizes) is kept.

Each block also has a *shape*: the same normalization with immediates and displacements
left out, whatever their encoded width (a stack slot's displacement is kept: a moved slot is
a new frame layout, not a changed constant; a literal's bytes are left out).  A region whose
old and new blocks pair up shape for shape differs only in constants
(``Region.constants_only``): `int n = 1000` become `2000`.  Such a region also says which
struct fields its changed constants are stored to (``Region.fields``:
collectors.code_effects.RegisterOffsets names a field by its offset off a register; the stack
frame holds no field).

Inlined copies need no mapping of their own at this grain: an inlined callee's code is
the caller's code, and its changed blocks are found, and counted, where they execute.

What is returned per function is a list of :class:`Region`: a run of old blocks (maybe
none) replaced by a run of new instructions (maybe none).  The features weigh them with
the old profile's per-instruction counts (features/executed_code.py).
"""

from __future__ import annotations

import dataclasses
import os
from collections import Counter
from dataclasses import dataclass
from difflib import SequenceMatcher
from functools import lru_cache, partial
from typing import NamedTuple

import iced_x86
import numpy as np

from perf_selector.collectors.argument_liveness import argument_use
from perf_selector.collectors.code_effects import FieldAccess, RegisterOffsets
from perf_selector.collectors.code_image import CodeImage, ImageKey
from perf_selector.collectors.compare_sides import QuietBranch, quiet_branches
from perf_selector.collectors.value_flow import decisions_reached, decodes, frame_registers, local_values, reaches_decision, \
    written_registers

_FLOW_ENDS_BLOCK = frozenset({
    iced_x86.FlowControl.UNCONDITIONAL_BRANCH, iced_x86.FlowControl.CONDITIONAL_BRANCH,
    iced_x86.FlowControl.INDIRECT_BRANCH, iced_x86.FlowControl.RETURN, iced_x86.FlowControl.INTERRUPT,
    iced_x86.FlowControl.EXCEPTION, iced_x86.FlowControl.XBEGIN_XABORT_XEND,
})
_BRANCH_OPERANDS = frozenset({iced_x86.OpKind.NEAR_BRANCH16, iced_x86.OpKind.NEAR_BRANCH32, iced_x86.OpKind.NEAR_BRANCH64,
                              iced_x86.OpKind.FAR_BRANCH16, iced_x86.OpKind.FAR_BRANCH32})
_IMMEDIATES = frozenset({iced_x86.OpKind.IMMEDIATE32, iced_x86.OpKind.IMMEDIATE32TO64, iced_x86.OpKind.IMMEDIATE64})
# The immediates iced gives at their own width (the sign-extended ones it gives as 64 bits)
_IMMEDIATE_BITS = {iced_x86.OpKind.IMMEDIATE8: 8, iced_x86.OpKind.IMMEDIATE8_2ND: 8, iced_x86.OpKind.IMMEDIATE16: 16,
                   iced_x86.OpKind.IMMEDIATE32: 32}
_NONE = iced_x86.Register.NONE
_STACK_BASES = frozenset({iced_x86.Register.RSP, iced_x86.Register.RBP, iced_x86.Register.ESP, iced_x86.Register.EBP})


@dataclass(frozen=True)
class Block:
    key: int  # hash of the normalized instructions
    addresses: tuple[int, ...]  # of its instructions, in order
    tokens: tuple[int, ...]  # hash of each normalized instruction (for similarity)
    shape: int  # hash of the normalized instructions without immediates and displacements
    accesses: tuple[FieldAccess | None, ...] = ()  # per instruction: its plain field store or register load
    values: tuple[int, ...] = ()  # per instruction: hash of its constant values (immediates, a literal's bytes)
    flow: int = 0  # hash of its branches, calls and returns, normalized: what decides where the run goes next
    writes: tuple[frozenset, ...] = ()  # per instruction: the registers (and flags) it writes
    computes: tuple[int, ...] = ()  # per instruction: what it computes from the block's entry state (value_flow.local_values)
    leaves: frozenset = frozenset()  # the locations the block writes, each with its last writer's `computes`
    constants: tuple[tuple, ...] = ()  # per instruction: the parts its shape leaves out (immediates, displacements, literals)


class NewBlock(NamedTuple):
    """A new block of a region and the old block it is expected to run as often as (its anchor).
    The anchor's extent is there for sampled profiles: samples spread over a block's
    instructions, so its count is their sum over its length, not its first instruction's."""

    instructions: int
    anchor: int  # address of the anchor's first instruction
    anchor_last: int  # address of its last instruction
    anchor_instructions: int


# The changed functions remembered by remembered_regions: more than the (pair, changed function)
# alignments of a replay of a few hundred commits (the memory they take was not measured apart:
# the whole process peaked at 1.4 GB replaying pugixml's store, benchmarks/replay_remembered_regions.py)
REMEMBERED_FUNCTIONS = 50_000


@dataclass(frozen=True)
class Region:
    """Old blocks (possibly none) replaced by new blocks (possibly none).

    Each new block is paired with the old block expected to run as often as it does (its
    *anchor*, named by the address of its first instruction): in a replacement the most
    similar old block of the region, for an insertion the old block before it."""

    old_addresses: np.ndarray  # int64, addresses of the old instructions in the region
    new_blocks: tuple[NewBlock, ...]
    constants_only: bool = False  # as many new blocks as old ones, each of its old block's shape: only constants changed
    fields: tuple[tuple[int, int], ...] = ()  # constants only: the (field offset, bytes) its changed constants are stored to
    steers: bool = True  # its control flow differs, or what it computes can reach a decision (collectors/value_flow.py)
    # Constants only: the largest factor by which a changed immediate grew (constant_growth; inf for a
    # changed displacement or literal, or one that grew from 0 or changed sign), and whether its
    # changed values reach nothing but the function's own conditional branches (a compare's
    # constant, a loop bound: value_flow.decisions_reached is {"branch"}).
    growth: float = float("inf")
    contained: bool = False
    # Contained, every changed constant a compare's immediate deciding its block's ordered branch:
    # each such branch and the way the old run must always have taken it for the change to decide
    # nothing otherwise (collectors/compare_sides.py); None otherwise.
    quiet_branches: tuple[QuietBranch, ...] | None = None

    @property
    def new_instructions(self) -> int:
        return sum(block.instructions for block in self.new_blocks)


def basic_blocks(image: CodeImage, ranges: list[tuple[int, int]]) -> list[Block]:
    """The function's basic blocks, in address order within each part, parts in the given order."""
    low, high = image.span()
    blocks: list[Block] = []
    parts = [(address, size, list(iced_x86.Decoder(64, image.read(address, size), ip=address))) for address, size in ranges]
    # A branch of one part may land in the middle of another (a cold part jumping back to the
    # join point of the hot one): every part's targets split every part.
    targets = {instruction.near_branch_target for _, _, instructions in parts for instruction in instructions}
    frame = frame_registers(instruction for _, _, instructions in parts for instruction in instructions)
    for address, size, instructions in parts:
        offsets = RegisterOffsets()  # followed through the part in one linear pass, as the readers' are
        accesses = []
        for instruction in instructions:
            accesses.append(offsets.access(instruction))
            offsets.follow(instruction)
        accesses_at = dict(zip((instruction.ip for instruction in instructions), accesses))
        inside = range(address, address + size)
        leaders = {address} | {target for target in targets if target and target in inside}
        # Padding (a run of no-ops) is a block of its own: it aligns what follows, which is reached by
        # a jump, such as a jump table's case after `jmp rax`, whose targets are no known leaders.  In
        # one block with the case, the padding (never run) would be the block's first instruction,
        # whose count is the block's, and the case would seem never to run.
        for instruction, following in zip(instructions, instructions[1:]):
            if instruction.flow_control in _FLOW_ENDS_BLOCK or _is_nop(instruction) != _is_nop(following):
                leaders.add(following.ip)
        current: list[iced_x86.Instruction] = []
        for instruction in instructions:
            if instruction.ip in leaders and current:
                blocks.append(_block(current, low, high, image, inside, accesses_at, frame))
                current = []
            current.append(instruction)
        if current:
            blocks.append(_block(current, low, high, image, inside, accesses_at, frame))
    return blocks


def align(old: list[Block], new: list[Block]) -> list[Region]:
    return _aligned(old, new)[0]


def _aligned(old: list[Block], new: list[Block]) -> tuple[list[Region], list[tuple[bool, list[tuple[Block, Block]], list[tuple[Block, Block]]]]]:
    """The regions where the two block sequences differ.

    Blocks the compiler only moved (the same block, unmatched in order: a changed block
    layout) are paired with their old selves first and belong to no region: moved code is
    not changed code, and runs as often as before.  Of what remains, each new block of a
    region is anchored to the most similar remaining old block of the region; a region
    with none left anchors its blocks to the old counterpart of the new block before them
    (code inserted after a block runs as often as that block).  Each region's change: whether its
    control flow differs, its (new block, anchor) pairs, and for a constants-only region its (old,
    new) blocks in order, each of the other's shape."""
    matcher = SequenceMatcher(None, [b.key for b in old], [b.key for b in new], autojunk=False)
    operations = [o for o in matcher.get_opcodes() if o[0] != "equal"]
    counterpart: dict[int, int] = {j1 + k: i1 + k for op, i1, _, j1, j2 in matcher.get_opcodes() if op == "equal"
                                   for k in range(j2 - j1)}  # new block -> old block it equals
    moved_old, moved_new = _moved_blocks(old, new, operations)
    counterpart.update(moved_new)
    regions, changes = [], []
    for _, i1, i2, j1, j2 in operations:
        old_part = [i for i in range(i1, i2) if i not in moved_old]
        new_part = [j for j in range(j1, j2) if j not in moved_new]
        if not old_part and not new_part:
            continue
        addresses = np.array([a for i in old_part for a in old[i].addresses], dtype=np.int64)
        anchors = []
        for position, j in enumerate(new_part):
            if old_part:
                anchors.append(_most_similar(new[j], [old[i] for i in old_part], position))
            elif old:
                before = next((counterpart[k] for k in range(j - 1, -1, -1) if k in counterpart), 0)
                anchors.append(old[before])
        new_blocks = tuple(NewBlock(len(new[j].addresses), anchor.addresses[0], anchor.addresses[-1], len(anchor.addresses))
                           for j, anchor in zip(new_part, anchors))
        constants_only = len(old_part) == len(new_part) and all(old[i].shape == new[j].shape for i, j in zip(old_part, new_part))
        fields = tuple(sorted({field for i, j in zip(old_part, new_part) for field in _constant_fields(old[i], new[j])})) \
            if constants_only else ()
        steers = len(old_part) != len(new_part) or any(old[i].flow != new[j].flow for i, j in zip(old_part, new_part))
        growth = max((constant_growth(old[i], new[j]) for i, j in zip(old_part, new_part)), default=1.0) \
            if constants_only else float("inf")
        regions.append(Region(addresses, new_blocks, constants_only, fields, steers, growth))
        changes.append((steers, [(new[j], anchor) for j, anchor in zip(new_part, anchors)],
                        [(old[i], new[j]) for i, j in zip(old_part, new_part)] if constants_only else []))
    return regions, changes


def constant_growth(old: Block, new: Block) -> float:
    """The largest factor by which a constant of the new block outgrew the old block's (blocks of one
    shape): |new| / |old| for an immediate whose magnitude grew, 1 for one that shrank (it can take
    away at most the work it bounded), inf for one that grew from 0 or changed sign, and for a
    changed displacement (another field) or literal, whose size says nothing of the work."""
    growth = 1.0
    for old_parts, new_parts in zip(old.constants, new.constants):
        for before, after in zip(old_parts, new_parts):
            if before == after:
                continue
            if not (_is_immediate_part(before) and _is_immediate_part(after)):
                return float("inf")
            was, now = _signed(before), _signed(after)
            if was == 0 or (was < 0) != (now < 0):
                return float("inf")
            growth = max(growth, abs(now) / abs(was))
    return growth


def _is_immediate_part(part) -> bool:
    return isinstance(part, tuple) and len(part) == 2 and isinstance(part[1], int) and _is_immediate(part[0])


def _signed(part: tuple) -> int:
    """An immediate's value read as signed: iced gives a sign-extended one as 64 bits, any other at
    its own width (`cmp eax, 0xffffffff` is -1 to a 32-bit compare)."""
    kind, value = part
    bits = _IMMEDIATE_BITS.get(kind, 64)
    return value - (1 << bits) if value >= 1 << (bits - 1) else value


def _constant_fields(old: Block, new: Block) -> set[tuple[int, int]]:
    """The fields the new block of a constants-only pair stores a changed constant to: a store of a
    changed immediate, or of a register an instruction with a changed value loaded (a changed
    literal, a changed immediate), followed through register copies inside the block.  A changed
    displacement alone (another field, a new struct layout) is no changed value."""
    fields: set[tuple[int, int]] = set()
    carrying: set[int] = set()  # full registers holding a changed constant
    for old_value, new_value, access in zip(old.values, new.values, new.accesses):
        if access is None:
            continue
        changed = old_value != new_value
        if access.stored is not None and (changed or access.source in carrying):
            fields.add(access.stored)
        if access.defines is not None:
            if changed:
                carrying.add(access.defines)
            else:
                carrying.discard(access.defines)
    return fields


def _moved_blocks(old: list[Block], new: list[Block], operations) -> tuple[dict[int, int], dict[int, int]]:
    """Unmatched old and new blocks with the same instructions, paired in order: (old -> new, new -> old)."""
    waiting: dict[int, list[int]] = {}
    for _, i1, i2, _, _ in operations:
        for i in range(i1, i2):
            waiting.setdefault(old[i].key, []).append(i)
    moved_old, moved_new = {}, {}
    for _, _, _, j1, j2 in operations:
        for j in range(j1, j2):
            candidates = waiting.get(new[j].key)
            if candidates:
                i = candidates.pop(0)
                moved_old[i], moved_new[j] = j, i
    return moved_old, moved_new


def _most_similar(block: Block, candidates: list[Block], position: int) -> Block:
    """The old block whose instructions resemble `block`'s most (ties: the one at the same position)."""
    def score(index: int) -> tuple[float, bool]:
        similarity = SequenceMatcher(None, candidates[index].tokens, block.tokens, autojunk=False).ratio()
        return similarity, index == position

    return candidates[max(range(len(candidates)), key=score)]


def changed_regions(old_image: CodeImage, old_ranges: list[tuple[int, int]], new_image: CodeImage,
                    new_ranges: list[tuple[int, int]]) -> list[Region]:
    """The regions where the function's old and new code differ, each told whether it steers: its
    control flow differs, or a value its changed instructions compute reaches a decision of the
    new function (collectors/value_flow.py)."""
    regions, changes = _aligned(basic_blocks(old_image, old_ranges), basic_blocks(new_image, new_ranges))
    if not any(not steers for steers, _, _ in changes):
        return regions
    instructions = [instruction for address, size in new_ranges for instruction in decodes(new_image.read(address, size), address)]
    callee_use = partial(argument_use, new_image)
    told = []
    for region, (steers, pairs, same_shape) in zip(regions, changes):
        contained, quiet = False, None
        if not steers:
            changed, seeds = _changed_instructions(pairs)
            if region.constants_only:  # every decision its constants reach: whether they end in its own branches
                kinds = decisions_reached(instructions, changed, seeds, callee_use=callee_use, image=new_image)
                steers, contained = bool(kinds), kinds == {"branch"}
                if contained:
                    quiet = quiet_branches(old_image, old_ranges, new_image, same_shape)
            else:
                steers = reaches_decision(instructions, changed, seeds, callee_use=callee_use, image=new_image)
        told.append(dataclasses.replace(region, steers=steers, contained=contained, quiet_branches=quiet))
    return told


def remembered_regions(old_image: CodeImage, old_ranges: list[tuple[int, int]], new_image: CodeImage,
                       new_ranges: list[tuple[int, int]]) -> list[Region]:
    """changed_regions, remembered for the process by the two binaries (path, and the identity of
    the file read: CodeImage.identity) and the function's parts in each.  A feature builder
    remembers the regions of the pairs it compares, but the replay trains a new one on the store
    as of every boundary, and each of them compares most of the same pairs again: aligning them
    is most of the replay's time.
    The regions are read, never changed, by the features."""
    return _remembered(_Code(old_image, old_ranges), _Code(new_image, new_ranges))


class _Code(ImageKey):
    """A function's code in a binary: keyed by the binary's identity and the parts' addresses (the
    image rides along, unhashed, for the alignment)."""

    def __init__(self, image: CodeImage, ranges: list[tuple[int, int]]) -> None:
        super().__init__(image, tuple(ranges))
        self.ranges = list(ranges)


@lru_cache(maxsize=REMEMBERED_FUNCTIONS)
def _remembered(old: _Code, new: _Code) -> list[Region]:
    return changed_regions(old.image, old.ranges, new.image, new.ranges)


def _changed_instructions(pairs: list[tuple[Block, Block]]) -> tuple[frozenset[int], dict[int, frozenset]]:
    """The new instructions of (new block, its old anchor) pairs that compute something the old did
    not (those of a block whose instructions only changed order compute the same), and the
    registers a deleted old instruction wrote, from the new instruction that follows it.

    The instructions are matched with their registers numbered by first appearance in the block,
    so that registers renamed throughout are no change; but then an instruction moved up shifts
    the numbers of those after it, which stop matching although they compute what they did (a
    constant loaded into the same register, a copy of an unchanged argument).  So an instruction
    that computes, from the block's entry state, what an old instruction did (Block.computes) is
    none of them, and a register a deleted instruction wrote is no seed where the new block leaves
    it holding what the old left (Block.leaves: the same last writer)."""
    changed: set[int] = set()
    seeds: dict[int, frozenset] = {}
    for new, old in pairs:
        if sorted(new.tokens) == sorted(old.tokens):
            continue  # the same instructions in another order (scheduling): the same values
        recomputed = Counter(old.computes)
        left_alike = {place for place, number in new.leaves & old.leaves}
        matcher = SequenceMatcher(None, old.tokens, new.tokens, autojunk=False)
        for operation, i1, i2, j1, j2 in matcher.get_opcodes():
            if operation in ("replace", "insert"):
                for j in range(j1, j2):
                    number = new.computes[j] if new.computes else None
                    if recomputed[number] > 0:
                        recomputed[number] -= 1
                    else:
                        changed.add(new.addresses[j])
            if operation in ("replace", "delete") and i2 > i1:
                at = new.addresses[min(j1, len(new.addresses) - 1)]
                lost = (frozenset().union(*old.writes[i1:i2]) if old.writes else frozenset()) - left_alike
                seeds[at] = seeds.get(at, frozenset()) | lost
    return frozenset(changed), seeds


def load_image(path: str) -> CodeImage:
    """The binary's code, kept for the few commits a feature build compares at a time; a binary
    written again at the same path (a rebuild of the working tree) is read again."""
    status = os.stat(path)
    return _loaded_image(path, status.st_ino, status.st_size, status.st_mtime_ns)


@lru_cache(maxsize=8)
def _loaded_image(path: str, inode: int, size: int, modified: int) -> CodeImage:
    return CodeImage.load(path)


def _block(instructions: list[iced_x86.Instruction], low: int, high: int, image: CodeImage, inside: range,
           accesses: dict[int, FieldAccess | None], frame: frozenset) -> Block:
    designate = image.designate
    numbering: dict[int, int] = {}

    def register(value: int) -> tuple[int, int] | None:
        if value == _NONE:
            return None
        full = iced_x86.RegisterExt.full_register(value)
        return numbering.setdefault(full, len(numbering)), iced_x86.RegisterExt.size(value)

    def real_register(value: int) -> tuple[int, int] | None:
        return None if value == _NONE else (iced_x86.RegisterExt.full_register(value), iced_x86.RegisterExt.size(value))

    tokens, shapes, values, flow, identities, constants = [], [], [], [], [], []
    info = iced_x86.InstructionInfoFactory()
    for instruction in instructions:
        token: list = [instruction.mnemonic]
        shape: list = [instruction.mnemonic]  # the token, constants left out
        identity: list = [instruction.mnemonic]  # the token with the real registers: what local_values numbers
        # A no-op's operands are padding's length (`nop dword [rax]` or `nop word [rax+rax+0]`: what
        # aligns the next loop head), which moves with every change of the code before it
        operands = 0 if _is_nop(instruction) else instruction.op_count
        for operand in range(operands):
            kind = instruction.op_kind(operand)
            if kind == iced_x86.OpKind.REGISTER:
                token.append(register(instruction.op_register(operand)))
                shape.append(token[-1])
                identity.append(real_register(instruction.op_register(operand)))
            elif kind == iced_x86.OpKind.MEMORY:
                memory = _memory_token(instruction, register, low, high, image)
                token.append(memory)
                identity.append(_memory_token(instruction, real_register, low, high, image))
                shape.append(memory if _keeps_displacement(instruction, memory) else memory[:4] + (_constant_kind(memory), memory[5]))
            elif kind in _BRANCH_OPERANDS:
                target = instruction.near_branch_target
                token.append("branch" if target in inside else ("call", designate(target)))
                shape.append(token[-1])
            elif kind in _IMMEDIATES and low <= instruction.immediate(operand) < high:
                token.append(("address", designate(instruction.immediate(operand))))
                shape.append(token[-1])
            else:
                immediate = _is_immediate(kind)
                token.append((kind, instruction.immediate(operand) if immediate else 0))
                # One shape for every width of immediate: `cmp rdx, 64` encodes a byte, `cmp rdx,
                # 3000000` four, and a loop bound grown past 127 is still a changed constant.
                shape.append(("immediate", None) if immediate else (kind, 0))
            if len(identity) < len(token):
                identity.append(token[-1])  # a branch target or an immediate: as the token has it
        tokens.append(hash(tuple(token)))
        identities.append(tuple(identity))
        shapes.append(hash(tuple(shape)))
        constants.append(tuple(part if part != kept else None for part, kept in zip(token, shape)))
        values.append(hash(tuple(part for part in constants[-1] if part is not None and _is_value(part))))
        if instruction.flow_control != iced_x86.FlowControl.NEXT:
            flow.append(tokens[-1])
    computes, leaves = local_values(instructions, identities, frame)
    return Block(hash(tuple(tokens)), tuple(instruction.ip for instruction in instructions), tuple(tokens), hash(tuple(shapes)),
                 tuple(accesses.get(instruction.ip) for instruction in instructions), tuple(values), hash(tuple(flow)),
                 tuple(written_registers(instruction, info) for instruction in instructions), computes, leaves,
                 tuple(constants))


def _memory_token(instruction: iced_x86.Instruction, register, low: int, high: int, image: CodeImage) -> tuple:
    """(kind, base, index, scale, displacement, size), an address replaced by what it designates, or
    by the bytes it loads when it is a literal (see above; its shape keeps only that it is one)."""
    displacement = instruction.memory_displacement
    address = None
    if instruction.is_ip_rel_memory_operand:
        address = instruction.ip_rel_memory_address
    elif low <= displacement < high and instruction.memory_base == _NONE:
        address = displacement
    if address is not None:
        designated = image.designate(address)
        displacement = ("address", designated)
        if designated is None and instruction.memory_index == _NONE and instruction.mnemonic != iced_x86.Mnemonic.LEA:
            literal = image.literal(address, iced_x86.MemorySizeExt.size(instruction.memory_size))
            if literal is not None:
                displacement = ("literal", literal)
    return ("m", register(instruction.memory_base), register(instruction.memory_index),
            instruction.memory_index_scale, displacement, instruction.memory_size)


def _keeps_displacement(instruction: iced_x86.Instruction, memory: tuple) -> bool:
    """Whether a memory operand's shape keeps its displacement: an address (what it designates
    is no constant) or a stack slot (a moved slot is a new frame layout)."""
    return (isinstance(memory[4], tuple) and memory[4][0] != "literal") or instruction.memory_base in _STACK_BASES


def _is_value(part) -> bool:
    """Whether a normalized operand the shape leaves out is a value (an immediate, a literal's bytes),
    not a memory operand's displacement."""
    return not (isinstance(part, tuple) and part[0] == "m") or isinstance(part[4], tuple)


def _constant_kind(memory: tuple):
    """What a memory operand's shape keeps of the constant left out: that it is a literal, or nothing."""
    return ("literal",) if isinstance(memory[4], tuple) else None


def _is_nop(instruction: iced_x86.Instruction) -> bool:
    """Whether the instruction does nothing (`nop` in any of its lengths): what compilers pad with."""
    return instruction.mnemonic == iced_x86.Mnemonic.NOP


def _is_immediate(kind: int) -> bool:
    return kind in _IMMEDIATES or kind in (iced_x86.OpKind.IMMEDIATE8, iced_x86.OpKind.IMMEDIATE16,
                                           iced_x86.OpKind.IMMEDIATE8TO16, iced_x86.OpKind.IMMEDIATE8TO32,
                                           iced_x86.OpKind.IMMEDIATE8TO64, iced_x86.OpKind.IMMEDIATE8_2ND)
