"""The tables of a static analysis, shared by its two implementations.

:class:`StaticAnalysis` holds one binary's rows (a row per function, a row per data
object) and tabulates them; :class:`FunctionGroup`, :func:`name_functions` and
:func:`object_names` give the names a user reads, and the two messages below are
what both implementations say of a stripped binary.  The implementations
(:mod:`collectors.native_analysis`, the compiled core; :mod:`collectors.python_analysis`,
the reference) import this module and nothing of each other;
:mod:`collectors.static_analysis`, the entry point, chooses between them.

A function is the key its symbols map to (:func:`collectors.symbols.function_key`:
``foo``, ``foo.cold``, ``foo.constprop.0`` are one function, and so are the variants of
a C++ constructor or destructor); its fingerprint changes only when the code of one of
its parts changes, never because the linker moved it (see
:mod:`collectors.address_resolver`).  A body with several names (identical code folding
made ``bar`` an alias of ``foo``) is a part of each of their functions: a change of it
changes both, whichever name a profiler gives the address.  Data objects get a fingerprint of their contents,
with pointers replaced by what they point to, so a data-only commit is visible too.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING

from perf_selector.collectors.arrow_rows import table_of_rows
from perf_selector.collectors.errors import BinaryError
from perf_selector.collectors.metrics import INSTRUCTIONS

if TYPE_CHECKING:
    import pyarrow as pa

    from perf_selector.collectors.elf_image import Symbol

FUNCTION_COLUMNS = [
    "name", "raw_name", "parts", "address", "size", INSTRUCTIONS.name, "fingerprint",
    "callees", "data_refs", "has_cold_part", "local", "file",
]
OBJECT_COLUMNS = ["name", "raw_name", "address", "size", "section", "writable", "fingerprint"]


@dataclass
class StaticAnalysis:
    """The analysis of one binary: its rows (FUNCTION_COLUMNS, OBJECT_COLUMNS), tabulated on
    demand as Arrow tables (``functions``, ``objects``)."""

    function_rows: list[tuple]
    object_rows: list[tuple]
    symbol_source: str
    decoder: str
    content_digest: str  # see ElfImage.content_digest: equal digests, equal analyses
    notes: list[str] = field(default_factory=list)

    @cached_property
    def functions(self) -> pa.Table:
        return table_of_rows(self.function_rows, FUNCTION_COLUMNS)

    @cached_property
    def objects(self) -> pa.Table:
        return table_of_rows(self.object_rows, OBJECT_COLUMNS)

    def function_records(self) -> list[dict]:
        """The rows of ``functions`` as dicts, without Arrow: `selector functions` and `diff`
        print them, and pyarrow's import costs more than analysing a small binary."""
        return [dict(zip(FUNCTION_COLUMNS, row)) for row in self.function_rows]

    def object_records(self) -> list[dict]:
        return [dict(zip(OBJECT_COLUMNS, row)) for row in self.object_rows]


def stripped_note(path: str) -> str:
    return (
        f"{path}: no .symtab (stripped); only the exported functions of .dynsym are analysed. "
        "Build with symbols (no -s, no strip) to see every function."
    )


def no_functions_error(path: str) -> BinaryError:
    return BinaryError(
        f"{path}: no function symbols (stripped binary); rebuild it with symbols (drop -s / strip) "
        "so functions can be told apart"
    )


@dataclass
class FunctionGroup:
    key: str  # collectors.symbols.function_key of its symbols
    local: bool
    file: str
    parts: list[Symbol] = field(default_factory=list)
    name: str = ""


def name_functions(functions: list[FunctionGroup]) -> None:
    """The functions' keys made unique (in place: sets each ``name``).

    Names stay mangled (people read them demangled: :func:`collectors.symbols.demangle`).
    Two static functions of the same name in different files get their file.
    """
    key_count = defaultdict(int)
    for function in functions:
        key_count[function.key] += 1
    for function in functions:
        function.name = function.key
        if key_count[function.key] > 1 and function.local:
            function.name = f"{function.name} [{function.file or '?'}]"
    name_count = defaultdict(int)
    for function in functions:
        name_count[function.name] += 1
    for function in functions:
        if name_count[function.name] > 1:
            function.name = f"{function.name} [{function.key}]"


def object_names(objects: list[tuple[str, str, bool]]) -> list[str]:
    """Unique names for data objects given as (token, file, local) in address order.

    Names stay mangled, like functions'.  Statics of one name in different files get
    their file; static locals of one name in one file (``counter.0``, ``counter.1``:
    gcc's numbering moves) are told apart by their order in memory: ``counter#2``.
    """
    files_of = defaultdict(set)
    for token, file, _ in objects:
        files_of[token].add(file)
    named = []
    for token, file, local in objects:
        name = token
        if len(files_of[token]) > 1 and local:
            name = f"{name} [{file or '?'}]"
        named.append(name)
    name_count = defaultdict(int)
    for name in named:
        name_count[name] += 1
    seen = defaultdict(int)
    unique = []
    for name in named:
        if name_count[name] > 1:
            seen[name] += 1
            name = f"{name}#{seen[name]}"
        unique.append(name)
    return unique
