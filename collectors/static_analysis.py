"""Static analysis of one binary: the entry point, which chooses the implementation.

The work is done by the compiled core (:mod:`collectors.native_analysis`) or by the
Python reference implementation (:mod:`collectors.python_analysis`); both give the same
tables, :class:`collectors.analysis_tables.StaticAnalysis`.  Imports run one way: this
module imports the implementations (lazily: the push path loads only the one it runs),
and they import :mod:`collectors.analysis_tables`, never this module.
"""

from __future__ import annotations

import os
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TYPE_CHECKING

from perf_selector.collectors.analysis_tables import FUNCTION_COLUMNS, OBJECT_COLUMNS, StaticAnalysis

if TYPE_CHECKING:
    from perf_selector.collectors.decoder import Decoder

__all__ = ["FUNCTION_COLUMNS", "OBJECT_COLUMNS", "AnalysisInProgress", "StaticAnalysis", "analyse_binary", "content_digest"]


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
        from perf_selector.collectors.native_analysis import analyse_natively

        analysis = analyse_natively(path)
        if analysis is not None:
            return analysis
    from perf_selector.collectors.python_analysis import analyse_in_python

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

    def __init__(self, path: str | os.PathLike[str], jobs: int = 1) -> None:
        self.path = path
        self.jobs = jobs  # for the Python implementation, as analyse_binary's
        self._core: Future | None = None
        if _native_wanted():
            from perf_selector.collectors.native_analysis import run_core

            executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="selector-analysis")
            self._core = executor.submit(run_core, path)
            executor.shutdown(wait=False)  # the submitted analysis runs on; nothing more is submitted

    def result(self) -> StaticAnalysis:
        if self._core is not None:
            output = self._core.result()
            if output is not None:
                from perf_selector.collectors.native_analysis import tabulate

                return tabulate(self.path, output)
        from perf_selector.collectors.python_analysis import analyse_in_python

        return analyse_in_python(self.path, jobs=self.jobs)


def _native_wanted() -> bool:
    return os.environ.get("SELECTOR_NATIVE", "1") != "0"


def content_digest(path: str | os.PathLike[str]) -> str:
    """The digest under which an analysis of this binary can be reused (cheap: no decoding)."""
    from perf_selector.collectors.elf_image import ElfImage

    return ElfImage.load(path).content_digest()
