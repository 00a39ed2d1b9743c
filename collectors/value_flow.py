"""Whether the values changed instructions compute can decide what runs: a function's local data flow.

A changed region of a function (collectors/block_diff.py) either does different work in
the same control flow, *straight-line* work whose cost the old run's counts foretell
exactly (each instruction runs as often as its block), or it can change what runs after
it.  It *steers* when:

- its control flow differs: a block more or fewer, or a branch, call or return that is not
  the old one (another callee, a new call);
- a value a changed instruction computes reaches, through registers, the flags and the
  function's stack slots, a decision: a conditional branch's flags, an indirect branch or
  call's target, the arguments of a call that its callee may decide on (a changed
  argument), the return value (the caller may), a store outside the stack frame (code
  elsewhere may read it), or the address of a load or store (which data is read).

A changed argument of a direct call is followed into the callee, with the same rules (and
its own calls, CALLEE_DEPTH calls deep): when none of the callee's decisions reads it, the
callee does the same work on another value, and the call is no decision; when the callee
returns a value computed from it, the caller's return registers hold a changed value after
the call.  A callee's store of a changed value outside its frame (a global's too: the
changed function's own stores to globals are changed_writes_hot_data's, not its callees') is a
decision.  A callee that jumps out of its own code (a tail call, a cold part that goes on
with its registers) while holding a changed value, one that is not a defined function of the
binary, or one deeper than CALLEE_DEPTH, decides on the argument, for all this knows.

Followed in one linear pass over the function in address order, done twice so that a
value defined after a loop's compare (in address order) and read by it on the next
iteration is seen; a write of an untainted value ends a register's or slot's taint, as does
`xor r, r` (and its kin: 0 whatever r held).  An 8- or 16-bit write keeps the rest of the
register: written with an unchanged value, its low bytes read nothing changed (`sete %al`, then
`movzbl %al, %eax`), the whole register still does.
A changed instruction that only moves a value it did not change (a register copy, a spill
or reload of a stack slot: register allocation) computes nothing new.  The stack pointer, and
`rbp` where the function sets it up as the frame pointer (`mov rbp, rsp`), carry no value (a new
frame size is a layout, not data); elsewhere `rbp` is a register like any other (gcc -O2 omits
the frame pointer and allocates `rbp` to values).

What this does not follow: values through memory other than the frame's slots (a store
outside the frame already counts as steering), nor arguments passed on the stack.  It is a
function's view, and its callees', exact for what it follows.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache, partial
from typing import Callable, Iterable, Mapping

import iced_x86

from perf_selector.collectors.argument_liveness import ARGUMENTS, CALL_CLOBBERS, EVERY, READS as _READS, ArgumentUse, \
    argument_use, function_instructions, writes_whole, zeroes
from perf_selector.collectors.code_image import CodeImage, ImageKey

# What a call's target (its address) reads of its argument registers (argument_liveness.argument_use)
CalleeUse = Callable[[int], ArgumentUse]

_WRITES = frozenset({iced_x86.OpAccess.WRITE, iced_x86.OpAccess.READ_WRITE, iced_x86.OpAccess.COND_WRITE,
                     iced_x86.OpAccess.READ_COND_WRITE})
_OVERWRITES = frozenset({iced_x86.OpAccess.WRITE})  # an unconditional write ends a taint
# bits 8-15 of a general register: a write there leaves its low byte as it was
_HIGH_BYTES = frozenset({iced_x86.Register.AH, iced_x86.Register.BH, iced_x86.Register.CH, iced_x86.Register.DH})
_STACK_POINTER = frozenset({iced_x86.Register.RSP})
_WITH_FRAME_POINTER = frozenset({iced_x86.Register.RSP, iced_x86.Register.RBP})
_NONE = iced_x86.Register.NONE
# The System V ABI's return registers
_RETURNED = frozenset({iced_x86.Register.RAX, iced_x86.Register.RDX, iced_x86.Register.ZMM0, iced_x86.Register.ZMM1})
_MOVES = frozenset({iced_x86.Mnemonic.MOV, iced_x86.Mnemonic.MOVAPS, iced_x86.Mnemonic.MOVAPD, iced_x86.Mnemonic.MOVDQA,
                    iced_x86.Mnemonic.MOVDQU, iced_x86.Mnemonic.MOVUPS, iced_x86.Mnemonic.MOVUPD, iced_x86.Mnemonic.MOVQ,
                    iced_x86.Mnemonic.MOVD, iced_x86.Mnemonic.MOVSD, iced_x86.Mnemonic.MOVSS, iced_x86.Mnemonic.VMOVAPS,
                    iced_x86.Mnemonic.VMOVDQA, iced_x86.Mnemonic.VMOVDQU, iced_x86.Mnemonic.VMOVUPS,
                    iced_x86.Mnemonic.PUSH, iced_x86.Mnemonic.POP, iced_x86.Mnemonic.XCHG})
_FLAGS = "flags"
_STATUS_FLAGS = (iced_x86.RflagsBits.OF | iced_x86.RflagsBits.SF | iced_x86.RflagsBits.ZF | iced_x86.RflagsBits.AF
                 | iced_x86.RflagsBits.PF | iced_x86.RflagsBits.CF)
_PASSES = 2
# How many calls deep a changed argument is followed into callees (argument_liveness.DEPTH's reach)
CALLEE_DEPTH = 3
# Callees answered for, remembered for the process by (binary, entry, changed arguments, depth)
REMEMBERED_CALLEES = 100_000


def decodes(code: bytes, address: int) -> list[iced_x86.Instruction]:
    """The instructions of one part of a function."""
    return list(iced_x86.Decoder(64, code, ip=address))


def reaches_decision(instructions: Iterable[iced_x86.Instruction], changed: frozenset[int],
                     seeds: Mapping[int, frozenset[int]] | None = None, main: bool = False,
                     callee_use: CalleeUse | None = None, image: CodeImage | None = None) -> bool:
    """Whether a value computed by an instruction at one of the `changed` addresses can reach a
    decision (see above) in the function whose instructions, in address order, are given.
    `seeds`: registers that hold another value than before from an address on (those a deleted
    instruction wrote, before the instruction that follows it).  `main`: the function is the
    program's entry (its return value decides nothing that runs).  `callee_use`: what a direct
    call's or tail call's target reads of its argument registers; without it, every callee
    reads every one.  `image`: the binary the function is in, whose callees a changed argument
    is followed into; without it, a changed argument a callee reads is a decision."""
    return decision_reached(instructions, changed, seeds, main, callee_use, image) is not None


def decision_reached(instructions: Iterable[iced_x86.Instruction], changed: frozenset[int],
                     seeds: Mapping[int, frozenset[int]] | None = None, main: bool = False,
                     callee_use: CalleeUse | None = None, image: CodeImage | None = None) -> str | None:
    """What reaches_decision finds first: "branch", "indirect target", "call argument", "return
    value", "store through a pointer" or "address"; None when no decision is reached."""
    instructions = list(instructions)
    return _flow(instructions, changed, seeds or {}, main, _callees_of(instructions, callee_use, image)).decision


def decisions_reached(instructions: Iterable[iced_x86.Instruction], changed: frozenset[int],
                      seeds: Mapping[int, frozenset[int]] | None = None, main: bool = False,
                      callee_use: CalleeUse | None = None, image: CodeImage | None = None) -> frozenset[str]:
    """Every kind of decision (decision_reached's names) the changed values reach, not only the
    first: the flow goes on past each.  What tells a compare's constant or a loop bound, whose
    values end in the function's own branches ({"branch"}), from a constant that leaves the
    function (returned, stored, passed on) and may steer code far from it.  Where an instruction
    is a decision the flow does not apply its writes (a call's clobbers are kept tainted): it may
    find more kinds, never fewer."""
    instructions = list(instructions)
    kinds: set[str] = set()
    _flow(instructions, changed, seeds or {}, main, _callees_of(instructions, callee_use, image), kinds)
    return frozenset(kinds)


def _callees_of(instructions: list[iced_x86.Instruction], callee_use: CalleeUse | None, image: CodeImage | None) -> "_Callees":
    """The calls of a changed function, followed into `image`'s callees where it is given."""
    followed = _Followed(ImageKey(image), CALLEE_DEPTH) if image is not None else None
    return _Callees(callee_use, _inside(instructions), followed)


@dataclass(frozen=True)
class _Outcome:
    """What a function does with its changed values: the first decision they reach (None: none), and
    the return registers in which one of its returns hands a changed value back (a callee's,
    followed from a call)."""

    decision: str | None
    returned: frozenset = frozenset()


def _inside(instructions: list[iced_x86.Instruction]) -> frozenset[int]:
    return frozenset(instruction.ip for instruction in instructions)


def _flow(instructions: list[iced_x86.Instruction], changed: frozenset[int], seeds: Mapping[int, frozenset],
          main: bool, called: "_Callees", every: set[str] | None = None) -> _Outcome:
    """Follow the changed values through the function, _PASSES times in address order, to the first
    decision; with `every`, through the whole function, each decision's kind added to it."""
    info = iced_x86.InstructionInfoFactory()
    frame = frame_registers(instructions)
    tainted = _Taint()
    for _ in range(_PASSES):
        for instruction in instructions:
            tainted.update(seeds.get(instruction.ip, ()))
            reached = _step(instruction, info.info(instruction), instruction.ip in changed, tainted, main, called, frame)
            if reached and every is None:
                return _Outcome(reached, frozenset(called.returned))
            if reached:
                every.add(reached)
    return _Outcome(None, frozenset(called.returned))


def frame_registers(instructions: Iterable[iced_x86.Instruction]) -> frozenset:
    """The registers that address the function's stack frame and carry no value: the stack pointer,
    and `rbp` where the function sets it up as the frame pointer."""
    for instruction in instructions:
        if instruction.mnemonic == iced_x86.Mnemonic.MOV and instruction.op_count == 2 \
                and instruction.op_kind(0) == iced_x86.OpKind.REGISTER and instruction.op0_register == iced_x86.Register.RBP \
                and instruction.op_kind(1) == iced_x86.OpKind.REGISTER and instruction.op1_register == iced_x86.Register.RSP:
            return _WITH_FRAME_POINTER
    return _STACK_POINTER


def written_registers(instruction: iced_x86.Instruction, info: iced_x86.InstructionInfoFactory) -> frozenset:
    """The full registers an instruction writes (the stack pointer left out), and the flags."""
    written = {iced_x86.RegisterExt.full_register(used.register) for used in info.info(instruction).used_registers()
               if used.access in _WRITES}
    return frozenset((written - _STACK_POINTER) | ({_FLAGS} if instruction.rflags_modified else set()))


@dataclass(frozen=True)
class _Followed:
    """The binary whose callees a changed argument is followed into, and how many calls deeper."""

    image: ImageKey
    depth: int


class _Callees:
    """What the calls of one function pass on: which of a call's argument registers its target
    reads, and (`followed`) what the target does with the changed ones.  `returning`: the function
    is itself a callee followed from a call, whose returns hand a changed value back to the caller
    (the registers recorded in `returned`) instead of deciding."""

    def __init__(self, callee_use: CalleeUse | None, inside: frozenset[int], followed: _Followed | None = None,
                 returning: bool = False) -> None:
        self.callee_use, self.inside, self.followed, self.returning = callee_use, inside, followed, returning
        self.returned: set = set()

    def use(self, instruction: iced_x86.Instruction) -> ArgumentUse:
        direct = (iced_x86.FlowControl.CALL, iced_x86.FlowControl.UNCONDITIONAL_BRANCH)
        if self.callee_use is None or instruction.flow_control not in direct:
            return EVERY  # a call through a pointer: any function
        return self.callee_use(instruction.near_branch_target)

    def tail_call(self, instruction: iced_x86.Instruction) -> bool:
        """A jump out of the function's code: another function entered with this one's arguments."""
        return instruction.flow_control == iced_x86.FlowControl.UNCONDITIONAL_BRANCH \
            and instruction.near_branch_target not in self.inside

    def callee_outcome(self, instruction: iced_x86.Instruction, arguments: frozenset) -> _Outcome | None:
        """What a direct call's target does with the changed `arguments` it reads; None where it is
        not followed (no binary, a call through a pointer, not a defined function, too deep)."""
        if self.followed is None or instruction.flow_control != iced_x86.FlowControl.CALL:
            return None
        return _callee_outcome(self.followed.image, instruction.near_branch_target, arguments, self.followed.depth)


@lru_cache(maxsize=REMEMBERED_CALLEES)
def _callee_outcome(image: ImageKey, entry: int, arguments: frozenset, depth: int) -> _Outcome | None:
    """The outcome of the function entered at `entry` with changed `arguments`, its own calls
    followed `depth` - 1 deeper; None where it cannot be followed."""
    if depth <= 0:
        return None
    extent = image.image.function_at(entry)
    instructions = function_instructions(image.image, *extent) if extent is not None else None
    if instructions is None:
        return None
    called = _Callees(partial(argument_use, image.image), _inside(instructions), _Followed(image, depth - 1),
                      returning=True)
    return _flow(instructions, frozenset(), {entry: arguments}, False, called)


def _step(instruction: iced_x86.Instruction, info, changed: bool, tainted: "_Taint", main: bool,
          called: _Callees, frame: frozenset) -> str | None:
    """Follow one instruction: the decision a tainted value reaches here, or None."""
    reads, writes, overwrites = _registers_used(info, frame)
    if zeroes(instruction):
        reads, overwrites = set(), writes  # the result is 0 whatever the register held
    address_tainted = False
    loaded_slots, stored_slots, stores_outside = set(), set(), False
    for memory in info.used_memory():
        base, index = iced_x86.RegisterExt.full_register(memory.base), memory.index
        slot = _stack_slot(memory, frame)
        if index != _NONE and iced_x86.RegisterExt.full_register(index) in tainted:
            address_tainted = True
        if base not in frame and base != _NONE and base in tainted:
            address_tainted = True
        if memory.access in _READS and slot is not None:
            loaded_slots.add(slot)
        if memory.access in _WRITES:
            if slot is not None:
                stored_slots.add(slot)
            elif called.returning or (base != _NONE and base != iced_x86.Register.RIP):
                # a global's store is changed_writes_hot_data's to judge, of the changed function's
                # own stores: a callee's store of a changed argument to a global is a decision here
                stores_outside = True
    flow = instruction.flow_control
    reads_flags = instruction.rflags_read != 0
    reads_changed = reads & tainted
    if reads_changed & tainted.clean_low.keys():  # a low part may be clean: ask each read's width
        reads_changed = _reads_changed(info, frame, tainted)
    source = reads_changed or (reads_flags and _FLAGS in tainted) or (loaded_slots & tainted) or address_tainted
    if changed and not _only_moves(instruction, frame):
        source = True
    if flow == iced_x86.FlowControl.CONDITIONAL_BRANCH and _FLAGS in tainted:
        return "branch"
    if flow in (iced_x86.FlowControl.INDIRECT_BRANCH, iced_x86.FlowControl.INDIRECT_CALL) and reads_changed:
        return "indirect target"
    tail_call = called.tail_call(instruction)
    if tail_call and called.returning and tainted - {_FLAGS}:
        return "call argument"  # a followed callee going on elsewhere (a cold part) with a changed value
    if flow in (iced_x86.FlowControl.CALL, iced_x86.FlowControl.INDIRECT_CALL) or tail_call:
        handed_back: set = set()
        if ARGUMENTS & tainted:
            # an intermediate left in an argument register the callee never reads is no argument
            use = called.use(instruction)
            arguments = frozenset(ARGUMENTS & tainted & use.read)
            if arguments:
                outcome = called.callee_outcome(instruction, arguments)
                if outcome is None or outcome.decision is not None:
                    return "call argument"
                handed_back = set(outcome.returned)
            handed_back |= tainted & use.passed
        tainted.difference_update(CALL_CLOBBERS)
        tainted.discard(_FLAGS)
        tainted.update(handed_back)
        return None
    if flow == iced_x86.FlowControl.RETURN:
        if _RETURNED & tainted and called.returning:
            called.returned.update(_RETURNED & tainted)  # the caller goes on with it
            return None
        return "return value" if _RETURNED & tainted and not main else None
    if stores_outside and source:
        return "store through a pointer" if not address_tainted else "address"
    _update(tainted, writes, overwrites, stored_slots, bool(source))
    if not source and (writes - overwrites) & tainted:  # a changed register written only in part
        _marks_clean_low(tainted, info, frame)
    if instruction.rflags_modified:
        if source:
            tainted.add(_FLAGS)
        elif instruction.rflags_modified & _STATUS_FLAGS == _STATUS_FLAGS:
            # every status flag replaced, whether written, set, cleared or left undefined (`test`
            # clears OF and CF, leaves AF undefined): none still holds the changed value; `inc`
            # leaves CF as it was, so a changed carry lives on through it
            tainted.discard(_FLAGS)
    return None


def _registers_used(info, frame: frozenset) -> tuple[set, set, set]:
    """The full registers an instruction reads, writes, and overwrites whatever they held, the
    stack and frame pointers left out."""
    reads, writes, overwrites = set(), set(), set()
    for used in info.used_registers():
        full = iced_x86.RegisterExt.full_register(used.register)
        if full in frame:
            continue
        if used.access in _READS:
            reads.add(full)
        if used.access in _WRITES:
            writes.add(full)
        if used.access in _OVERWRITES and writes_whole(used.register):  # 8 or 16 bits keep the rest
            overwrites.add(full)
    return reads, writes, overwrites


def _marks_clean_low(tainted: "_Taint", info, frame: frozenset) -> None:
    """An unchanged value written to the low 8 or 16 bits of a changed general register: those
    bits are no longer changed, the rest still is (`sete %al` over a changed rax)."""
    for used in info.used_registers():
        full = iced_x86.RegisterExt.full_register(used.register)
        if used.access in _OVERWRITES and not writes_whole(used.register) and full in tainted and full not in frame \
                and used.register not in _HIGH_BYTES:
            tainted.clean_low[full] = max(tainted.clean_low.get(full, 0), iced_x86.RegisterExt.size(used.register))


def _reads_changed(info, frame: frozenset, tainted: "_Taint") -> set:
    """The full registers the instruction reads a changed part of: a read of a low part an
    unchanged value was written to (_marks_clean_low) reads nothing changed."""
    changed = set()
    for used in info.used_registers():
        full = iced_x86.RegisterExt.full_register(used.register)
        if used.access in _READS and full in tainted and full not in frame and not tainted.clean(used.register):
            changed.add(full)
    return changed


class _Taint(set):
    """The changed locations (full registers, stack slots (base, displacement), _FLAGS), and for
    a changed general register the low bytes an unchanged value has since been written to
    (`clean_low`): a location changed again, or no longer changed, has none."""

    def __init__(self) -> None:
        super().__init__()
        self.clean_low: dict = {}

    def add(self, location) -> None:
        self.clean_low.pop(location, None)
        super().add(location)

    def update(self, *locations) -> None:
        for group in locations:
            for location in group:
                self.add(location)

    def discard(self, location) -> None:
        self.clean_low.pop(location, None)
        super().discard(location)

    def difference_update(self, *locations) -> None:
        for group in locations:
            for location in list(group):
                self.discard(location)

    def clean(self, register) -> bool:
        """Whether a read of `register` reads only low bytes written with an unchanged value."""
        low = self.clean_low.get(iced_x86.RegisterExt.full_register(register), 0)
        return low >= (2 if register in _HIGH_BYTES else iced_x86.RegisterExt.size(register))


def _stack_slot(memory, frame: frozenset) -> tuple[int, int] | None:
    """The stack slot a memory operand names (frame register, displacement), as taints name it;
    None for other memory."""
    base = iced_x86.RegisterExt.full_register(memory.base)
    return (base, memory.displacement_i64) if base in frame and memory.index == _NONE else None


def _update(tainted: set, writes: set, overwrites: set, stored_slots: set, source: bool) -> None:
    if source:
        tainted.update(writes)
        tainted.update(stored_slots)
    else:
        tainted.difference_update(overwrites)
        tainted.difference_update(stored_slots)


def _only_moves(instruction: iced_x86.Instruction, frame: frozenset) -> bool:
    """A changed instruction that only copies a value between registers and stack slots (register
    allocation): no immediate, and no memory but the frame's slots."""
    if instruction.mnemonic not in _MOVES:
        return False
    for operand in range(instruction.op_count):
        kind = instruction.op_kind(operand)
        if kind == iced_x86.OpKind.MEMORY:
            if iced_x86.RegisterExt.full_register(instruction.memory_base) not in frame \
                    or instruction.memory_index != _NONE:
                return False
        elif kind != iced_x86.OpKind.REGISTER:
            return False
    return True


def local_values(instructions: list[iced_x86.Instruction], identities: list,
                 frame: frozenset = _STACK_POINTER) -> tuple[tuple[int, ...], frozenset]:
    """What each of a block's instructions computes from the block's entry state, as a number
    (local value numbering): the instruction itself (`identities`: with its real registers), and
    for each location it reads (a register, the flags, a stack slot, other memory as one) the
    number of the instruction in the block that last wrote it, or that the entry's value is read.
    Two blocks' instructions with equal numbers compute the same value from the same entry state,
    in whatever order the blocks hold them.  Also the locations the block leaves written, each with
    its last writer's number (what follows the block reads).  The `frame` registers (the function's:
    frame_registers) carry no value (as for reaches_decision)."""
    info = iced_x86.InstructionInfoFactory()
    last: dict = {}
    numbers = []
    for instruction, identity in zip(instructions, identities):
        reads, writes = _locations(instruction, info.info(instruction), frame)
        number = hash((identity, tuple(sorted(((repr(place), last.get(place, 0)) for place in reads)))))
        numbers.append(number)
        for place in writes:
            last[place] = number
    return tuple(numbers), frozenset(last.items())


def _locations(instruction: iced_x86.Instruction, info, frame: frozenset) -> tuple[set, set]:
    """The locations an instruction reads and writes, named as reaches_decision taints them: full
    registers, _FLAGS, stack slots (frame register, displacement); other memory is "memory"."""
    reads, writes, _ = _registers_used(info, frame)
    for memory in info.used_memory():
        place = _stack_slot(memory, frame) or "memory"
        if memory.access in _READS:
            reads.add(place)
        if memory.access in _WRITES:
            writes.add(place)
    if instruction.rflags_read:
        reads.add(_FLAGS)
    if instruction.rflags_modified:
        writes.add(_FLAGS)
    return reads, writes
