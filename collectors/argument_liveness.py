"""Which argument registers a function reads: what a caller's changed value can reach through a call.

A changed value the caller leaves in an argument register reaches the callee only where the
callee reads that register before writing it: an intermediate a changed instruction left in
`rdx` is no changed argument of a callee of one argument.  value_flow asks this at each call
(and tail call) that a changed value may reach.

The answer is liveness at the callee's entry, a backward data flow over its instructions,
and errs towards "read" wherever it cannot follow:
- a call or tail call inside the callee reads what its own callee reads (followed a few
  calls deep, then every argument register), a call through a pointer or a PLT stub every
  one; an indirect jump (a jump table, or a tail call through a pointer) reads every one;
- a jump out of the function's symbol (to a cold part) reads every one;
- a write of 8 or 16 bits leaves the rest of the register the caller's;
- `rdx` and `xmm1` carry the second half of a returned pair: a callee that returns without
  writing them hands the caller's values back (`passed`), and the caller keeps them tainted.

A library function reached through a PLT stub reads the integer argument registers its
standard C or POSIX prototype names (LIBRARY_ARGUMENTS); one that ends the run when called (an
assertion's failure, abort, exit, a failed stack check) reads none: its arguments can change the
message, not the run a benchmark measures.  Other unknown callees (not a defined function of
the binary, a variadic or unlisted library function) read every argument register.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import iced_x86

from perf_selector.collectors.code_image import CodeImage, ImageKey

_R = iced_x86.Register
ARGUMENTS = frozenset({_R.RDI, _R.RSI, _R.RDX, _R.RCX, _R.R8, _R.R9} | {getattr(_R, f"ZMM{n}") for n in range(8)})
# a returned pair's second half: handed back unchanged by a callee that never writes it
RETURNED_SECOND = frozenset({_R.RDX, _R.ZMM1})
CALL_CLOBBERS = frozenset({_R.RAX, _R.RCX, _R.RDX, _R.RSI, _R.RDI, _R.R8, _R.R9, _R.R10, _R.R11}
                          | {getattr(_R, f"ZMM{n}") for n in range(16)})
# The accesses that read an operand (value_flow's too)
READS = frozenset({iced_x86.OpAccess.READ, iced_x86.OpAccess.READ_WRITE, iced_x86.OpAccess.COND_READ,
                   iced_x86.OpAccess.READ_COND_WRITE})
_ZEROING = frozenset({iced_x86.Mnemonic.XOR, iced_x86.Mnemonic.SUB, iced_x86.Mnemonic.PXOR, iced_x86.Mnemonic.XORPS,
                      iced_x86.Mnemonic.XORPD})
_GENERAL_FULL_WIDTH = 4  # bytes: a 32-bit write zero-extends into the whole register
# How many calls deep a callee's own calls are followed before they are taken to read everything
DEPTH = 3
# Functions answered for, remembered for the process by (binary, entry)
REMEMBERED = 100_000


_INTEGER_ORDER = (_R.RDI, _R.RSI, _R.RDX, _R.RCX, _R.R8, _R.R9)
# Library functions (no floating-point or variadic argument) and the number of integer or pointer
# arguments of their C standard or POSIX prototype
LIBRARY_ARGUMENTS = {
    **dict.fromkeys(("malloc", "free", "strlen", "strdup", "getenv", "fileno", "fclose", "fflush", "close", "atoi",
                     "atol", "atof", "isatty", "ftell", "rewind", "time", "localtime", "gmtime", "pthread_mutex_lock",
                     "pthread_mutex_unlock", "_setjmp", "setjmp", "puts", "tolower", "toupper", "sysconf",
                     "_ZdlPv", "_ZdaPv", "_Znwm", "_Znam", "__errno_location", "__ctype_b_loc", "__ctype_tolower_loc",
                     "__ctype_toupper_loc"), 1),
    **dict.fromkeys(("calloc", "realloc", "strcmp", "strchr", "strrchr", "strcpy", "strcat", "strstr", "strnlen",
                     "strndup", "fopen", "stat", "fstat", "lstat", "fputs", "fputc", "putc", "munmap",
                     "clock_gettime", "gettimeofday", "longjmp", "_longjmp", "siglongjmp", "strspn",
                     "strcspn", "strpbrk", "_ZdlPvm", "_ZdaPvm", "_ZnwmRKSt9nothrow_t", "aligned_alloc", "localtime_r",
                     "strtod", "strtof"), 2),
    **dict.fromkeys(("memcpy", "memmove", "memset", "memcmp", "memchr", "memrchr", "strncmp", "strncpy", "strncat",
                     "strtol", "strtoul", "strtoll", "strtoull", "read", "write", "lseek", "fseek", "fgets", "__strcpy_chk",
                     "reallocarray", "posix_memalign", "mprotect", "madvise",
                     "wmemcpy", "wmemset", "bcmp"), 3),
    **dict.fromkeys(("fread", "fwrite", "qsort", "pread", "pwrite", "__memcpy_chk", "__memmove_chk", "__memset_chk",
                     "__strncpy_chk", "pthread_create"), 4),
    **dict.fromkeys(("bsearch",), 5),
    **dict.fromkeys(("mmap",), 6),
}
# Library functions that end the run when called: what they are given cannot change what the
# benchmark measures
ENDS_THE_RUN = frozenset({"__assert_fail", "__assert_perror_fail", "__assert", "abort", "exit", "_exit", "_Exit",
                          "quick_exit", "__stack_chk_fail", "__fortify_fail", "__chk_fail"})


@dataclass(frozen=True)
class ArgumentUse:
    """What a function does with the argument registers it is called with."""

    read: frozenset  # the argument registers (full registers) it may read before writing them
    passed: frozenset  # of RETURNED_SECOND, those it may return unwritten


EVERY = ArgumentUse(ARGUMENTS, RETURNED_SECOND)
NOTHING = ArgumentUse(frozenset(), frozenset())


def library_use(name: str) -> ArgumentUse:
    """What a library function (its PLT stub's name, `name@plt`, or its bare name) reads."""
    name = name.removesuffix("@plt").split("@")[0]
    if name in ENDS_THE_RUN:
        return NOTHING
    if name in LIBRARY_ARGUMENTS:
        return ArgumentUse(frozenset(_INTEGER_ORDER[:LIBRARY_ARGUMENTS[name]]), RETURNED_SECOND)
    return EVERY


def argument_use(image: CodeImage, entry: int, depth: int = DEPTH) -> ArgumentUse:
    """What the function entered at `entry` in `image` reads of its argument registers."""
    return _remembered(ImageKey(image), entry, depth)


@lru_cache(maxsize=REMEMBERED)
def _remembered(image: ImageKey, entry: int, depth: int) -> ArgumentUse:
    if depth <= 0:
        return EVERY
    extent = image.image.function_at(entry)
    if extent is None:
        stub = image.image.designate(entry)
        return library_use(stub) if isinstance(stub, str) else EVERY
    instructions = function_instructions(image.image, *extent)
    if instructions is None:
        return EVERY
    return _liveness(instructions, lambda target: _remembered(image, target, depth - 1))


def function_instructions(image: CodeImage, address: int, size: int) -> list[iced_x86.Instruction] | None:
    """The instructions of the function symbol at `address` (`size` bytes); None where its bytes do
    not decode to whole instructions."""
    instructions = list(iced_x86.Decoder(64, image.read(address, size), ip=address))
    return instructions if instructions and instructions[-1].next_ip <= address + size else None


def _liveness(instructions: list[iced_x86.Instruction], callee_use) -> ArgumentUse:
    """Live argument registers at the first instruction, by a backward data flow to a fixed point:
    once with returns reading nothing (what the function reads), once with only the returns
    reading, the returned pair's second half (what it may hand back unwritten)."""
    info = iced_x86.InstructionInfoFactory()
    position = {instruction.ip: index for index, instruction in enumerate(instructions)}
    steps = [_effect(instruction, info, position, callee_use) for instruction in instructions]
    read = _live_at_entry(steps, returning=False)
    handed_back = _live_at_entry(steps, returning=True)
    return ArgumentUse(read=read, passed=handed_back & RETURNED_SECOND)


@dataclass(frozen=True)
class _Step:
    uses: frozenset
    kills: frozenset
    successors: tuple[int, ...]
    hands_back: frozenset = frozenset()  # at a return or tail call: what the caller gets back unwritten


def _effect(instruction: iced_x86.Instruction, info, position: dict, callee_use) -> _Step:
    flow = instruction.flow_control
    following = (position[instruction.next_ip],) if instruction.next_ip in position else ()
    uses, kills = _registers(instruction, info.info(instruction))
    if flow == iced_x86.FlowControl.RETURN:
        return _Step(uses, kills, (), RETURNED_SECOND)
    if flow in (iced_x86.FlowControl.CALL, iced_x86.FlowControl.INDIRECT_CALL):
        called = callee_use(instruction.near_branch_target) if flow == iced_x86.FlowControl.CALL else EVERY
        # what the callee hands back unwritten still holds what it held before the call
        return _Step(uses | called.read, kills | (CALL_CLOBBERS - called.passed), following)
    if flow == iced_x86.FlowControl.INDIRECT_BRANCH:
        return _Step(uses | ARGUMENTS, kills, (), RETURNED_SECOND)
    if flow in (iced_x86.FlowControl.UNCONDITIONAL_BRANCH, iced_x86.FlowControl.CONDITIONAL_BRANCH):
        target = instruction.near_branch_target
        successors = following if flow == iced_x86.FlowControl.CONDITIONAL_BRANCH else ()
        if target in position:
            return _Step(uses, kills, successors + (position[target],))
        # out of the symbol: a tail call when the target starts a function, else a cold part
        called = callee_use(target)
        return _Step(uses | called.read, kills, successors, called.passed)
    if flow in (iced_x86.FlowControl.INTERRUPT, iced_x86.FlowControl.EXCEPTION):
        return _Step(uses, kills, ())
    return _Step(uses, kills, following)


def zeroes(instruction: iced_x86.Instruction) -> bool:
    """`xor r, r` and its kin: an instruction that writes 0 to a whole register, reading none."""
    if instruction.mnemonic not in _ZEROING or instruction.op_count != 2 \
            or not instruction.op_kind(0) == instruction.op_kind(1) == iced_x86.OpKind.REGISTER:
        return False
    register = instruction.op0_register
    return register == instruction.op1_register and writes_whole(register)


def writes_whole(register: iced_x86.Register) -> bool:
    """Whether a write of `register` overwrites all of its full register (a write of 8 or 16 bits
    leaves the rest as it was)."""
    return not iced_x86.RegisterExt.is_gpr(register) or iced_x86.RegisterExt.size(register) >= _GENERAL_FULL_WIDTH


def _registers(instruction: iced_x86.Instruction, info) -> tuple[frozenset, frozenset]:
    """The full registers an instruction reads, and those it overwrites whole."""
    if zeroes(instruction):
        return frozenset(), frozenset({iced_x86.RegisterExt.full_register(instruction.op0_register)})
    uses, kills = set(), set()
    for used in info.used_registers():
        full = iced_x86.RegisterExt.full_register(used.register)
        if used.access in READS:
            uses.add(full)
        if used.access == iced_x86.OpAccess.WRITE and writes_whole(used.register):
            kills.add(full)
    return frozenset(uses), frozenset(kills)


def _live_at_entry(steps: list[_Step], returning: bool) -> frozenset:
    """The tracked registers live at the first instruction; `returning`: those that reach a return
    (or tail call) unwritten, which hands them back to the caller, whatever reads them on the way."""
    tracked = ARGUMENTS | RETURNED_SECOND
    live = [frozenset()] * len(steps)
    predecessors: list[list[int]] = [[] for _ in steps]
    for index, step in enumerate(steps):
        for successor in step.successors:
            predecessors[successor].append(index)
    pending = list(range(len(steps)))
    queued = set(pending)
    while pending:
        index = pending.pop()
        queued.discard(index)
        step = steps[index]
        out = frozenset().union(*(live[successor] for successor in step.successors))
        uses = step.hands_back if returning else step.uses
        now = ((uses | (out - step.kills)) & tracked)
        if now != live[index]:
            live[index] = now
            for predecessor in predecessors[index]:
                if predecessor not in queued:
                    queued.add(predecessor)
                    pending.append(predecessor)
    return live[0] if steps else ARGUMENTS
