"""Printing results: a readable table for people, JSON for scripts and CI.

Every command that prints a table takes ``--format text|json``; JSON goes to stdout
alone, so ``selector ... --format json | jq`` always works (progress and notes go
to stderr).
"""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

FORMATS = ("text", "json")


class _Console:
    """A rich Console made when first used: JSON output (`select --format json` in CI)
    never needs rich, which takes 30 ms to import."""

    def __init__(self, **options: Any) -> None:
        self._options = options
        self._console = None

    @property
    def console(self):
        """The rich Console itself (for rich objects that take one, such as Progress)."""
        if self._console is None:
            from rich.console import Console

            self._console = Console(**self._options)
        return self._console

    def __getattr__(self, name: str) -> Any:
        return getattr(self.console, name)


# Piped output is read by people in CI logs too: do not squeeze tables into 80 columns.
stdout = _Console(soft_wrap=True, width=None if sys.stdout.isatty() else 160)
stderr = _Console(stderr=True, soft_wrap=True)


def records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    """JSON-ready rows: numpy scalars and arrays become plain Python values."""
    return json.loads(frame.to_json(orient="records", date_format="iso"))


def print_json(document: Any) -> None:
    json.dump(document, sys.stdout, indent=2)
    sys.stdout.write("\n")


def print_table(frame: pd.DataFrame, title: str | None = None, justify: dict[str, str] | None = None) -> None:
    from pandas.api.types import is_bool_dtype, is_numeric_dtype
    from rich.table import Table

    table = Table(title=title, title_justify="left", header_style="bold")
    justify = justify or {}
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
