"""The x86-64 instruction decoder, behind one small interface.

Analysis needs, per function, only the instruction count and the *address fields*:
the bytes of each instruction that encode an address (a branch displacement, a
RIP-relative displacement, and in a fixed-address executable an absolute immediate or
displacement).  Everything else is hashed as raw bytes, so the decoder never builds
per-instruction Python objects for the 90% of instructions that carry no address.

Two implementations are kept so the choice stays measurable
(``benchmarks/decoder_choice.py``): iced-x86 (the default, the faster one in Python on
libpython) and capstone (the design card's name).
"""

from __future__ import annotations

from typing import Iterator, NamedTuple, Protocol

import iced_x86

# What kind of address an address field holds.
BRANCH = 0  # relative call / jump target
MEMORY = 1  # RIP-relative memory operand (an access of `size` bytes, 0 for lea)
IMMEDIATE = 2  # absolute immediate that falls inside the image (fixed-address executables only)
ABSOLUTE_MEMORY = 3  # absolute displacement without base register (fixed-address only)
INDEXED_TABLE = 4  # absolute displacement with an index register: a jump or data table


class AddressField(NamedTuple):
    start: int  # offset of the field within the scanned code
    end: int
    target: int  # the absolute address it encodes
    kind: int
    size: int  # bytes accessed at the target, 0 when unknown or an address is only taken


class Decoder(Protocol):
    name: str

    def scan(self, code: bytes, address: int, absolute: tuple[int, int] | None = None) -> tuple[int, list[AddressField]]:
        """Count instructions and list address fields.

        Branches whose target lies inside the scanned code are not listed: their
        relative displacement does not move when the code does.

        ``absolute`` is the (low, high) address range of a fixed-address image: only
        then can an immediate or an absolute displacement be an address.
        """
        ...


class IcedDecoder:
    name = "iced-x86"

    def scan(self, code: bytes, address: int, absolute: tuple[int, int] | None = None) -> tuple[int, list[AddressField]]:
        decoder = iced_x86.Decoder(64, code, ip=address)
        fields: list[AddressField] = []
        count = 0
        end = address + len(code)
        for instruction in decoder:
            count += 1
            target = instruction.near_branch_target
            if target:
                if address <= target < end:
                    continue
                offsets = decoder.get_constant_offsets(instruction)
                start = instruction.ip - address + offsets.immediate_offset
                fields.append(AddressField(start, start + offsets.immediate_size, target, BRANCH, 0))
            elif instruction.is_ip_rel_memory_operand:
                offsets = decoder.get_constant_offsets(instruction)
                start = instruction.ip - address + offsets.displacement_offset
                size = 0 if instruction.mnemonic == iced_x86.Mnemonic.LEA else iced_x86.MemorySizeExt.size(instruction.memory_size)
                fields.append(
                    AddressField(start, start + offsets.displacement_size, instruction.ip_rel_memory_address, MEMORY, size)
                )
            elif absolute is not None:
                fields.extend(_absolute_fields(decoder, instruction, address, absolute))
        return count, fields


_IMMEDIATE_KINDS = {iced_x86.OpKind.IMMEDIATE32, iced_x86.OpKind.IMMEDIATE32TO64, iced_x86.OpKind.IMMEDIATE64}


def _absolute_fields(decoder, instruction, address: int, absolute: tuple[int, int]) -> Iterator[AddressField]:
    low, high = absolute
    offsets = None
    for operand in range(instruction.op_count):
        kind = instruction.op_kind(operand)
        if kind in _IMMEDIATE_KINDS:
            value = instruction.immediate(operand)
            if low <= value < high:
                offsets = offsets or decoder.get_constant_offsets(instruction)
                start = instruction.ip - address + offsets.immediate_offset
                yield AddressField(start, start + offsets.immediate_size, value, IMMEDIATE, 0)
        elif kind == iced_x86.OpKind.MEMORY and instruction.memory_base == iced_x86.Register.NONE:
            value = instruction.memory_displacement
            if instruction.memory_displ_size >= 4 and low <= value < high:
                offsets = offsets or decoder.get_constant_offsets(instruction)
                start = instruction.ip - address + offsets.displacement_offset
                indexed = instruction.memory_index != iced_x86.Register.NONE
                size = iced_x86.MemorySizeExt.size(instruction.memory_size)
                yield AddressField(
                    start, start + offsets.displacement_size, value, INDEXED_TABLE if indexed else ABSOLUTE_MEMORY, size
                )


class CapstoneDecoder:
    """capstone's light mode, with detail only for instructions that may hold an address."""

    name = "capstone"

    def __init__(self) -> None:
        import capstone

        self._capstone = capstone
        self._light = capstone.Cs(capstone.CS_ARCH_X86, capstone.CS_MODE_64)
        self._detail = capstone.Cs(capstone.CS_ARCH_X86, capstone.CS_MODE_64)
        self._detail.detail = True

    def scan(self, code: bytes, address: int, absolute: tuple[int, int] | None = None) -> tuple[int, list[AddressField]]:
        from capstone import x86

        fields: list[AddressField] = []
        count = 0
        for ip, length, mnemonic, operands in self._light.disasm_lite(code, address):
            count += 1
            maybe_address = "rip" in operands or mnemonic[0] == "j" or mnemonic.startswith("call") or absolute is not None
            if not maybe_address:
                continue
            offset = ip - address
            (instruction,) = self._detail.disasm(code[offset : offset + length], ip, 1)
            for operand in instruction.operands:
                if operand.type == x86.X86_OP_IMM and instruction.group(self._capstone.CS_GRP_BRANCH_RELATIVE):
                    if address <= operand.imm < address + len(code):
                        continue
                    start = offset + instruction.imm_offset
                    fields.append(AddressField(start, start + instruction.imm_size, operand.imm, BRANCH, 0))
                elif operand.type == x86.X86_OP_MEM and operand.mem.base == x86.X86_REG_RIP:
                    start = offset + instruction.disp_offset
                    size = 0 if mnemonic == "lea" else operand.size
                    fields.append(AddressField(start, start + instruction.disp_size, ip + length + operand.mem.disp, MEMORY, size))
                elif absolute is not None:
                    low, high = absolute
                    if operand.type == x86.X86_OP_IMM and low <= operand.imm < high:
                        start = offset + instruction.imm_offset
                        fields.append(AddressField(start, start + instruction.imm_size, operand.imm, IMMEDIATE, 0))
                    elif operand.type == x86.X86_OP_MEM and operand.mem.base == 0 and low <= operand.mem.disp < high:
                        start = offset + instruction.disp_offset
                        kind = INDEXED_TABLE if operand.mem.index else ABSOLUTE_MEMORY
                        fields.append(AddressField(start, start + instruction.disp_size, operand.mem.disp, kind, operand.size))
        return count, fields


DECODERS = {"iced-x86": IcedDecoder, "capstone": CapstoneDecoder}


def default_decoder() -> Decoder:
    return IcedDecoder()


def plt_stub_slots(code: bytes, address: int) -> Iterator[tuple[int, int]]:
    """(address of the stub's indirect jump, GOT slot it reads) for each PLT stub."""
    for instruction in iced_x86.Decoder(64, code, ip=address):
        if instruction.is_jmp_near_indirect and instruction.is_ip_rel_memory_operand:
            yield instruction.ip, instruction.ip_rel_memory_address
