"""Printing results: a readable table for people, JSON for scripts and CI.

Every command that prints a table takes ``--format text|json``; JSON goes to stdout
alone, so ``selector ... --format json | jq`` always works (progress and notes go
to stderr).
"""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.table import Table

if TYPE_CHECKING:
    import pandas as pd

FORMATS = ("text", "json")

# Piped output is read by people in CI logs too: do not squeeze tables into 80 columns.
stdout = Console(soft_wrap=True, width=None if sys.stdout.isatty() else 160)
stderr = Console(stderr=True, soft_wrap=True)


def records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    """JSON-ready rows: numpy scalars and arrays become plain Python values."""
    return json.loads(frame.to_json(orient="records", date_format="iso"))


def print_json(document: Any) -> None:
    json.dump(document, sys.stdout, indent=2)
    sys.stdout.write("\n")


def print_table(frame: pd.DataFrame, title: str | None = None, justify: dict[str, str] | None = None) -> None:
    table = Table(title=title, title_justify="left", header_style="bold")
    justify = justify or {}
    from pandas.api.types import is_bool_dtype, is_numeric_dtype

    for column in frame.columns:
        numeric = is_numeric_dtype(frame[column]) and not is_bool_dtype(frame[column])
        table.add_column(str(column), justify=justify.get(column, "right" if numeric else "left"), overflow="fold")
    for row in frame.itertuples(index=False):
        table.add_row(*(_cell(value) for value in row))
    stdout.print(table)


def _cell(value: Any) -> str:
    if isinstance(value, (list, tuple)):
        return ", ".join(map(str, value))
    if hasattr(value, "tolist"):  # numpy arrays (lists read back from Parquet) and numpy scalars
        value = value.tolist()
        return ", ".join(map(str, value)) if isinstance(value, list) else str(value)
    return str(value)
