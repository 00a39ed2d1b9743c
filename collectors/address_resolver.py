"""Turning an address found in code or data into a token that survives relinking.

When a commit adds a function, the linker moves everything after it: every call,
every RIP-relative load and every jump-table entry that crosses the move changes its
bytes although no code changed.  A fingerprint therefore hashes, in place of each
address field, *what the address designates*:

* a function or data object: its name, with clone numbering dropped, plus an offset;
* a PLT stub or GOT slot: ``name@plt`` / ``name@got``;
* an unnamed string literal: its contents, a source file's path in it cut to the file's
  name (``__FILE__``, an assert's message: the build directory is not the code's);
  an unnamed constant read with a known size: its bytes; a jump table: the function
  offsets it lists;
* anything else inside a section: only the section's name.

The offset into an unnamed area is never used: string-merged ``.rodata`` shifts
whenever any literal changes.
"""

from __future__ import annotations

import bisect
import struct
from dataclasses import dataclass, field

from perf_selector.collectors.decoder import BRANCH, INDEXED_TABLE, MEMORY, AddressField
from perf_selector.collectors.elf_image import R_X86_64_RELATIVE, ElfImage, Extent

MAX_STRING = 512
MAX_TABLE_ENTRIES = 4096
TABLE_CHUNK = 32
_PRINTABLE = frozenset(range(0x20, 0x7F)) | {0x09, 0x0A, 0x0D}
# A source file's path inside a string literal is a run of characters none of these ends,
# holding a "/", whose last part has one of these extensions.
_PATH_DELIMITERS = frozenset(" \t\n\r\"'(),;:=<>[]{}")
SOURCE_EXTENSIONS = frozenset({"c", "cc", "cp", "cpp", "cxx", "c++", "C", "h", "hh", "hpp", "hxx", "h++", "H", "inl", "inc",
                               "ipp", "tcc", "tpp", "ixx", "cppm", "m", "mm", "s", "S", "asm", "cu", "cuh"})


@dataclass(frozen=True)
class CodeRange(Extent):
    """One symbol's code: a function or one of its split parts / clones."""

    raw: str
    address: int
    size: int
    token: str  # how references to it are written (clone numbers dropped)
    parent: str  # the function it belongs to (the key of the functions table)


@dataclass(frozen=True)
class DataRange(Extent):
    name: str  # the key of the objects table
    address: int
    size: int
    token: str


@dataclass
class References:
    """What a function's code refers to, collected while fingerprinting."""

    callees: set[str] = field(default_factory=set)
    data: set[str] = field(default_factory=set)


class AddressResolver:
    def __init__(self, image: ElfImage, code: list[CodeRange], data: list[DataRange]) -> None:
        self.image = image
        self._code = sorted(code, key=lambda r: r.address)
        self._code_starts = [r.address for r in self._code]
        self._data = sorted(data, key=lambda r: r.address)
        self._data_starts = [r.address for r in self._data]
        self._data_by_token = {r.token: r.name for r in self._data}
        self._plt = sorted(image.plt_names.items())
        self._plt_starts = [address for address, _ in self._plt]
        self._cache: dict[tuple[int, int, int], tuple[str, str | None, str | None, bool]] = {}
        if image.position_independent:
            self.absolute_range = None
        else:
            # In a fixed-address executable, absolute constants can be addresses.
            low = min((s.address for s in image.sections), default=0)
            high = max((s.end for s in image.sections), default=0)
            self.absolute_range = (low, high)

    # --------------------------------------------------------------- lookups
    def code_at(self, address: int) -> CodeRange | None:
        return _containing(self._code_starts, self._code, address)

    def code_range_of(self, address: int) -> CodeRange | None:
        """The code range that starts at `address`."""
        index = bisect.bisect_left(self._code_starts, address)
        if index < len(self._code) and self._code_starts[index] == address:
            return self._code[index]
        return None

    def data_at(self, address: int) -> DataRange | None:
        return _containing(self._data_starts, self._data, address)

    def plt_at(self, address: int) -> str | None:
        """The PLT stub whose indirect jump is at or just after `address`."""
        index = bisect.bisect_left(self._plt_starts, address)
        if index < len(self._plt) and self._plt[index][0] - address < 16:
            return self._plt[index][1]
        return None

    # ---------------------------------------------------------------- tokens
    def token(self, field: AddressField, current: CodeRange, references: References) -> str | None:
        """The token for an address field of `current`'s code; None keeps the raw bytes."""
        target = field.target
        if current.address <= target < current.end:
            # Relative references inside the function move with it; absolute ones do not.
            return None if field.kind in (BRANCH, MEMORY) else f"self+{target - current.address}"
        key = (target, field.kind, field.size)
        resolved = self._cache.get(key)
        if resolved is None:
            resolved = self._cache[key] = self._resolve(target, field.kind, field.size)
        token, callee, data, may_be_table = resolved
        if may_be_table:
            table = self._jump_table(target, field.kind, current)
            if table:
                return table
        if callee is not None and callee != current.parent:
            references.callees.add(callee)
        if data is not None:
            references.data.add(data)
        return token

    def pointer_token(self, target: int) -> str:
        """The token for a pointer stored in data (a function table entry, a string pointer)."""
        key = (target, MEMORY, 0)
        resolved = self._cache.get(key)
        if resolved is None:
            resolved = self._cache[key] = self._resolve(target, MEMORY, 0)
        return resolved[0]

    def _resolve(self, target: int, kind: int, size: int, through_slot: bool = True) -> tuple[str, str | None, str | None, bool]:
        """(token, callee, data object, may be a jump table) for an address outside the current function.

        A GOT slot filled at load time is followed once (`through_slot`): a malformed
        file whose slot points at itself must not send the resolver round in circles."""
        code = self.code_at(target)
        if code is not None:
            offset = target - code.address
            return (f"fn:{code.token}+{offset}" if offset else f"fn:{code.token}"), code.parent, None, False
        data = self.data_at(target)
        if data is not None:
            offset = target - data.address
            return (f"obj:{data.token}+{offset}" if offset else f"obj:{data.token}"), None, data.name, False
        stub = self.plt_at(target) if kind == BRANCH else None
        if stub is not None:
            return stub, stub, None, False
        slot = self.image.got_names.get(target)
        if slot is not None:
            name = slot.removesuffix("@got")
            if name in self._data_by_token:
                return slot, None, self._data_by_token[name], False
            return slot, f"{name}@plt", None, False
        relocation = self.image.relocations.get(target)
        if relocation is not None and relocation[0] == R_X86_64_RELATIVE and through_slot:
            # A GOT slot filled at load time with a local address: name what it holds.
            token, callee, data_name, _ = self._resolve(relocation[2], MEMORY, 0, through_slot=False)
            return "got:" + token, callee, data_name, False
        section = self.image.section_at(target)
        if section is None:
            return "outside", None, None, False
        if section.writable:
            return f"sec:{section.name}", None, None, False
        may_be_table = kind in (MEMORY, INDEXED_TABLE) and size in (0, 4, 8)
        text = self._c_string(target)
        if text is not None and (text or not size):  # read with a size, a first byte 0 is a value (2.5), not ""
            return "str:" + without_source_directories(text), None, None, may_be_table
        if size:
            return f"const:{section.name}:{self.image.read(target, size).hex()}", None, None, may_be_table
        return f"sec:{section.name}", None, None, may_be_table

    def _jump_table(self, table: int, kind: int, current: CodeRange) -> str | None:
        """Offsets into `current`'s function listed by a jump table at `table`, if it is one.

        A table has no recorded length: entries are read while they land in the function.
        """
        if kind == INDEXED_TABLE:
            fmt, width, base = "<q", 8, 0  # non-PIE: `jmp [table + index*8]` of absolute addresses
        else:
            fmt, width, base = "<i", 4, table  # PIE: `lea table(%rip)`, int32 entries relative to the table
        entries = []
        for chunk_start in range(0, MAX_TABLE_ENTRIES * width, TABLE_CHUNK * width):
            raw = self.image.read(table + chunk_start, TABLE_CHUNK * width)
            for (value,) in struct.iter_unpack(fmt, raw[: len(raw) - len(raw) % width]):
                target = base + value
                if current.address <= target < current.end:
                    entries.append(f"{current.token}+{target - current.address}")
                    continue
                code = self.code_at(target)
                if code is None or code.parent != current.parent:
                    return "jt:" + ",".join(entries) if entries else None
                entries.append(f"{code.token}+{target - code.address}")
            if len(raw) < TABLE_CHUNK * width:
                break
        return "jt:" + ",".join(entries) if entries else None

    def _c_string(self, address: int) -> str | None:
        raw = self.image.read(address, MAX_STRING)
        end = raw.find(b"\0")
        if end < 0 or not _PRINTABLE.issuperset(raw[:end]):
            return None
        return raw[:end].decode("ascii")


def without_source_directories(text: str) -> str:
    """`text` with each source file's path in it cut to the file's name: the same source built
    in another directory, or named by an absolute path instead of a relative one, has other
    ``__FILE__`` strings (and assert messages), while its code is the same.  A path is a run
    of characters between _PATH_DELIMITERS holding a "/", its last part a name with a
    SOURCE_EXTENSIONS extension ("/home/me/src/x.c" and "../src/x.c" are "x.c").  The native
    core (native/src/resolver.rs) cuts the same."""
    if "/" not in text:
        return text
    parts, start = [], 0
    for index in range(len(text) + 1):
        if index < len(text) and text[index] not in _PATH_DELIMITERS:
            continue
        run = text[start:index]
        name = run.rsplit("/", 1)[-1]
        stem, dot, extension = name.rpartition(".")
        parts.append(name if "/" in run and dot and stem and extension in SOURCE_EXTENSIONS else run)
        parts.append(text[index:index + 1])
        start = index + 1
    return "".join(parts)


def _containing(starts: list[int], ranges: list, address: int):
    """The range (sorted by start, `starts` their addresses) that contains `address`, if any."""
    index = bisect.bisect_right(starts, address) - 1
    if index >= 0 and address < ranges[index].end:
        return ranges[index]
    return None
