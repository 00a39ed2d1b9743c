"""A binary's build configuration: what built it, as the binary itself records it.

A build configuration changed when the commands or flags that build the binary changed
(what the build actually ran), not when a file named like a build file did.  The
compiler writes what it ran into the debug information of every compile unit it made:
the ``DW_AT_producer`` string of the unit's top DIE (gcc records its version and the
code-generation flags by default, ``-grecord-gcc-switches``; clang its version, and its
flags with ``-grecord-command-line``).  The configuration of a binary is the set of its
units' producers, normalised (the checkout's paths and the debug-only ``-g...`` options
dropped, sorted, unique), with what the linker decided (static or dynamic, PIE or not,
the shared libraries it needs), digested as ``flags:<digest>``.  It is there wherever
the binary is: after collect's build, in `select` for a built commit or ``--binary``,
and for the stored binaries of a store collected before it was recorded.

Not seen there: ``-D``, ``-I`` and warning options (gcc leaves them out of the producer)
and other link options.  What they change in the code the function fingerprints see.

A binary built without debug information records nothing: its configuration falls back
to the digest of the files named like build files (``[build] config_files``) outside the
``[build] unaffected`` paths, as ``files:<digest>``.  Digests of two kinds say nothing
about each other, nor does a store's older digest without a kind (all build files of
the tree, whichever build read them): :func:`configs_differ` calls them unchanged.

The DWARF is read here rather than with pyelftools, which parses each unit's whole
abbreviation table with its construct library to reach the top DIE.  This reader maps the
file, reads each unit's header and top DIE only, and scans its table no further than that
DIE's entry; the results are the same (tests/test_build_config.py checks them against
pyelftools).  Side by side (benchmarks/build_config_speed.py, 2026-11-25, this 2-core VM):
glibc's debug file, 2,063 units, 0.155 s against pyelftools' 6.5 s (42x); a 201-unit
binary, 6 ms against 120 ms (18x).

On the five corpus stores the old rule (any file named like a build file) forced 1,033
of 5,328 labelled pairs; this one 24, all of lz4, whose binaries lost -g with its
newer Makefile (PR 1328 renamed MOREFLAGS) so that its build files stand in.
"""

from __future__ import annotations

import hashlib
import mmap
import os
import re
import struct
import zlib
from typing import Callable, Iterable

from perf_selector.collectors.builds import any_of

FLAGS, FILES = "flags", "files"
KINDS = (FLAGS, FILES)
DIGEST_LENGTH = 16

# What a worktree slot of collectors.builds.Worktree is called, wherever the temporary directory is.
_WORKTREE = re.compile(r"/\S*?/selector-worktrees/[0-9a-f]+/slot-\d+")
_OPTION_START = re.compile(r" (?=-)")
_DEBUG_OPTION = re.compile(r"-g\S*$")  # -g, -g3, -gdwarf-5, -gsplit-dwarf...: debug information only, never the code
ASSEMBLER_PRODUCERS = ("GNU AS ",)  # units of .s files: they record the assembler, not the compiler's flags


def kind_of(config: str | None) -> str | None:
    """`flags`, `files`, or None for a digest without a kind (an older store's) or none at all."""
    kind = (config or "").partition(":")[0]
    return kind if kind in KINDS and ":" in config else None


def configs_differ(new: str | None, old: str | None) -> bool:
    """Did the build configuration change between two commits' digests?  Only two digests
    of one kind can say so; otherwise it is unknown, and unknown is not a change (a store's
    digests switch kind where it was collected before this, or where -g was turned on)."""
    kind = kind_of(new)
    return kind is not None and kind == kind_of(old) and new != old


def build_changed(new: tuple[str | None, str | None] | None, old: tuple[str | None, str | None] | None) -> bool:
    """The feature `build_config_changed` of two commits' (build_config, toolchain): the
    toolchain differs, or the build configuration does (:func:`configs_differ`)."""
    new_config, new_toolchain = new or (None, None)
    old_config, old_toolchain = old or (None, None)
    return new_toolchain != old_toolchain or configs_differ(new_config, old_config)


def _digest(kind: str, lines: Iterable[str]) -> str:
    return f"{kind}:{hashlib.sha256(chr(10).join(lines).encode()).hexdigest()[:DIGEST_LENGTH]}"


# -------------------------------------------------------------------- the binary's record
def binary_config(binary: str | os.PathLike[str], roots: Iterable[str | os.PathLike[str]] = ()) -> str | None:
    """``flags:<digest>`` of what the compiler and linker recorded in `binary`, or None when
    it records no compiler (built without -g, unreadable, not a 64-bit little-endian ELF).
    `roots`: directories the binary was built in (the checkout), dropped from the flags."""
    flags = recorded_flags(binary, roots)
    return _digest(FLAGS, flags) if flags else None


def recorded_flags(binary: str | os.PathLike[str], roots: Iterable[str | os.PathLike[str]] = ()) -> list[str]:
    """The lines :func:`binary_config` digests: the distinct normalised producers, sorted,
    then the linker's facts; empty when no unit records a compiler."""
    try:
        with open(binary, "rb") as handle, mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as data:
            # mapped, not read: a large binary's debug information is touched only where units begin
            elf = _Elf(data)
            units = _compile_units(elf)
            facts = _link_facts(elf)
    except (OSError, ValueError, IndexError, KeyError, struct.error, zlib.error, UnicodeDecodeError):
        return []
    roots = [str(root).rstrip("/") for root in roots]
    producers = {_normalised(producer, [*roots, comp_dir]) for producer, comp_dir in units if producer}
    if not any(not producer.startswith(ASSEMBLER_PRODUCERS) for producer in producers):
        return []
    return sorted(producers) + facts


def _normalised(producer: str, roots: list[str]) -> str:
    """A producer without the paths of the checkout it was built in (or of any worktree
    slot) and without debug-only options."""
    for root in sorted({root for root in roots if len(root) > 1}, key=len, reverse=True):
        producer = producer.replace(root, "{checkout}")
    producer = _WORKTREE.sub("{checkout}", producer)
    compiler, *options = _OPTION_START.split(producer.strip())
    return " ".join([compiler, *(option for option in options if not _DEBUG_OPTION.match(option))])


def _link_facts(elf: "_Elf") -> list[str]:
    """What the link decided that no compile unit says: the file type (executable, PIE or
    shared object), static or dynamic (an interpreter), the shared libraries it needs."""
    facts = [f"link: type {elf.type}", f"link: {'dynamic' if elf.interpreter else 'static'}"]
    return facts + [f"link: needs {name}" for name in elf.needed()]


class _Elf:
    """The sections and dynamic entries of a 64-bit little-endian ELF file (all this module reads).
    A section is (buffer, start, end): the file's own bytes where it is stored plain, its
    decompressed bytes where it is compressed."""

    def __init__(self, data) -> None:
        if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
            raise ValueError("not a 64-bit little-endian ELF file")
        self.data = data
        self.type = {2: "EXEC", 3: "DYN"}.get(struct.unpack_from("<H", data, 16)[0], "other")
        phoff, shoff = struct.unpack_from("<QQ", data, 32)
        phentsize, phnum, shentsize, shnum, shstrndx = struct.unpack_from("<HHHHH", data, 54)
        self.interpreter = any(struct.unpack_from("<I", data, phoff + i * phentsize)[0] == 3 for i in range(phnum))
        headers = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize) for i in range(shnum)]
        names = headers[shstrndx] if shnum else None
        self.sections: dict[str, tuple] = {}
        for header in headers:
            name_offset = header[0]
            name = _c_string(data, names[4] + name_offset) if names else ""
            self.sections.setdefault(name, header)

    def section(self, name: str) -> tuple | None:
        """(buffer, start, end) of a section (decompressed when SHF_COMPRESSED with zlib), None if absent or empty."""
        header = self.sections.get(name)
        if header is None or header[1] == 8 or not header[5]:  # SHT_NOBITS, empty
            return None
        flags, offset, size = header[2], header[4], header[5]
        if offset + size > len(self.data):
            raise ValueError(f"{name} ends past the end of the file")
        if flags & 0x800:  # SHF_COMPRESSED: Elf64_Chdr, then the stream
            compression = struct.unpack_from("<I", self.data, offset)[0]
            if compression != 1:  # only ELFCOMPRESS_ZLIB
                raise ValueError(f"{name}: unsupported compression {compression}")
            contents = zlib.decompress(self.data[offset + 24 : offset + size])
            return contents, 0, len(contents)
        return self.data, offset, offset + size

    def needed(self) -> list[str]:
        """DT_NEEDED entries, in order."""
        dynamic, strings = self.section(".dynamic"), self.section(".dynstr")
        if not dynamic or not strings:
            return []
        buffer, start, end = dynamic
        entries = struct.iter_unpack("<qQ", buffer[start : start + (end - start) // 16 * 16])
        return [_c_string(strings[0], strings[1] + value) for tag, value in entries if tag == 1]


def _c_string(data, offset: int) -> str:
    end = data.find(b"\0", offset)
    if end < 0:
        raise ValueError("unterminated string")
    return data[offset:end].decode("utf-8", "replace")


# DWARF constants (DWARF 5, section 7)
_DW_AT_producer, _DW_AT_comp_dir, _DW_AT_str_offsets_base = 0x25, 0x1B, 0x72
_DW_FORM_string, _DW_FORM_strp, _DW_FORM_line_strp, _DW_FORM_indirect, _DW_FORM_implicit_const = 0x08, 0x0E, 0x1F, 0x16, 0x21
_STRX_FORMS = {0x1A: None, 0x25: 1, 0x26: 2, 0x27: 3, 0x28: 4, 0x1F02: None}  # strx, strx1-4, GNU_str_index (None: uleb)
# bytes of a fixed-size form; "offset" and "address" depend on the unit
_FIXED = {0x0B: 1, 0x11: 1, 0x0C: 1, 0x25: 1, 0x29: 1, 0x05: 2, 0x12: 2, 0x26: 2, 0x2A: 2, 0x27: 3, 0x2B: 3,
          0x06: 4, 0x13: 4, 0x1C: 4, 0x28: 4, 0x2C: 4, 0x07: 8, 0x14: 8, 0x20: 8, 0x24: 8, 0x1E: 16, 0x19: 0, 0x21: 0}
_OFFSET_FORMS = {0x0E, 0x17, 0x1D, 0x1F, 0x1F20, 0x1F21}  # strp, sec_offset, strp_sup, line_strp, GNU_ref_alt, GNU_strp_alt
_ULEB_FORMS = {0x0F, 0x15, 0x1A, 0x1B, 0x22, 0x23, 0x1F01, 0x1F02}  # udata, ref_udata, strx, addrx, loclistx, rnglistx, GNU indexes
_BLOCK_FORMS = {0x09: None, 0x18: None, 0x0A: 1, 0x03: 2, 0x04: 4}  # block, exprloc (uleb length), block1/2/4


def _uleb(data, at: int, signed: bool = False) -> tuple[int, int]:
    """(value, next position) of a LEB128 number (signed: SLEB128)."""
    value = shift = 0
    while True:
        byte = data[at]
        at += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            return (value - (1 << shift) if signed and byte & 0x40 else value), at


def _compile_units(elf: _Elf) -> list[tuple[str, str]]:
    """(producer, comp_dir) of each unit of .debug_info, read from its top DIE alone."""
    info, abbrev = elf.section(".debug_info"), elf.section(".debug_abbrev")
    if not info or not abbrev:
        return []
    data, at, info_end = info
    abbrev_data, abbrev_start, abbrev_end = abbrev
    abbrev = (bytes(abbrev_data[abbrev_start:abbrev_end]), abbrev_end - abbrev_start)  # bytes index faster than a map
    strings = {form: _LazySection(elf, name) for form, name in
               ((_DW_FORM_strp, ".debug_str"), (_DW_FORM_line_strp, ".debug_line_str"), ("offsets", ".debug_str_offsets"))}
    tables: dict[int, tuple[dict[int, list], int]] = {}
    units = []
    while at + 11 <= info_end:
        length = struct.unpack_from("<I", data, at)[0]
        offset_size, at_version = (8, at + 12) if length == 0xFFFFFFFF else (4, at + 4)
        if offset_size == 8:
            length = struct.unpack_from("<Q", data, at + 4)[0]
        unit_end = at_version + length
        offset_format = "<Q" if offset_size == 8 else "<I"
        version = struct.unpack_from("<H", data, at_version)[0]
        cursor = at_version + 2
        if version >= 5:
            unit_type, address_size = data[cursor], data[cursor + 1]
            abbrev_offset = struct.unpack_from(offset_format, data, cursor + 2)[0]
            cursor += 2 + offset_size
            if unit_type in (4, 5):  # skeleton, split_compile: dwo_id
                cursor += 8
            elif unit_type in (2, 6):  # type, split_type: signature and type offset
                cursor += 8 + offset_size
        else:
            abbrev_offset = struct.unpack_from(offset_format, data, cursor)[0]
            address_size = data[cursor + offset_size]
            cursor += offset_size + 1
        code, cursor = _uleb(data, cursor)
        found = {}
        for attribute, form, implicit in (_abbreviation(abbrev, abbrev_offset, code, tables) if code else ()):
            value, cursor = _read_form(data, cursor, form, implicit, offset_size, address_size, version)
            if attribute in (_DW_AT_producer, _DW_AT_comp_dir, _DW_AT_str_offsets_base):
                found[attribute] = (form, value)
        base = found.get(_DW_AT_str_offsets_base, (None, 2 * offset_size))[1]  # after the table's header
        units.append(tuple(_string(found.get(attribute), strings, base, offset_size)
                           for attribute in (_DW_AT_producer, _DW_AT_comp_dir)))
        at = unit_end
    return units


class _LazySection:
    """A section read (and decompressed) only when a unit's string needs it."""

    def __init__(self, elf: _Elf, name: str) -> None:
        self.elf, self.name, self._section = elf, name, None

    def get(self) -> tuple:
        if self._section is None:
            self._section = self.elf.section(self.name) or (b"", 0, 0)
        return self._section


def _abbreviation(abbrev: tuple, table_offset: int, code: int, tables: dict) -> list[tuple[int, int, int]]:
    """(attribute, form, implicit constant) of entry `code` of the table at `table_offset`,
    parsing the table only as far as that entry (and remembering what was parsed).  gcc
    orders a table by use, so a unit's own entry comes late: this loop is most of the
    time spent here, hence the inlined one-byte case of each number."""
    data, end = abbrev
    entries, at = tables.get(table_offset, ({}, table_offset))
    while code not in entries:
        if at >= end:
            raise ValueError(f"abbreviation {code} not in the table at {table_offset}")
        entry_code, at = _uleb(data, at)
        if entry_code == 0:
            raise ValueError(f"abbreviation {code} not in the table at {table_offset}")
        _, at = _uleb(data, at)  # tag
        at += 1  # has children
        attributes = []
        while True:
            attribute = data[at]
            if attribute < 0x80:
                at += 1
            else:
                attribute, at = _uleb(data, at)
            form = data[at]
            if form < 0x80:
                at += 1
            else:
                form, at = _uleb(data, at)
            if form == _DW_FORM_implicit_const:
                implicit, at = _uleb(data, at, signed=True)
            elif attribute == 0 and form == 0:
                break
            else:
                implicit = 0
            attributes.append((attribute, form, implicit))
        entries[entry_code] = attributes
    tables[table_offset] = (entries, at)
    return entries[code]


def _read_form(data, at: int, form: int, implicit: int, offset_size: int, address_size: int, version: int):
    """(value, next position) of one attribute value: a str for inline strings, an int for the rest."""
    if form == _DW_FORM_indirect:
        form, at = _uleb(data, at)
        return _read_form(data, at, form, implicit, offset_size, address_size, version)
    if form == _DW_FORM_string:
        end = data.find(b"\0", at)
        if end < 0:
            raise ValueError("unterminated string")
        return data[at:end].decode("utf-8", "replace"), end + 1
    if form == _DW_FORM_implicit_const:
        return implicit, at
    if form in _OFFSET_FORMS or (form == 0x10 and version > 2):  # ref_addr: an offset since DWARF 3
        return int.from_bytes(data[at : at + offset_size], "little"), at + offset_size
    if form in (0x01, 0x10):  # addr, ref_addr of DWARF 2
        return int.from_bytes(data[at : at + address_size], "little"), at + address_size
    if form in _FIXED:
        size = _FIXED[form]
        return int.from_bytes(data[at : at + size], "little"), at + size
    if form in _ULEB_FORMS:
        return _uleb(data, at)
    if form == 0x0D:  # sdata
        return _uleb(data, at, signed=True)
    if form in _BLOCK_FORMS:
        size = _BLOCK_FORMS[form]
        if size is None:
            length, at = _uleb(data, at)
        else:
            length, at = int.from_bytes(data[at : at + size], "little"), at + size
        return None, at + length
    raise ValueError(f"unknown DWARF form {form:#x}")


def _string(found: tuple[int, object] | None, strings: dict, base: int, offset_size: int) -> str:
    """An attribute's string, wherever its form keeps it; "" when absent or kept elsewhere
    (a supplementary object file)."""
    if found is None:
        return ""
    form, value = found
    if isinstance(value, str):
        return value
    if form in (_DW_FORM_strp, _DW_FORM_line_strp):
        data, start, _ = strings[form].get()
        return _c_string(data, start + value)
    if form in _STRX_FORMS:
        table, table_start, _ = strings["offsets"].get()
        position = table_start + base + value * offset_size
        data, start, _ = strings[_DW_FORM_strp].get()
        return _c_string(data, start + int.from_bytes(table[position : position + offset_size], "little"))
    return ""


# ------------------------------------------------------------------- the files fallback
def files_config(listing: str, patterns: list[str], unaffected: list[str]) -> str:
    """``files:<digest>`` of the files of a ``git ls-tree -r`` listing whose names match
    `patterns` (``[build] config_files``), leaving out paths the build does not read
    (``[build] unaffected``): the configuration of a binary that records none."""
    configures, unread = any_of(patterns), any_of(unaffected)
    lines = []
    for line in listing.splitlines():
        meta, path = line.split("\t", 1)
        if configures(os.path.basename(path)) and not unread(path):
            lines.append(f"{path} {meta.split()[2]}")
    return _digest(FILES, lines)


def commit_config(binary: str | os.PathLike[str] | None, listing: str | Callable[[], str], patterns: list[str],
                  unaffected: list[str], roots: Iterable[str | os.PathLike[str]] = ()) -> str:
    """The build configuration of a commit: its binary's record (:func:`binary_config`), or
    when it has none (or there is no binary) the files digest of its tree.  `listing` is
    the tree's ``git ls-tree -r`` text, or a function that returns it (only called when needed)."""
    recorded = binary_config(binary, roots) if binary is not None else None
    if recorded is not None:
        return recorded
    return files_config(listing() if callable(listing) else listing, patterns, unaffected)
