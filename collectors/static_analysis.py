"""Static analysis of one binary: a record per function and per data object.

This module owns the entry point and the tables; the work is done by the compiled core
(:mod:`collectors.native_analysis`) or by the Python reference implementation
(:mod:`collectors.python_analysis`), which give the same tables.

A function is the parent name gcc's clones and split parts map to (``foo``,
``foo.cold``, ``foo.constprop.0`` are one function); its fingerprint changes only when
the code of one of its parts changes, never because the linker moved it (see
:mod:`collectors.address_resolver`).  Data objects get a fingerprint of their contents,
with pointers replaced by what they point to, so a data-only commit is visible too.
"""

from __future__ import annotations

import os
from collections import defaultdict
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING

from collectors.errors import BinaryError
from collectors.symbols import demangle

if TYPE_CHECKING:
    import pandas as pd
    import pyarrow as pa

    from collectors.decoder import Decoder
    from collectors.elf_image import Symbol

FUNCTION_COLUMNS = [
    "name", "raw_name", "parts", "address", "size", "instructions", "fingerprint",
    "callees", "data_refs", "has_cold_part", "local", "file",
]
OBJECT_COLUMNS = ["name", "raw_name", "address", "size", "section", "writable", "fingerprint"]


@dataclass
class StaticAnalysis:
    """The analysis of one binary: its rows (FUNCTION_COLUMNS, OBJECT_COLUMNS), tabulated on
    demand as DataFrames (``functions``, ``objects``) or as Arrow tables (``function_table``,
    ``object_table``: what `selector select` reads, without importing pandas)."""

    function_rows: list[tuple]
    object_rows: list[tuple]
    symbol_source: str
    decoder: str
    content_digest: str  # see ElfImage.content_digest: equal digests, equal analyses
    notes: list[str] = field(default_factory=list)

    @cached_property
    def functions(self) -> pd.DataFrame:
        return table_of_rows(self.function_rows, FUNCTION_COLUMNS)

    @cached_property
    def objects(self) -> pd.DataFrame:
        return table_of_rows(self.object_rows, OBJECT_COLUMNS)

    @cached_property
    def function_table(self) -> pa.Table:
        return arrow_table_of_rows(self.function_rows, FUNCTION_COLUMNS)

    @cached_property
    def object_table(self) -> pa.Table:
        return arrow_table_of_rows(self.object_rows, OBJECT_COLUMNS)


def analyse_binary(path: str | os.PathLike[str], decoder: Decoder | None = None, jobs: int = 1) -> StaticAnalysis:
    """Analyse an x86-64 ELF executable or shared library.

    By default the compiled core (:mod:`collectors.native_analysis`) does the work when
    it is installed; it gives the same tables as the Python implementation below, which
    stays the reference and runs when a ``decoder`` is given, when
    ``SELECTOR_NATIVE=0`` is set, or when the core refuses a file (so that the error
    the user sees is the precise one of the Python loader).

    ``jobs`` > 1 fingerprints functions in that many forked processes (Python
    implementation only, for large binaries); keep 1 inside processes that already run
    threads (pyarrow, Dask).

    Raises :class:`BinaryError` with a one-line message for anything that is not a
    usable binary, including a stripped one without exported functions.
    """
    if decoder is None and _native_wanted():
        from collectors.native_analysis import analyse_natively  # it builds on this module's helpers

        analysis = analyse_natively(path)
        if analysis is not None:
            return analysis
    from collectors.python_analysis import analyse_in_python

    return analyse_in_python(path, decoder, jobs)


class AnalysisInProgress:
    """``analyse_binary(path)``, begun now and collected by :meth:`result`.

    The compiled core runs in a thread and releases the GIL, so on the push path it
    works on the other core while the caller imports pandas and reads git and the
    store: those imports cost about as much as the analysis.  Only the core's part
    runs in the thread; the tables (and the Python implementation, when the core is
    missing or refuses the file) are made by :meth:`result`, in the caller's thread.
    Errors (a missing file, not ELF) are raised by :meth:`result`, as
    :func:`analyse_binary` raises them.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = path
        self._core: Future | None = None
        if _native_wanted():
            from collectors.native_analysis import run_core

            executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="selector-analysis")
            self._core = executor.submit(run_core, path)
            executor.shutdown(wait=False)  # the submitted analysis runs on; nothing more is submitted

    def result(self) -> StaticAnalysis:
        if self._core is not None:
            output = self._core.result()
            if output is not None:
                from collectors.native_analysis import tabulate

                return tabulate(self.path, output)
        from collectors.python_analysis import analyse_in_python

        return analyse_in_python(self.path)


def _native_wanted() -> bool:
    return os.environ.get("SELECTOR_NATIVE", "1") != "0"


def table_of_rows(rows: list[tuple], columns: list[str]) -> pd.DataFrame:
    """``pd.DataFrame(rows, columns=columns)``, built a column at a time: string columns
    go through Arrow, much faster than pandas' own conversion to its string dtype
    (a third of the time `select` spends tabulating libpython), with the same dtypes."""
    import pandas as pd
    import pyarrow as pa

    if not rows:
        return pd.DataFrame(rows, columns=columns)
    data = {}
    for name, values in zip(columns, zip(*rows)):
        if isinstance(values[0], str):
            data[name] = pd.array(pa.array(values, pa.large_string()), dtype=pd.StringDtype("pyarrow", na_value=float("nan")))
        else:
            data[name] = list(values)
    return pd.DataFrame(data, columns=columns)


def arrow_table_of_rows(rows: list[tuple], columns: list[str]) -> pa.Table:
    """The Arrow table of :func:`table_of_rows`: string columns large_string, as pandas'
    string dtype stores them, so the table concatenates with stored ones as it is."""
    import pyarrow as pa

    if not rows:
        return pa.table({name: pa.array([], pa.null()) for name in columns})
    arrays = [pa.array(values, pa.large_string()) if isinstance(values[0], str) else pa.array(values)
              for values in zip(*rows)]
    return pa.table(arrays, names=columns)


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


def content_digest(path: str | os.PathLike[str]) -> str:
    """The digest under which an analysis of this binary can be reused (cheap: no decoding)."""
    from collectors.elf_image import ElfImage

    return ElfImage.load(path).content_digest()


@dataclass
class FunctionGroup:
    raw: str  # parent raw symbol
    local: bool
    file: str
    parts: list[Symbol] = field(default_factory=list)
    name: str = ""


def name_functions(functions: list[FunctionGroup]) -> None:
    """Demangled parent names, made unique (in place: sets each ``name``).

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


def object_names(objects: list[tuple[str, str, bool]]) -> list[str]:
    """Unique names for data objects given as (token, file, local) in address order.

    Statics of one name in different files get their file; static locals of one name
    in one file (``counter.0``, ``counter.1``: gcc's numbering moves) are told apart
    by their order in memory: ``counter#2``.
    """
    files_of = defaultdict(set)
    for token, file, _ in objects:
        files_of[token].add(file)
    named = []
    for token, file, local in objects:
        name = demangle(token)
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
