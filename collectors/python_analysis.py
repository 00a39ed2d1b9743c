"""The reference implementation of the static analysis, in Python (iced-x86 or capstone).

:func:`collectors.static_analysis.analyse_binary` runs the compiled core when it is
built and this otherwise; the two give the same tables (tests/test_native_analysis.py).
This one stays because it is the readable statement of what a fingerprint is, it runs
where no Rust toolchain was available at install, and it takes another decoder
(``benchmarks/decoder_choice.py``).
"""

from __future__ import annotations

import bisect
import hashlib
import multiprocessing
import os
from collections import defaultdict
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass

from perf_selector.collectors.address_resolver import AddressResolver, CodeRange, DataRange, References
from perf_selector.collectors.decoder import Decoder, default_decoder
from perf_selector.collectors.elf_image import R_X86_64_RELATIVE, STT_FUNC, STT_OBJECT, ElfImage, Symbol
from perf_selector.collectors.analysis_tables import FunctionGroup, StaticAnalysis, name_functions, no_functions_error, object_names, stripped_note
from perf_selector.collectors.symbols import (
    function_key, has_external_linkage, is_cold_part, parent_symbol, part_kind, reference_name, unversioned,
)


def analyse_in_python(path: str | os.PathLike[str], decoder: Decoder | None = None, jobs: int = 1) -> StaticAnalysis:
    """The reference implementation of :func:`analyse_binary`."""
    decoder = decoder or default_decoder()
    image = ElfImage.load(path)
    notes = [stripped_note(image.path)] if image.symbol_source == "dynsym" else []
    code_symbols = [s for s in image.symbols if s.kind == STT_FUNC and s.size and _in_code(image, s)]
    if not code_symbols:
        raise no_functions_error(image.path)
    code_ranges, functions = _group_functions(code_symbols)
    data_ranges = _data_ranges(image)
    resolver = AddressResolver(image, code_ranges, data_ranges)
    work = _Work(image, decoder, resolver, functions, sorted(data_ranges, key=lambda r: r.name), sorted(image.relocations))
    if jobs > 1 and len(functions) >= PARALLEL_MINIMUM:
        function_rows, object_rows = _rows_in_parallel(work, jobs)
    else:
        function_rows, object_rows = work.function_rows(range(len(functions))), work.object_rows(range(len(work.objects)))
    return StaticAnalysis(
        function_rows=function_rows,
        object_rows=object_rows,
        symbol_source=image.symbol_source,
        decoder=decoder.name,
        content_digest=image.content_digest(),
        notes=notes,
    )


def _in_code(image: ElfImage, symbol: Symbol) -> bool:
    section = image.section_at(symbol.address)
    return section is not None and section.executable and not section.nobits


def _alias_order(symbol: Symbol) -> tuple:
    """Among symbols at one address, the name a user expects first: global, then plain, then short."""
    return (symbol.local, symbol.raw.startswith("_"), len(symbol.raw), symbol.raw)


def _primary_alias(aliases: list[Symbol]) -> Symbol:
    return min(aliases, key=_alias_order)


def _group_functions(symbols: list[Symbol]) -> tuple[list[CodeRange], list[FunctionGroup]]:
    """Functions by key, each with its symbol at every address it has code at.

    The symbols at one address are one body: each of their keys gets it as a part (a
    constructor's C1 and C2 one key, ``foo`` and ``bar`` folded by identical code folding
    two).  References to the address are written with the name a user expects first.
    """
    by_address: dict[int, list[Symbol]] = defaultdict(list)
    for symbol in symbols:
        by_address[symbol.address].append(symbol)
    aliases_in_order = [sorted(aliases, key=_alias_order) for aliases in by_address.values()]
    global_keys = {function_key(aliases[0].raw) for aliases in aliases_in_order if not aliases[0].local}

    functions: dict[tuple[str, str], FunctionGroup] = {}
    primary_group = []
    for aliases in aliases_in_order:
        here: dict[tuple[str, str], tuple[Symbol, bool]] = {}
        for symbol in aliases:
            key = function_key(symbol.raw)
            # A clone of a global function is a local symbol: it still belongs to the global;
            # so does a C++ function of external linkage cloned in each translation unit.
            local = symbol.local and key not in global_keys and not has_external_linkage(key)
            here.setdefault((key, symbol.file if local else ""), (symbol, local))
        for (key, file), (symbol, local) in here.items():
            function = functions.setdefault((key, file), FunctionGroup(key=key, local=local, file=file))
            function.parts.append(symbol)
        primary_group.append(functions[next(iter(here))])

    name_functions(list(functions.values()))
    ranges = [
        CodeRange(raw=aliases[0].raw, address=aliases[0].address, size=aliases[0].size, token=reference_name(aliases[0].raw),
                  parent=function.name)
        for aliases, function in zip(aliases_in_order, primary_group)
    ]
    return ranges, sorted(functions.values(), key=lambda f: f.name)


@dataclass
class _Work:
    """Everything the rows are computed from; shared with forked workers as it is."""

    image: ElfImage
    decoder: Decoder
    resolver: AddressResolver
    functions: list[FunctionGroup]
    objects: list[DataRange]
    relocated: list[int]  # sorted relocation slots, for pointers inside data objects

    def function_rows(self, indices: range) -> list[tuple]:
        return [_function_row(self.image, self.decoder, self.resolver, self.functions[i]) for i in indices]

    def object_rows(self, indices: range) -> list[tuple]:
        return [_object_row(self.image, self.resolver, self.objects[i], self.relocated) for i in indices]


PARALLEL_MINIMUM = 2000  # functions; below this a fork costs more than it saves
_FORKED_WORK: _Work | None = None


def _rows_in_parallel(work: _Work, jobs: int) -> tuple[list[tuple], list[tuple]]:
    """Compute rows in `jobs` forked workers: fork hands them the loaded image for free,
    only the rows travel back.  Strided chunks balance large and small functions."""
    global _FORKED_WORK
    _FORKED_WORK = work
    chunks = jobs * 4
    tasks = [("function_rows", range(i, len(work.functions), chunks)) for i in range(chunks)]
    tasks += [("object_rows", range(i, len(work.objects), jobs)) for i in range(jobs)]
    try:
        with ProcessPoolExecutor(max_workers=jobs, mp_context=multiprocessing.get_context("fork")) as pool:
            results = list(pool.map(_forked_rows, tasks))
    finally:
        _FORKED_WORK = None
    function_rows = sorted(row for (kind, _), rows in zip(tasks, results) if kind == "function_rows" for row in rows)
    object_rows = sorted(row for (kind, _), rows in zip(tasks, results) if kind == "object_rows" for row in rows)
    return function_rows, object_rows


def _forked_rows(task: tuple[str, range]) -> list[tuple]:
    method, indices = task
    return getattr(_FORKED_WORK, method)(indices)


def _function_row(image: ElfImage, decoder: Decoder, resolver: AddressResolver, function: FunctionGroup) -> tuple:
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
        parent_symbol(primary.raw),
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
    image: ElfImage, decoder: Decoder, resolver: AddressResolver, function: FunctionGroup, part: Symbol, references: References
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
    """Data objects with unique names (see :func:`object_names`)."""
    symbols = {}
    for symbol in image.symbols:
        if symbol.kind == STT_OBJECT and symbol.size and image.section_at(symbol.address) is not None:
            symbols.setdefault(symbol.address, []).append(symbol)
    primaries = sorted((_primary_alias(aliases) for aliases in symbols.values()), key=lambda s: s.address)
    tokens = [reference_name(symbol.raw) for symbol in primaries]
    names = object_names([(token, symbol.file, symbol.local) for token, symbol in zip(tokens, primaries)])
    return [
        DataRange(name=name, address=symbol.address, size=symbol.size, token=token)
        for name, symbol, token in zip(names, primaries, tokens)
    ]


def _object_row(image: ElfImage, resolver: AddressResolver, data: DataRange, relocated: list[int]) -> tuple:
    section = image.section_at(data.address)
    fingerprint = _object_fingerprint(image, resolver, data, relocated)
    return (data.name, data.token, data.address, data.size, section.name, section.writable, fingerprint)


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
        if data.token.startswith("_ZTS"):
            contents = _unversioned_type_name(contents)
        return hashlib.blake2b(contents, digest_size=16).hexdigest()
    digest = hashlib.blake2b(digest_size=16)
    position = 0
    for offset, token in pointers:
        digest.update(contents[position:offset] + b"\0" + token.encode() + b"\0")
        position = offset + 8
    digest.update(contents[position:])
    return digest.hexdigest()


def _unversioned_type_name(contents: bytes) -> bytes:
    """A typeinfo name (``_ZTS...``: the type's mangled name as a string, which RTTI compares)
    without the version of a versioned namespace (collectors.symbols.unversioned): a release
    renames the string, not the type."""
    text, end, rest = contents.partition(b"\0")
    try:
        name = text.decode("ascii")
    except UnicodeDecodeError:
        return contents
    dropped = unversioned("_Z" + name)[2:]
    return contents if dropped == name else dropped.encode() + end + rest
