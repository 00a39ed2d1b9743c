"""perf_selector.selector.arrow_without_pandas: pyarrow's first look for pandas finds none, and pyarrow
handles pandas objects again as soon as pandas is imported (in a fresh interpreter each)."""

from __future__ import annotations

import subprocess
import sys
import textwrap


def run_fresh(code: str) -> None:
    result = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


def test_pyarrow_converts_without_importing_pandas_then_sees_it_once_imported():
    run_fresh("""
        import sys
        from perf_selector.selector.arrow_without_pandas import keep_pandas_out

        assert keep_pandas_out()
        assert not keep_pandas_out()  # once is enough
        import pyarrow as pa
        import pyarrow.compute as pc

        assert pc.equal(pa.array(["ok", "no"]), "ok").to_pylist() == [True, False]
        assert pa.Table.from_pylist([{"a": 1}]).num_rows == 1
        assert "pandas" not in sys.modules

        import pandas as pd

        # without pyarrow looking again, a Series would be taken for a plain sequence and <NA> refused
        assert pa.array(pd.Series([1, None], dtype="Int64")).to_pylist() == [1, None]
        assert pa.array(pd.Series(pd.Categorical(["x", "y"]))).type.value_type in (pa.string(), pa.large_string())
        assert pa.Table.from_pandas(pd.DataFrame({"t": pd.to_datetime(["2024-01-01"], utc=True)})).num_rows == 1
    """)


def test_nothing_is_kept_out_once_pandas_is_loaded():
    run_fresh("""
        import pandas as pd
        import pyarrow as pa
        from perf_selector.selector.arrow_without_pandas import keep_pandas_out

        assert not keep_pandas_out()
        assert pa.array(pd.Series([1, None], dtype="Int64")).to_pylist() == [1, None]
    """)
