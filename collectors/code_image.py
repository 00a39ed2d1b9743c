"""A binary's code and symbols, read lean: what block alignment needs on the push path.

`ElfImage` reads everything the static analysis needs (every symbol as an object,
relocations, PLT names), a noticeable part of a selection on a large binary; `selector select`
aligns a handful of changed functions of two binaries and would pay that twice.  This reads the section
headers and the symbol table as numpy arrays, decodes only the function names (to find a
function's parts) and names any other symbol, or a PLT stub (its GOT slot's relocation), only when an
instruction refers to it.
"""

from __future__ import annotations

import mmap
import os

from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from perf_selector.collectors.elf_file import read_elf_file
from perf_selector.collectors.elf_image import (
    R_X86_64_GLOB_DAT, R_X86_64_JUMP_SLOT, RELA_DTYPE, STT_FUNC, STT_GNU_IFUNC, STT_OBJECT, SYMBOL_DTYPE, c_string,
)
from perf_selector.collectors.errors import BinaryError
from perf_selector.collectors.symbols import parent_symbol

SECTION_DTYPE = np.dtype([("name", "<u4"), ("type", "<u4"), ("flags", "<u8"), ("address", "<u8"), ("offset", "<u8"),
                          ("size", "<u8"), ("link", "<u4"), ("info", "<u4"), ("align", "<u8"), ("entsize", "<u8")])
SHT_SYMTAB, SHT_NOBITS, SHT_DYNSYM = 2, 8, 11
SHF_WRITE, SHF_EXECINSTR = 0x1, 0x4


@dataclass
class CodeImage:
    path: str
    data: bytes
    position_independent: bool
    sections: np.ndarray  # SECTION_DTYPE, allocated ones with contents, by address
    section_names: list[str]  # aligned with `sections`
    symbols: np.ndarray  # SYMBOL_DTYPE: defined functions and objects with a size, by address
    strings: bytes  # the symbol table's string table
    headers: np.ndarray  # every section header
    header_names: list[str]  # aligned with `headers`
    identity: tuple[int, int, int] = (0, 0, 0)  # the mapped file's (inode, size, modification time), as opened
    _names: dict[int, str] = field(default_factory=dict, repr=False)

    @classmethod
    def load(cls, path: str) -> "CodeImage":
        data, identity = _mapped(path)  # only the pages read are loaded: a few functions, the tables
        if data[4] != 2 or int.from_bytes(data[18:20], "little") != 62:
            raise BinaryError(f"{path}: not an x86-64 ELF file")
        offset, count, names_index = (int.from_bytes(data[0x28:0x30], "little"), int.from_bytes(data[0x3C:0x3E], "little"),
                                      int.from_bytes(data[0x3E:0x40], "little"))
        if offset + count * SECTION_DTYPE.itemsize > len(data) or names_index >= count:
            raise BinaryError(f"{path}: truncated or malformed ELF file (section headers)")
        headers = np.frombuffer(data, SECTION_DTYPE, count=count, offset=offset)
        names = _table(data, headers[names_index])
        table = next((h for kind in (SHT_SYMTAB, SHT_DYNSYM) for h in headers if h["type"] == kind), None)
        if table is None or table["link"] >= count:
            raise BinaryError(f"{path}: no symbol table")
        entries = np.frombuffer(_table(data, table), SYMBOL_DTYPE)
        kinds = entries["info"] & 0xF
        defined = (np.isin(kinds, (STT_FUNC, STT_GNU_IFUNC, STT_OBJECT)) & (entries["shndx"] != 0)
                   & (entries["shndx"] < 0xFF00) & (entries["size"] > 0))
        symbols = entries[defined]
        symbols = symbols[np.argsort(symbols["value"], kind="stable")]
        header_names = [c_string(names, int(h["name"])) for h in headers]
        allocated = np.flatnonzero(((headers["flags"] & 0x2) != 0) & (headers["type"] != SHT_NOBITS) & (headers["size"] > 0))
        allocated = allocated[np.argsort(headers["address"][allocated], kind="stable")]  # by address
        return cls(path, data, int.from_bytes(data[16:18], "little") == 3, headers[allocated],
                   [header_names[i] for i in allocated], symbols, _table(data, headers[table["link"]]), headers, header_names,
                   identity)

    def read(self, address: int, size: int) -> bytes:
        index = int(np.searchsorted(self.sections["address"], address, side="right")) - 1
        if index < 0:
            return b""
        section = self.sections[index]
        start = address - int(section["address"])
        if start >= int(section["size"]):
            return b""
        size = min(size, int(section["size"]) - start)
        return self.data[int(section["offset"]) + start: int(section["offset"]) + start + size]

    def span(self) -> tuple[int, int]:
        """Where an absolute address can point: nowhere in a position-independent image."""
        if self.position_independent or not len(self.sections):
            return 0, 0
        return int(self.sections["address"][0]), int((self.sections["address"] + self.sections["size"]).max())

    @cached_property
    def ifunc_resolvers(self) -> frozenset[int]:
        """Entry addresses of the IFUNC resolvers: an ``STT_GNU_IFUNC`` symbol's value is its resolver's."""
        return frozenset(self.symbols["value"][(self.symbols["info"] & 0xF) == STT_GNU_IFUNC].tolist())

    def function_names(self) -> list[str]:
        """The raw names of the defined functions (with a size)."""
        return [self._name(index) for index in np.flatnonzero(self._functions).tolist()]

    @cached_property
    def _functions(self) -> np.ndarray:
        kinds = self.symbols["info"] & 0xF
        return (kinds == STT_FUNC) | (kinds == STT_GNU_IFUNC)

    def _functions_named(self, raw: str) -> list[int]:
        """Indices into `symbols` of the functions of that name: found in the string table, not by
        decoding every name (a linker may share a string's tail: then the names are read)."""
        wanted = raw.encode()
        offsets, start = [], self.strings.find(b"\0" + wanted + b"\0")
        while start >= 0:
            offsets.append(start + 1)
            start = self.strings.find(b"\0" + wanted + b"\0", start + 1)
        names = self.symbols["name"]
        hits = [index for offset in offsets for index in np.flatnonzero(self._functions & (names == offset)).tolist()]
        if hits:
            return hits
        return [i for i in np.flatnonzero(self._functions).tolist() if self._name(i) == raw]

    def function_parts(self, raw_names: list[str], main_address: int) -> list[tuple[int, int]]:
        """(address, size) of each named part; a name several functions hold is taken nearest the main part."""
        ranges = set()
        values = self.symbols["value"]
        at_main = range(int(np.searchsorted(values, main_address)), int(np.searchsorted(values, main_address, side="right")))
        for raw in raw_names:
            # the main part is found by its address (a binary search), the others by their name
            candidates = [i for i in at_main if self._functions[i] and self._name(i) == raw] or self._functions_named(raw)
            if candidates:
                chosen = min(candidates, key=lambda i: abs(int(self.symbols["value"][i]) - main_address))
                ranges.add((int(self.symbols["value"][chosen]), int(self.symbols["size"][chosen])))
        return sorted(ranges, key=lambda r: (r[0] != main_address, r[0]))

    def function_at(self, entry: int) -> tuple[int, int] | None:
        """(address, size) of the defined function that starts at `entry`, if one does (the largest
        of several symbols there)."""
        values = self.symbols["value"]
        at = range(int(np.searchsorted(values, entry)), int(np.searchsorted(values, entry, side="right")))
        sizes = [int(self.symbols["size"][i]) for i in at if self._functions[i]]
        return (entry, max(sizes)) if sizes else None

    def designate(self, address: int) -> tuple[str, int] | str | None:
        """What an address refers to: a library function through a PLT stub, or (symbol, offset in it)."""
        index = int(np.searchsorted(self.symbols["value"], address, side="right")) - 1
        if index >= 0 and address < int(self.symbols["value"][index]) + int(self.symbols["size"][index]):
            return parent_symbol(self._name(index)), address - int(self.symbols["value"][index])
        return self._plt_names.get(address)

    def literal(self, address: int, size: int) -> bytes | None:
        """The `size` bytes an instruction loads from `address` when they are an anonymous constant
        (a literal pool entry: read-only, not code, held by no symbol), else None."""
        if size <= 0 or self.designate(address) is not None:
            return None
        index = int(np.searchsorted(self.sections["address"], address, side="right")) - 1
        if index < 0 or int(self.sections["flags"][index]) & (SHF_WRITE | SHF_EXECINSTR):
            return None
        loaded = self.read(address, size)
        return loaded if len(loaded) == size else None

    @cached_property
    def _plt_names(self) -> dict[int, str]:
        """PLT stub address -> ``name@plt``: the GOT slot each stub jumps through, named by its relocation."""
        from perf_selector.collectors.decoder import plt_stub_slots
        slots = {}
        for header, name in zip(self.headers, self.header_names):
            if name in (".rela.plt", ".rela.dyn") and int(header["link"]) < len(self.headers):
                entries = np.frombuffer(_table(self.data, header), RELA_DTYPE)
                kinds = entries["info"] & 0xFFFFFFFF
                wanted = entries[(kinds == R_X86_64_GLOB_DAT) | (kinds == R_X86_64_JUMP_SLOT)]
                symbols = self.headers[int(header["link"])]
                dynamic = np.frombuffer(_table(self.data, symbols), SYMBOL_DTYPE)
                strings = _table(self.data, self.headers[int(symbols["link"])])
                for slot, info in zip(wanted["offset"].tolist(), wanted["info"].tolist()):
                    if 0 < info >> 32 < len(dynamic):
                        slots[slot] = (dynamic, strings, info >> 32)
        names = {}
        for header, name in zip(self.headers, self.header_names):
            if name.startswith(".plt") and header["type"] != SHT_NOBITS:
                for stub, slot in plt_stub_slots(_table(self.data, header), int(header["address"])):
                    if slot in slots:
                        dynamic, strings, index = slots[slot]
                        names[stub] = c_string(strings, int(dynamic["name"][index])) + "@plt"
        return names

    def _name(self, index: int) -> str:
        if index not in self._names:
            self._names[index] = c_string(self.strings, int(self.symbols["name"][index]))
        return self._names[index]


class ImageKey:
    """A binary (and parts of it), equal to another by the binary's identity on disk when it was read
    (CodeImage.identity: not the path's now, which a rebuild may have replaced since) and the parts:
    what a cache of answers about its code is keyed by.  The image rides along, unhashed."""

    def __init__(self, image: CodeImage, *parts: object) -> None:
        self.image = image
        self.key = (image.path, image.identity, *parts)

    def __hash__(self) -> int:
        return hash(self.key)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ImageKey) and self.key == other.key


def _mapped(path: str) -> tuple[mmap.mmap, tuple[int, int, int]]:
    """The file mapped, and its identity (inode, size, modification time) read from the very file
    mapped: a build that writes the path again makes another file, or another time."""
    read_elf_file(path, limit=64)  # the checks every analysis path makes, on the header alone
    with open(path, "rb") as handle:
        status = os.fstat(handle.fileno())
        return mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ), (status.st_ino, status.st_size, status.st_mtime_ns)


def _table(data: bytes, header) -> bytes:
    start, size = int(header["offset"]), int(header["size"])
    if start + size > len(data):
        raise BinaryError("truncated or malformed ELF file (a section past the end of the file)")
    return data[start: start + size]

