"""Static analysis of one binary: a record per function and per data object.

A function is the parent name gcc's clones and split parts map to (``foo``,
``foo.cold``, ``foo.constprop.0`` are one function); its fingerprint changes only when
the code of one of its parts changes, never because the linker moved it (see
:mod:`collectors.address_resolver`).  Data objects get a fingerprint of their contents,
with pointers replaced by what they point to, so a data-only commit is visible too.
"""

from __future__ import annotations

import bisect
import hashlib
import multiprocessing
import os
from concurrent.futures import ProcessPoolExecutor
from collections import defaultdict
from dataclasses import dataclass, field

import pandas as pd

from collectors.address_resolver import AddressResolver, CodeRange, DataRange, References
from collectors.decoder import Decoder, default_decoder
from collectors.elf_image import R_X86_64_RELATIVE, STT_FUNC, STT_OBJECT, ElfImage, Symbol
from collectors.errors import BinaryError
from collectors.symbols import demangle, is_cold_part, parent_symbol, part_kind, reference_name

FUNCTION_COLUMNS = [
    "name", "raw_name", "parts", "address", "size", "instructions", "fingerprint",
    "callees", "data_refs", "has_cold_part", "local", "file",
]
OBJECT_COLUMNS = ["name", "raw_name", "address", "size", "section", "writable", "fingerprint"]


@dataclass
class StaticAnalysis:
    functions: pd.DataFrame
    objects: pd.DataFrame
    symbol_source: str
    decoder: str
    content_digest: str  # see ElfImage.content_digest: equal digests, equal analyses
    notes: list[str] = field(default_factory=list)


def analyse_binary(path: str | os.PathLike[str], decoder: Decoder | None = None, jobs: int = 1) -> StaticAnalysis:
    """Analyse an x86-64 ELF executable or shared library.

    ``jobs`` > 1 fingerprints functions in that many forked processes, for large
    binaries only; keep 1 inside processes that already run threads (pyarrow, Dask).

    Raises :class:`BinaryError` with a one-line message for anything that is not a
    usable binary, including a stripped one without exported functions.
    """
    decoder = decoder or default_decoder()
    image = ElfImage.load(path)
    notes = []
    if image.symbol_source == "dynsym":
        notes.append(
            f"{image.path}: no .symtab (stripped); only the exported functions of .dynsym are analysed. "
            "Build with symbols (no -s, no strip) to see every function."
        )
    code_symbols = [s for s in image.symbols if s.kind == STT_FUNC and s.size and _in_code(image, s)]
    if not code_symbols:
        raise BinaryError(
            f"{image.path}: no function symbols (stripped binary); rebuild it with symbols (drop -s / strip) "
            "so functions can be told apart"
        )
    code_ranges, functions = _group_functions(code_symbols)
    data_ranges = _data_ranges(image)
    resolver = AddressResolver(image, code_ranges, data_ranges)
    function_rows = _function_rows_in_parallel if jobs > 1 and len(functions) >= PARALLEL_MINIMUM else _function_rows
    rows, objects = function_rows(image, decoder, resolver, functions, jobs, lambda: _object_table(image, resolver, data_ranges))
    return StaticAnalysis(
        functions=pd.DataFrame(rows, columns=FUNCTION_COLUMNS),
        objects=objects,
        symbol_source=image.symbol_source,
        decoder=decoder.name,
        content_digest=image.content_digest(),
        notes=notes,
    )


def content_digest(path: str | os.PathLike[str]) -> str:
    """The digest under which an analysis of this binary can be reused (cheap: no decoding)."""
    return ElfImage.load(path).content_digest()


def _in_code(image: ElfImage, symbol: Symbol) -> bool:
    section = image.section_at(symbol.address)
    return section is not None and section.executable and not section.nobits


# ------------------------------------------------------------------ functions
@dataclass
class _Function:
    raw: str  # parent raw symbol
    local: bool
    file: str
    parts: list[Symbol] = field(default_factory=list)
    name: str = ""


def _primary_alias(aliases: list[Symbol]) -> Symbol:
    """Among symbols at one address, the name a user expects: global, then plain, then short."""
    return min(aliases, key=lambda s: (s.local, s.raw.startswith("_"), len(s.raw), s.raw))


def _group_functions(symbols: list[Symbol]) -> tuple[list[CodeRange], list[_Function]]:
    by_address: dict[int, list[Symbol]] = defaultdict(list)
    for symbol in symbols:
        by_address[symbol.address].append(symbol)
    primaries = [_primary_alias(aliases) for aliases in by_address.values()]

    global_parents = {parent_symbol(s.raw) for s in primaries if not s.local}
    functions: dict[tuple[str, str], _Function] = {}
    for symbol in primaries:
        parent = parent_symbol(symbol.raw)
        # A clone of a global function is a local symbol: it still belongs to the global.
        local = symbol.local and parent not in global_parents
        key = (parent, symbol.file if local else "")
        function = functions.setdefault(key, _Function(raw=parent, local=local, file=symbol.file if local else ""))
        function.parts.append(symbol)

    _name_functions(list(functions.values()))
    ranges = [
        CodeRange(raw=part.raw, address=part.address, size=part.size, token=reference_name(part.raw), parent=function.name)
        for function in functions.values()
        for part in function.parts
    ]
    return ranges, sorted(functions.values(), key=lambda f: f.name)


def _name_functions(functions: list[_Function]) -> None:
    """Demangled parent names, made unique.

    Two static functions of the same name in different files get their file; C++
    constructor and destructor variants (D0/D1/D2, C1/C2), which demangle alike but
    are different code, get their raw symbol.
    """
    raw_count = defaultdict(int)
    for function in functions:
        raw_count[function.raw] += 1
    for function in functions:
        function.name = demangle(function.raw)
        if raw_count[function.raw] > 1 and function.local:
            function.name = f"{function.name} [{function.file or '?'}]"
    name_count = defaultdict(int)
    for function in functions:
        name_count[function.name] += 1
    for function in functions:
        if name_count[function.name] > 1:
            function.name = f"{function.name} [{function.raw}]"


def _function_rows(image, decoder, resolver, functions, jobs, objects) -> tuple[list[tuple], pd.DataFrame]:
    return [_function_row(image, decoder, resolver, function) for function in functions], objects()


def _function_rows_in_parallel(image, decoder, resolver, functions, jobs, objects) -> tuple[list[tuple], pd.DataFrame]:
    """Fingerprint chunks of functions in forked workers while this process does the data objects.

    Fork shares the loaded image and resolver with the workers for free; only the
    rows travel back.
    """
    global _FORKED_STATE
    _FORKED_STATE = (image, decoder, resolver, functions)
    chunks = [range(start, len(functions), jobs * 4) for start in range(jobs * 4)]
    try:
        with ProcessPoolExecutor(max_workers=jobs, mp_context=multiprocessing.get_context("fork")) as pool:
            futures = [pool.submit(_function_rows_of_chunk, chunk) for chunk in chunks]
            object_table = objects()
            rows = [row for future in futures for row in future.result()]
    finally:
        _FORKED_STATE = None
    return sorted(rows), object_table


_FORKED_STATE = None
PARALLEL_MINIMUM = 2000  # functions; below this a fork costs more than it saves


def _function_rows_of_chunk(chunk: range) -> list[tuple]:
    image, decoder, resolver, functions = _FORKED_STATE
    return [_function_row(image, decoder, resolver, functions[index]) for index in chunk]


def _function_row(image: ElfImage, decoder: Decoder, resolver: AddressResolver, function: _Function) -> tuple:
    references = References()
    part_digests = []
    instructions = 0
    for part in function.parts:
        count, digest = _fingerprint_part(image, decoder, resolver, function, part, references)
        instructions += count
        part_digests.append((part_kind(part.raw), digest))
    primary = min(function.parts, key=lambda p: (part_kind(p.raw) != "", p.address))
    return (
        function.name,
        function.raw,
        sorted(p.raw for p in function.parts),
        primary.address,
        sum(p.size for p in function.parts),
        instructions,
        _combine(part_digests),
        sorted(references.callees - {function.name}),
        sorted(references.data),
        any(is_cold_part(p.raw) for p in function.parts),
        function.local,
        function.file,
    )


def _fingerprint_part(
    image: ElfImage, decoder: Decoder, resolver: AddressResolver, function: _Function, part: Symbol, references: References
) -> tuple[int, bytes]:
    code = image.read(part.address, part.size)
    current = resolver.code_range_of(part.address) if len(code) == part.size else None
    if current is None or current.raw != part.raw:
        current = CodeRange(part.raw, part.address, len(code), reference_name(part.raw), function.name)
    count, fields = decoder.scan(code, part.address, resolver.absolute_range)
    digest = hashlib.blake2b(digest_size=16)
    position = 0
    for address_field in fields:
        token = resolver.token(address_field, current, references)
        if token is None or address_field.start < position:
            continue
        digest.update(code[position : address_field.start])
        digest.update(b"\0" + token.encode() + b"\0")
        position = address_field.end
    digest.update(code[position:])
    return count, digest.digest()


def _combine(part_digests: list[tuple[str, bytes]]) -> str:
    digest = hashlib.blake2b(digest_size=16)
    for kind, part_digest in sorted(part_digests):
        digest.update(kind.encode() + b"\0" + part_digest)
    return digest.hexdigest()


# --------------------------------------------------------------- data objects
def _data_ranges(image: ElfImage) -> list[DataRange]:
    symbols = {}
    for symbol in image.symbols:
        if symbol.kind == STT_OBJECT and symbol.size and image.section_at(symbol.address) is not None:
            symbols.setdefault(symbol.address, []).append(symbol)
    primaries = [_primary_alias(aliases) for aliases in symbols.values()]
    count = defaultdict(int)
    for symbol in primaries:
        count[reference_name(symbol.raw)] += 1
    ranges = []
    for symbol in primaries:
        token = reference_name(symbol.raw)
        name = demangle(token)
        if count[token] > 1 and symbol.local:
            name = f"{name} [{symbol.file or '?'}]"
        ranges.append(DataRange(name=name, address=symbol.address, size=symbol.size, token=token))
    return ranges


def _object_table(image: ElfImage, resolver: AddressResolver, ranges: list[DataRange]) -> pd.DataFrame:
    relocated = sorted(image.relocations)
    rows = []
    for data in sorted(ranges, key=lambda r: r.name):
        section = image.section_at(data.address)
        rows.append(
            (
                data.name,
                data.token,
                data.address,
                data.size,
                section.name,
                section.writable,
                _object_fingerprint(image, resolver, data, relocated),
            )
        )
    return pd.DataFrame(rows, columns=OBJECT_COLUMNS)


def _object_fingerprint(image: ElfImage, resolver: AddressResolver, data: DataRange, relocated: list[int]) -> str:
    """Hash an object's bytes with each pointer replaced by what it points to."""
    section = image.section_at(data.address)
    if section.nobits:
        return hashlib.blake2b(f"zero:{data.size}".encode(), digest_size=16).hexdigest()
    contents = image.read(data.address, data.size)
    pointers = []
    if image.position_independent:
        start = bisect.bisect_left(relocated, data.address)
        for slot in relocated[start : bisect.bisect_left(relocated, data.end)]:
            kind, symbol, addend = image.relocations[slot]
            target_token = resolver.pointer_token(addend) if kind == R_X86_64_RELATIVE else symbol
            pointers.append((slot - data.address, target_token))
    elif resolver.absolute_range is not None:
        low, high = resolver.absolute_range
        for offset in range(0, len(contents) - 7, 8):
            value = int.from_bytes(contents[offset : offset + 8], "little")
            if low <= value < high:
                pointers.append((offset, resolver.pointer_token(value)))
    if not pointers:
        return hashlib.blake2b(contents, digest_size=16).hexdigest()
    digest = hashlib.blake2b(digest_size=16)
    position = 0
    for offset, token in pointers:
        digest.update(contents[position:offset] + b"\0" + token.encode() + b"\0")
        position = offset + 8
    digest.update(contents[position:])
    return digest.hexdigest()
