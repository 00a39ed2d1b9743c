"""The static analysis through the compiled core (``collectors._native``, built from
``native/`` with the iced-x86 and object crates).

It gives the same tables as :func:`collectors.python_analysis.analyse_in_python`, the
reference, in a fraction of the time: the per-instruction loop of the Python version
cost more than ``objdump -d`` on libpython (``benchmarks/static_speed.py``), and
``selector select`` runs it on every push.  The core returns functions and objects
with their keys and refers to them by index; the names (keys made unique) are given
here by the same helper the Python version uses.
"""

from __future__ import annotations

import os

from perf_selector.collectors.elf_file import read_elf_file
from perf_selector.collectors.analysis_tables import FunctionGroup, StaticAnalysis, name_functions, no_functions_error, object_names, stripped_note

try:
    from perf_selector.collectors import _native
except ImportError:  # installed without a Rust toolchain: the Python implementation runs
    _native = None

DECODER_NAME = "iced-x86 (native)"


def available() -> bool:
    return _native is not None


def analyse_natively(path: str | os.PathLike[str]) -> StaticAnalysis | None:
    """The analysis of `path`, or None when the core is missing or refuses the file.

    A file the core refuses goes to the Python loader, whose error names the problem
    (or which analyses what the core's stricter ELF reader would not).
    """
    output = run_core(path)
    return None if output is None else tabulate(path, output)


def run_core(path: str | os.PathLike[str]) -> tuple | None:
    """The core's raw output for `path` (None: no core, or it refuses the file).

    Needs neither pandas nor the GIL for the work itself, so a caller can start it in
    a thread before importing the rest (:class:`collectors.static_analysis.AnalysisInProgress`).
    """
    if _native is None:
        return None
    data = read_elf_file(str(path))  # missing, unreadable, not ELF: the same one-line errors
    try:
        return _native.analyse(data)
    except ValueError:
        return None


def tabulate(path: str | os.PathLike[str], output: tuple) -> StaticAnalysis:
    """The tables of :class:`StaticAnalysis` from the core's output: names made unique by
    the helpers the Python implementation uses, rows in the same order."""
    path = str(path)
    symbol_source, digest, functions, objects = output
    if not functions:
        raise no_functions_error(path)
    object_name = object_names([(token, file, local) for token, file, local, *_ in objects])
    groups = [FunctionGroup(key=key, local=local, file=file) for (key, _, local, file), *_ in functions]
    name_functions(groups)
    name_of, object_name_of = [group.name for group in groups].__getitem__, object_name.__getitem__
    function_rows = sorted(
        (
            group.name, raw, parts, address, size, instructions, fingerprint,
            sorted(set(map(name_of, callee_functions)).union(callee_stubs)),
            sorted(map(object_name_of, data_refs)),
            cold, group.local, group.file,
        )
        for group, ((_, raw, _, _), parts, address, size, instructions, fingerprint, callee_functions, callee_stubs, data_refs, cold)
        in zip(groups, functions)
    )
    object_rows = sorted(
        (name, token, address, size, section, writable, fingerprint)
        for name, (token, _, _, address, size, section, writable, fingerprint) in zip(object_name, objects)
    )
    return StaticAnalysis(
        function_rows=function_rows,
        object_rows=object_rows,
        symbol_source=symbol_source,
        decoder=DECODER_NAME,
        content_digest=digest,
        notes=[stripped_note(path)] if symbol_source == "dynsym" else [],
    )
