"""What a function's code does beyond computing: the data it writes, and whether it asks the CPU.

Code that runs once can decide what runs afterwards: start-up code fills a table of
function pointers, or sets a global parameter, that the hot code reads; a CPU-feature
check picks a SIMD path.  The function table's ``data_refs`` say which objects a function
references, not whether it writes them; this decodes the function (iced-x86, as the block
alignment does) and reports:

- the addresses its stores resolve to: a memory destination that is RIP-relative, absolute
  (a fixed-address executable), or based on a register last loaded with an object's
  address in the same function (``lea rbx, [rip+table]`` ... ``mov [rbx+rax*8], rdx``).
  Stores through a pointer loaded from memory (a GOT slot, an argument) or made by a callee
  (``memcpy(table, ...)``) are not seen;
- whether it executes ``cpuid`` or ``xgetbv`` (CPU-feature detection);
- whether it is the resolver of an IFUNC symbol (``STT_GNU_IFUNC``: the dynamic loader runs it
  to pick an implementation, as gcc's ``target_clones`` and glibc's string functions do).

Only changed and new functions are decoded (features/builder.py caches each per commit).
"""

from __future__ import annotations

from dataclasses import dataclass

import iced_x86

from perf_selector.collectors.code_image import CodeImage

_WRITES = frozenset({iced_x86.OpAccess.WRITE, iced_x86.OpAccess.READ_WRITE, iced_x86.OpAccess.COND_WRITE,
                     iced_x86.OpAccess.READ_COND_WRITE})
_CPU_QUERIES = frozenset({iced_x86.Mnemonic.CPUID, iced_x86.Mnemonic.XGETBV})
_NONE = iced_x86.Register.NONE
_THREAD_SEGMENTS = frozenset({iced_x86.Register.FS, iced_x86.Register.GS})  # thread-local storage: no object's address
# What a call leaves undefined (the System V ABI's caller-saved registers)
_CALL_CLOBBERS = frozenset({iced_x86.Register.RAX, iced_x86.Register.RCX, iced_x86.Register.RDX, iced_x86.Register.RSI,
                            iced_x86.Register.RDI, iced_x86.Register.R8, iced_x86.Register.R9, iced_x86.Register.R10,
                            iced_x86.Register.R11})


@dataclass(frozen=True)
class CodeEffects:
    written: tuple[int, ...]  # addresses its stores resolve to (sorted, unique)
    queries_cpu: bool  # executes cpuid or xgetbv
    resolves_ifunc: bool  # the resolver of an IFUNC symbol


def code_effects(image: CodeImage, ranges: list[tuple[int, int]]) -> CodeEffects:
    """The effects of the function whose parts are `ranges` ((address, size), main part first)."""
    info = iced_x86.InstructionInfoFactory()
    low, high = _address_span(image)
    written: set[int] = set()
    queries_cpu = False
    for address, size in ranges:
        holding: dict[int, int] = {}  # full register -> the object address it was loaded with
        for instruction in iced_x86.Decoder(64, image.read(address, size), ip=address):
            queries_cpu = queries_cpu or instruction.mnemonic in _CPU_QUERIES
            written.update(_stored_addresses(instruction, info, holding, low, high))
            _follow_registers(instruction, info, holding, low, high)
    resolvers = image.ifunc_resolvers
    return CodeEffects(tuple(sorted(written)), queries_cpu, any(address in resolvers for address, _ in ranges))


def _address_span(image: CodeImage) -> tuple[int, int]:
    """Where an absolute address can point: every allocated section, .bss included (where most
    written objects live); nowhere in a position-independent image."""
    headers = image.headers[((image.headers["flags"] & 0x2) != 0) & (image.headers["address"] > 0)]
    if image.position_independent or not len(headers):
        return 0, 0
    return int(headers["address"].min()), int((headers["address"] + headers["size"]).max())


def _stored_addresses(instruction: iced_x86.Instruction, info: iced_x86.InstructionInfoFactory, holding: dict[int, int],
                      low: int, high: int) -> list[int]:
    """The addresses the instruction's explicit memory destination resolves to (none or one)."""
    memory = next((operand for operand in range(instruction.op_count)
                   if instruction.op_kind(operand) == iced_x86.OpKind.MEMORY), None)
    if memory is None or instruction.memory_segment in _THREAD_SEGMENTS:
        return []
    if info.info(instruction).op_access(memory) not in _WRITES:
        return []
    target = _memory_address(instruction, holding, low, high)
    return [] if target is None else [target]


def _memory_address(instruction: iced_x86.Instruction, holding: dict[int, int], low: int, high: int) -> int | None:
    """Where the memory operand points when that is known without running the code: RIP-relative,
    absolute inside the image (a fixed-address executable), or off a register holding an address."""
    if instruction.is_ip_rel_memory_operand:
        return instruction.ip_rel_memory_address
    base, index, displacement = instruction.memory_base, instruction.memory_index, instruction.memory_displacement
    held = holding.get(iced_x86.RegisterExt.full_register(base)) if base != _NONE else None
    if held is None and index != _NONE and instruction.memory_index_scale == 1:
        held = holding.get(iced_x86.RegisterExt.full_register(index))  # [offset + table]: the table may be the index
    if held is not None:
        return (held + _signed(displacement)) & 0xFFFF_FFFF_FFFF_FFFF
    if base == _NONE and low <= displacement < high:
        return displacement  # absolute, indexed or not: the table's start
    return None


def _follow_registers(instruction: iced_x86.Instruction, info: iced_x86.InstructionInfoFactory, holding: dict[int, int],
                      low: int, high: int) -> None:
    """Keep `holding` (register -> object address) current after the instruction: what it writes is
    forgotten, then an address it loads (``lea r, [rip+x]``, ``mov r, imm`` in a fixed image) is held."""
    if not holding and instruction.mnemonic not in (iced_x86.Mnemonic.LEA, iced_x86.Mnemonic.MOV):
        return  # nothing held and nothing to hold: the common case, decided without the info
    if instruction.flow_control in (iced_x86.FlowControl.CALL, iced_x86.FlowControl.INDIRECT_CALL):
        for register in _CALL_CLOBBERS:
            holding.pop(register, None)
    for used in info.info(instruction).used_registers():
        if used.access in _WRITES:
            holding.pop(iced_x86.RegisterExt.full_register(used.register), None)
    loaded = _loaded_address(instruction, low, high)
    if loaded is not None:
        holding[iced_x86.RegisterExt.full_register(instruction.op0_register)] = loaded


def _loaded_address(instruction: iced_x86.Instruction, low: int, high: int) -> int | None:
    """The address a ``lea r, [rip+x]`` or (fixed image) ``mov r, imm`` puts in a 64- or 32-bit register."""
    if instruction.op_count != 2 or instruction.op0_kind != iced_x86.OpKind.REGISTER:
        return None
    if instruction.mnemonic == iced_x86.Mnemonic.LEA and instruction.is_ip_rel_memory_operand:
        return instruction.ip_rel_memory_address
    if instruction.mnemonic == iced_x86.Mnemonic.MOV and instruction.op1_kind in (
            iced_x86.OpKind.IMMEDIATE32, iced_x86.OpKind.IMMEDIATE32TO64, iced_x86.OpKind.IMMEDIATE64):
        value = instruction.immediate(1)
        return value if low <= value < high else None
    return None


def _signed(displacement: int) -> int:
    """iced-x86 gives a 64-bit displacement as an unsigned number."""
    return displacement - (1 << 64) if displacement >= 1 << 63 else displacement


# ------------------------------------------------------------------ struct fields
# A field of a heap struct is reached at [register + displacement]: which struct is not known
# without running the code, only the displacement.  Registers are followed through one linear
# pass over a function part, with no regard to branches: `add r, imm`, `sub r, imm`,
# `lea r, [s + d]` and `mov r, s` keep an offset from whatever the register held before (gcc
# advances a struct pointer before reading through it: ``add rdi, 0x28`` ... ``mov eax,
# [rdi+0x8987fc]``); any other write to a register forgets it.  A field is named by that
# offset plus the displacement, the access by its size in bytes.

# Plain moves: a store of a register or an immediate, or a load of a register
_MOVES = frozenset({
    iced_x86.Mnemonic.MOV, iced_x86.Mnemonic.MOVD, iced_x86.Mnemonic.MOVQ, iced_x86.Mnemonic.MOVDQA,
    iced_x86.Mnemonic.MOVDQU, iced_x86.Mnemonic.MOVUPS, iced_x86.Mnemonic.MOVAPS, iced_x86.Mnemonic.MOVUPD,
    iced_x86.Mnemonic.MOVAPD, iced_x86.Mnemonic.MOVSS, iced_x86.Mnemonic.MOVSD, iced_x86.Mnemonic.MOVNTI,
    iced_x86.Mnemonic.VMOVDQA, iced_x86.Mnemonic.VMOVDQU, iced_x86.Mnemonic.VMOVUPS, iced_x86.Mnemonic.VMOVAPS,
    iced_x86.Mnemonic.VMOVD, iced_x86.Mnemonic.VMOVQ, iced_x86.Mnemonic.VMOVDQU8, iced_x86.Mnemonic.VMOVDQU32,
    iced_x86.Mnemonic.VMOVDQU64, iced_x86.Mnemonic.VMOVDQA32, iced_x86.Mnemonic.VMOVDQA64,
})
_NO_REGISTER_WRITE = frozenset({iced_x86.Mnemonic.CMP, iced_x86.Mnemonic.TEST, iced_x86.Mnemonic.BT,
                                iced_x86.Mnemonic.PUSH, iced_x86.Mnemonic.NOP, iced_x86.Mnemonic.UCOMISS,
                                iced_x86.Mnemonic.UCOMISD, iced_x86.Mnemonic.COMISS, iced_x86.Mnemonic.COMISD,
                                iced_x86.Mnemonic.PTEST})
_NOT_ACCESSES = frozenset({iced_x86.Mnemonic.LEA, iced_x86.Mnemonic.NOP, iced_x86.Mnemonic.PREFETCHT0,
                           iced_x86.Mnemonic.PREFETCHT1, iced_x86.Mnemonic.PREFETCHT2, iced_x86.Mnemonic.PREFETCHNTA,
                           iced_x86.Mnemonic.PREFETCHW, iced_x86.Mnemonic.CLFLUSH})
_FRAME_BASES = frozenset({iced_x86.Register.RSP, iced_x86.Register.RBP, iced_x86.Register.ESP, iced_x86.Register.EBP,
                          iced_x86.Register.RIP, iced_x86.Register.EIP})


class FieldAccess:
    """What one instruction does to a struct field, seen with the register offsets before it."""

    __slots__ = ("stored", "source", "defines")

    def __init__(self, stored: tuple[int, int] | None, source: int | None, defines: int | None) -> None:
        self.stored = stored  # (field offset, bytes) a plain move stores to, off a register that is no frame pointer
        self.source = source  # the full register whose value it stores (None: an immediate)
        self.defines = defines  # the full register a plain move loads (from memory, an immediate or a register)


class RegisterOffsets:
    """Each register's offset from what it held before (see above): one linear pass over a function part."""

    def __init__(self) -> None:
        self.offsets: dict[int, int] = {}

    def field(self, instruction: iced_x86.Instruction) -> tuple[int, int] | None:
        """(field offset, bytes) of the instruction's memory operand when it is [register + displacement]
        off a register that is no stack or frame pointer (nor RIP), without an index; else None."""
        base = instruction.memory_base
        if base == _NONE or base in _FRAME_BASES or instruction.memory_index != _NONE:
            return None
        size = iced_x86.MemorySizeExt.size(instruction.memory_size)
        if size <= 0:
            return None
        full = iced_x86.RegisterExt.full_register(base)
        return self.offsets.get(full, 0) + _signed(instruction.memory_displacement), size

    def access(self, instruction: iced_x86.Instruction) -> FieldAccess | None:
        """The instruction's plain store to a field, or plain load of a register (None: neither)."""
        if instruction.mnemonic not in _MOVES or instruction.op_count != 2:
            return None
        kind0, kind1 = instruction.op0_kind, instruction.op1_kind
        if kind0 == iced_x86.OpKind.MEMORY:
            stored = self.field(instruction)
            source = (iced_x86.RegisterExt.full_register(instruction.op1_register)
                      if kind1 == iced_x86.OpKind.REGISTER else None)
            return FieldAccess(stored, source, None) if stored is not None else None
        if kind0 == iced_x86.OpKind.REGISTER:
            return FieldAccess(None, None, iced_x86.RegisterExt.full_register(instruction.op0_register))
        return None

    def follow(self, instruction: iced_x86.Instruction) -> None:
        """Keep the offsets current after the instruction."""
        if instruction.flow_control in (iced_x86.FlowControl.CALL, iced_x86.FlowControl.INDIRECT_CALL):
            for register in _CALL_CLOBBERS:
                self.offsets.pop(register, None)
            return
        if not instruction.op_count or instruction.op0_kind != iced_x86.OpKind.REGISTER:
            return
        target = iced_x86.RegisterExt.full_register(instruction.op0_register)
        mnemonic, wide = instruction.mnemonic, iced_x86.RegisterExt.size(instruction.op0_register) == 8
        if mnemonic in _NO_REGISTER_WRITE:
            return
        if wide and mnemonic in (iced_x86.Mnemonic.ADD, iced_x86.Mnemonic.SUB) and instruction.op1_kind not in (
                iced_x86.OpKind.REGISTER, iced_x86.OpKind.MEMORY):
            step = _signed(instruction.immediate(1) & 0xFFFF_FFFF_FFFF_FFFF)
            self.offsets[target] = self.offsets.get(target, 0) + (step if mnemonic == iced_x86.Mnemonic.ADD else -step)
        elif wide and mnemonic == iced_x86.Mnemonic.LEA and instruction.memory_index == _NONE and \
                instruction.memory_base not in (_NONE, iced_x86.Register.RIP):
            base = iced_x86.RegisterExt.full_register(instruction.memory_base)
            self.offsets[target] = self.offsets.get(base, 0) + _signed(instruction.memory_displacement)
        elif wide and mnemonic == iced_x86.Mnemonic.MOV and instruction.op1_kind == iced_x86.OpKind.REGISTER:
            self.offsets[target] = self.offsets.get(iced_x86.RegisterExt.full_register(instruction.op1_register), 0)
        else:
            self.offsets.pop(target, None)


def field_loads(image: CodeImage, ranges: list[tuple[int, int]]) -> tuple[tuple[int, int], ...]:
    """The (field offset, bytes) of every struct field the function reads: a memory operand that is no
    plain store's destination, off a register that is no stack or frame pointer, without an index,
    at a non-zero offset ([register] alone is any pointer's target).  Sorted, unique."""
    read: set[tuple[int, int]] = set()
    for address, size in ranges:
        offsets = RegisterOffsets()
        for instruction in iced_x86.Decoder(64, image.read(address, size), ip=address):
            if instruction.mnemonic not in _NOT_ACCESSES and any(
                    instruction.op_kind(operand) == iced_x86.OpKind.MEMORY for operand in range(instruction.op_count)):
                stores = instruction.mnemonic in _MOVES and instruction.op0_kind == iced_x86.OpKind.MEMORY
                field = None if stores else offsets.field(instruction)
                if field is not None and field[0] != 0:
                    read.add(field)
            offsets.follow(instruction)
    return tuple(sorted(read))


def overlaps(fields: tuple[tuple[int, int], ...], stored: frozenset[tuple[int, int]]) -> bool:
    """Whether any field read overlaps any field stored (offset ranges [offset, offset + bytes))."""
    return any(start < offset + size and offset < start + length
               for offset, size in fields for start, length in stored)
