"""pyarrow without pandas, for the commands a push waits for.

pyarrow looks for pandas the first time it converts Python or numpy values (``pa.array``,
``pa.scalar``, even a string compared in ``pyarrow.compute``), to tell pandas objects
apart, and importing pandas to look costs about as much as the rest of a
`selector select` (docs/performance.md; `benchmarks/pandas_guard.py`
measures it), which hands pyarrow no pandas object.  No change of ours avoids that
look, so this guard is the push path's one exception to "one table type, no
workarounds" (DESIGN.md: kept where a measurement on the push path demands it).  :func:`keep_pandas_out` lets
that first look find no pandas, and pyarrow remembers the answer.

pyarrow must not go on believing it once pandas is imported after all (the scoring of a
borderline probability, or `--run-benchmarks`, use pandas): a pandas Series would then
be converted as a plain sequence, and a missing value in it refused.  So the import of
pandas is watched, and as soon as it has run pyarrow is made to look again (through
``Table.to_pandas``, which reloads its pandas integration when it finds pandas there).
"""

from __future__ import annotations

import importlib.abc
import importlib.util
import sys


class _PandasWatch(importlib.abc.MetaPathFinder):
    """First refuses pandas (while pyarrow takes its look), then lets its import run and
    has pyarrow look again right after."""

    def __init__(self) -> None:
        self.refusing = True

    def find_spec(self, name, path=None, target=None):
        if name != "pandas":
            return None
        if self.refusing:
            raise ImportError("pandas is kept out of pyarrow's first look (selector.arrow_without_pandas)")
        sys.meta_path.remove(self)  # once: the real finders locate pandas from here on
        spec = importlib.util.find_spec(name)
        if spec is None or spec.loader is None:
            return spec
        execute = spec.loader.exec_module

        def exec_module(module) -> None:
            execute(module)
            _pyarrow_looks_again()

        spec.loader.exec_module = exec_module
        return spec


def keep_pandas_out() -> bool:
    """Let pyarrow's first look for pandas find none; returns whether it was kept out.
    Does nothing once pandas is loaded (pyarrow may have looked already, and found it)."""
    if "pandas" in sys.modules or any(isinstance(finder, _PandasWatch) for finder in sys.meta_path):
        return False
    import pyarrow as pa

    watch = _PandasWatch()
    sys.meta_path.insert(0, watch)
    try:
        pa.array([0])  # the first conversion: pyarrow looks for pandas, finds none, and remembers
    finally:
        watch.refusing = False
    return True


def _pyarrow_looks_again() -> None:
    import pyarrow as pa

    pa.table({}).to_pandas()
