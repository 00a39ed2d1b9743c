"""An x86-64 ELF file loaded for analysis: sections, symbols, relocations, PLT/GOT names.

pyelftools reads the headers and section table.  Symbol and relocation tables are
decoded with numpy record views of the same bytes: pyelftools builds one Python
object per symbol, which on a large library costs more than the whole time budget of an
analysis (``benchmarks/static_speed.py``; docs/performance.md).

Every malformed input ends in :class:`BinaryError` with one line naming the file.
"""

from __future__ import annotations

import bisect
import hashlib
import io
import os
import struct
from dataclasses import dataclass, field

import numpy as np

from perf_selector.collectors.elf_file import read_elf_file
from perf_selector.collectors.errors import BinaryError

SHF_ALLOC = 0x2
SHF_WRITE = 0x1
SHF_EXECINSTR = 0x4
SHT_NOBITS = 8
STT_OBJECT, STT_FUNC, STT_FILE, STT_GNU_IFUNC = 1, 2, 4, 10
STB_LOCAL = 0
R_X86_64_64, R_X86_64_GLOB_DAT, R_X86_64_JUMP_SLOT, R_X86_64_RELATIVE = 1, 6, 7, 8
R_X86_64_IRELATIVE = 37

_PARSE_ERRORS = (OverflowError, ValueError, EOFError, struct.error, UnicodeDecodeError, IndexError, KeyError, MemoryError)

SYMBOL_DTYPE = np.dtype(
    [("name", "<u4"), ("info", "u1"), ("other", "u1"), ("shndx", "<u2"), ("value", "<u8"), ("size", "<u8")]
)
RELA_DTYPE = np.dtype([("offset", "<u8"), ("info", "<u8"), ("addend", "<i8")])


class Extent:
    """A range of addresses, `size` bytes from `address` (mixed into the dataclasses that have both)."""

    address: int
    size: int

    @property
    def end(self) -> int:
        return self.address + self.size


@dataclass(frozen=True)
class Section(Extent):
    name: str
    address: int
    size: int
    offset: int
    flags: int
    nobits: bool

    @property
    def executable(self) -> bool:
        return bool(self.flags & SHF_EXECINSTR)

    @property
    def writable(self) -> bool:
        return bool(self.flags & SHF_WRITE)


@dataclass(frozen=True)
class Symbol:
    raw: str
    address: int
    size: int
    kind: int  # STT_FUNC or STT_OBJECT
    local: bool
    file: str  # the STT_FILE that precedes a local symbol, "" for globals
    section: str


@dataclass
class ElfImage:
    """The loaded file; addresses are virtual addresses of allocated sections."""

    path: str
    data: bytes
    position_independent: bool
    sections: list[Section]
    symbols: list[Symbol]
    symbol_source: str  # "symtab" | "dynsym"
    relocations: dict[int, tuple[int, str, int]] = field(default_factory=dict)  # slot -> (type, symbol, addend)
    plt_names: dict[int, str] = field(default_factory=dict)  # PLT stub address -> "name@plt"
    got_names: dict[int, str] = field(default_factory=dict)  # GOT slot address -> "name@got"
    _section_starts: list[int] = field(default_factory=list, repr=False)

    # ------------------------------------------------------------------ loading
    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> "ElfImage":
        path = str(path)
        data = read_elf_file(path)
        # pyelftools is imported here, not with the module: the compiled analysis on the
        # push path reads the file with read_elf_file alone
        from elftools.common.exceptions import ELFError, ELFParseError

        try:
            return cls._parse(path, data)
        except (ELFError, ELFParseError, *_PARSE_ERRORS) as error:
            # pyelftools reads wherever the headers point; nonsense there surfaces as these
            raise BinaryError(f"{path}: truncated or malformed ELF file ({type(error).__name__}: {error})") from None

    @classmethod
    def _parse(cls, path: str, data: bytes) -> "ElfImage":
        from elftools.elf.elffile import ELFFile

        elf = ELFFile(io.BytesIO(data))
        _check_architecture(path, elf)
        sections = _read_sections(path, elf, len(data))
        image = cls(
            path=path,
            data=data,
            position_independent=elf.header["e_type"] == "ET_DYN",
            sections=sorted((s for s in sections if s.flags & SHF_ALLOC and s.size), key=lambda s: s.address),
            symbols=[],
            symbol_source="symtab",
        )
        image._section_starts = [s.address for s in image.sections]
        by_name = {s.name: s for s in sections}
        image._load_symbols(by_name, elf)
        image._load_relocations(by_name, elf)
        return image

    def _load_symbols(self, by_name: dict[str, Section], elf) -> None:
        section_names = [s.name for s in elf.iter_sections()]
        if ".symtab" in by_name:
            table, strings = by_name[".symtab"], by_name[".strtab"] if ".strtab" in by_name else None
            self.symbol_source = "symtab"
        elif ".dynsym" in by_name and ".dynstr" in by_name:
            table, strings = by_name[".dynsym"], by_name[".dynstr"]
            self.symbol_source = "dynsym"
        else:
            return
        if strings is None:
            raise BinaryError(f"{self.path}: .symtab has no .strtab string table")
        self.symbols = list(self._parse_symbols(table, strings, section_names))

    def _parse_symbols(self, table: Section, strings: Section, section_names: list[str]):
        entries = _record_view(self.path, self.data, table, SYMBOL_DTYPE)
        string_bytes = self.data[strings.offset : strings.offset + strings.size]
        kinds = entries["info"] & 0xF
        wanted = entries[(kinds == STT_FUNC) | (kinds == STT_OBJECT) | (kinds == STT_FILE) | (kinds == STT_GNU_IFUNC)]
        current_file = ""
        # .tolist() once: indexing numpy records one by one costs ten times more
        for name_offset, info, _, shndx, address, size in wanted.tolist():
            kind = info & 0xF
            name = c_string(string_bytes, name_offset)
            if kind == STT_FILE:
                current_file = name
                continue
            if shndx == 0 or shndx >= 0xFF00 or not name:
                continue  # undefined, absolute or common: not code or data of this file
            local = (info >> 4) == STB_LOCAL
            yield Symbol(
                raw=name,
                address=address,
                size=size,
                kind=STT_FUNC if kind in (STT_FUNC, STT_GNU_IFUNC) else STT_OBJECT,
                local=local,
                file=current_file if local else "",
                section=section_names[shndx] if shndx < len(section_names) else "",
            )

    def _load_relocations(self, by_name: dict[str, Section], elf) -> None:
        dynsym = by_name.get(".dynsym")
        dynstr = by_name.get(".dynstr")
        dynamic_names: list[str] = []
        if dynsym is not None and dynstr is not None:
            strings = self.data[dynstr.offset : dynstr.offset + dynstr.size]
            dynamic_names = [c_string(strings, n) for n in _record_view(self.path, self.data, dynsym, SYMBOL_DTYPE)["name"].tolist()]
        for section in elf.iter_sections():
            if section["sh_type"] != "SHT_RELA" or not section.name.startswith(".rela"):
                continue
            if section.name not in (".rela.dyn", ".rela.plt", ".rela.got"):
                continue  # .rela.text etc. of --emit-relocs builds are not needed
            table = by_name[section.name]
            for slot, info, addend in _record_view(self.path, self.data, table, RELA_DTYPE).tolist():
                kind, sym = info & 0xFFFFFFFF, info >> 32
                name = dynamic_names[sym] if 0 < sym < len(dynamic_names) else ""
                self.relocations[slot] = (kind, name, addend)
                if name and kind in (R_X86_64_GLOB_DAT, R_X86_64_JUMP_SLOT, R_X86_64_64):
                    self.got_names[slot] = f"{name}@got"
        self._load_plt_names()

    def _load_plt_names(self) -> None:
        """Name each PLT stub by the GOT slot its indirect jump reads."""
        from perf_selector.collectors.decoder import plt_stub_slots  # the decoder needs no image; avoid a cycle

        for section in self.sections:
            if not section.name.startswith(".plt"):
                continue
            code = self.data[section.offset : section.offset + section.size]
            for stub, slot in plt_stub_slots(code, section.address):
                name = self.got_names.get(slot)
                if name:
                    self.plt_names.setdefault(stub, name.replace("@got", "@plt"))

    # ------------------------------------------------------------------ queries
    def section_at(self, address: int) -> Section | None:
        index = bisect.bisect_right(self._section_starts, address) - 1
        if index >= 0 and address < self.sections[index].end:
            return self.sections[index]
        return None

    def read(self, address: int, size: int) -> bytes:
        """Bytes at a virtual address (zeros for .bss); short if the section ends first."""
        section = self.section_at(address)
        if section is None:
            return b""
        size = min(size, section.end - address)
        if section.nobits:
            return bytes(size)
        start = section.offset + (address - section.address)
        return self.data[start : start + size]

    def content_digest(self) -> str:
        """Digest of what runs: allocated sections without notes (build ids).

        Two builds of unchanged sources in different directories differ in their debug
        information and build id, not here, so their analysis can be shared.
        """
        digest = hashlib.blake2b(digest_size=16)
        for section in self.sections:
            if section.name.startswith(".note"):
                continue
            digest.update(f"{section.name}:{section.address}:{section.size}\0".encode())
            if not section.nobits:
                digest.update(self.data[section.offset : section.offset + section.size])
        return digest.hexdigest()

    def code_sections(self) -> list[Section]:
        return [s for s in self.sections if s.executable and not s.nobits]


def _check_architecture(path: str, elf) -> None:
    machine = elf.header["e_machine"]
    if elf.elfclass != 64 or machine != "EM_X86_64":
        described = str(machine).removeprefix("EM_")
        raise BinaryError(
            f"{path}: an ELF{elf.elfclass} file for {described}; only x86-64 binaries are supported"
        )
    if elf.header["e_type"] not in ("ET_EXEC", "ET_DYN"):
        raise BinaryError(f"{path}: an ELF of type {elf.header['e_type']}; give a linked executable or shared library")


def _read_sections(path: str, elf, file_size: int) -> list[Section]:
    sections = []
    for section in elf.iter_sections():
        header = section.header
        nobits = header["sh_type"] == "SHT_NOBITS"
        if not nobits and header["sh_offset"] + header["sh_size"] > file_size and header["sh_type"] != "SHT_NULL":
            raise BinaryError(
                f"{path}: truncated or malformed ELF file (section {section.name or '?'} ends past the end of the file)"
            )
        sections.append(
            Section(
                name=section.name,
                address=header["sh_addr"],
                size=header["sh_size"],
                offset=header["sh_offset"],
                flags=header["sh_flags"],
                nobits=nobits,
            )
        )
    return sections


def _record_view(path: str, data: bytes, section: Section, dtype: np.dtype) -> np.ndarray:
    count = section.size // dtype.itemsize
    if section.offset + count * dtype.itemsize > len(data):
        raise BinaryError(f"{path}: truncated or malformed ELF file ({section.name} past the end of the file)")
    return np.frombuffer(data, dtype=dtype, count=count, offset=section.offset)


def c_string(table: bytes, offset: int) -> str:
    if offset >= len(table):
        return ""
    end = table.find(b"\0", offset)
    return table[offset : end if end >= 0 else len(table)].decode("utf-8", "replace")


def symbol_table_digest(path: str | os.PathLike[str]) -> str:
    """Digest of the names a profile gives the code: the symbol table and its strings
    (``.symtab``, or ``.dynsym`` when stripped).  Not part of the content digest, which
    covers what runs; a profile also depends on what the functions are called."""
    from elftools.elf.elffile import ELFFile

    data = read_elf_file(str(path))
    digest = hashlib.blake2b(digest_size=16)
    try:
        elf = ELFFile(io.BytesIO(data))
        for name in (".symtab", ".strtab", ".dynsym", ".dynstr"):
            section = elf.get_section_by_name(name)
            if section is not None and section["sh_type"] != "SHT_NOBITS":
                digest.update(f"{name}:{section['sh_size']}\0".encode())
                digest.update(data[section["sh_offset"] : section["sh_offset"] + section["sh_size"]])
    except Exception as error:  # pyelftools reads wherever the headers point
        raise BinaryError(f"{path}: truncated or malformed ELF file ({type(error).__name__}: {error})") from None
    return digest.hexdigest()
