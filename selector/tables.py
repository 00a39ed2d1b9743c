"""Printing results: a readable table for people, JSON for scripts and CI.

Every command that prints a table takes ``--format text|json``; JSON goes to stdout
alone, so ``selector ... --format json | jq`` always works (progress and notes go
to stderr).
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from typing import TYPE_CHECKING, Any, Callable, Iterable

if TYPE_CHECKING:
    import pandas as pd

FORMATS = ("text", "json")


class _Console:
    """A rich Console made when first used: JSON output (`select --format json` in CI)
    never needs rich, whose import is not free."""

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


PIPED_WIDTH = 160  # columns: piped output is read by people in CI logs too, do not squeeze it into 80


def terminal_width() -> int:
    """How wide a line may be: $COLUMNS when set, the terminal's width, PIPED_WIDTH when
    stdout is not a terminal (rich decides its tables' width alike)."""
    columns = os.environ.get("COLUMNS", "")
    if columns.isdigit() and int(columns) > 0:
        return int(columns)
    if sys.stdout.isatty():
        return shutil.get_terminal_size().columns
    return PIPED_WIDTH


stdout = _Console(soft_wrap=True, width=None if sys.stdout.isatty() else PIPED_WIDTH)
stderr = _Console(stderr=True, soft_wrap=True)


def records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    """JSON-ready rows: numpy scalars and arrays become plain Python values."""
    return json.loads(frame.to_json(orient="records", date_format="iso"))


def print_json(document: Any) -> None:
    json.dump(document, sys.stdout, indent=2)
    sys.stdout.write("\n")


def print_table(frame: pd.DataFrame, title: str | None = None, justify: dict[str, str] | None = None) -> None:
    from pandas.api.types import is_bool_dtype, is_numeric_dtype

    numeric = {column: is_numeric_dtype(frame[column]) and not is_bool_dtype(frame[column]) for column in frame.columns}
    _print(list(frame.columns), numeric, frame.itertuples(index=False), title, justify)


def print_rows(rows: list[dict[str, Any]], title: str | None = None, justify: dict[str, str] | None = None,
               plain: bool = False) -> None:
    """:func:`print_table` of rows given as dicts (without pandas: `select` prints this way).
    `plain`: aligned columns without rich, whatever the length (see :func:`_print`)."""
    columns = list(rows[0]) if rows else []
    numeric = {column: all(isinstance(row[column], (int, float)) and not isinstance(row[column], bool) for row in rows)
               for column in columns}
    _print(columns, numeric, ([row[column] for column in columns] for row in rows), title, justify, plain)


def fit_rows(rows: list[dict[str, Any]], shorten: dict[str, Callable[[str, int], str]], width: int,
             minimum: int = 24) -> list[dict[str, Any]]:
    """`rows` with the text of the columns in `shorten` cut (each by its function of text and
    width) so that their plain table (:func:`print_rows` with `plain`) fits in `width`
    columns.  The first of them has priority; each other gets at most a third of the room."""
    if not rows:
        return rows
    columns = list(rows[0])
    widths = {column: max(len(str(column)), *(len(_cell(row[column])) for row in rows)) for column in columns}
    room = width - sum(widths[c] for c in columns if c not in shorten) - 2 * (len(columns) - 1)
    if sum(widths[c] for c in shorten) <= room:
        return rows
    first, *others = shorten
    budget = {column: max(len(str(column)), min(widths[column], room // 3)) for column in others}
    budget[first] = max(minimum, room - sum(budget.values()))
    return [{**row, **{column: cut(row[column], budget[column]) for column, cut in shorten.items()
                       if len(row[column]) > budget[column]}} for row in rows]


PLAIN_ABOVE = 300  # rows: a longer table is printed as plain aligned text


def _print(columns: list, numeric: dict, rows: Iterable, title: str | None, justify: dict[str, str] | None,
           plain: bool = False) -> None:
    """A table through rich, boxed; a long one (the functions of a large binary) as plain
    aligned columns, which print far faster (rich takes seconds on libpython's 5,333 rows)."""
    rows = list(rows)
    if plain or len(rows) > PLAIN_ABOVE:
        _print_plain(columns, numeric, rows, title, justify or {})
        return
    from rich.table import Table

    table = Table(title=title, title_justify="left", header_style="bold")
    justify = justify or {}
    for column in columns:
        table.add_column(str(column), justify=justify.get(column, "right" if numeric[column] else "left"), overflow="fold")
    for row in rows:
        table.add_row(*(_cell(value) for value in row))
    stdout.print(table)


def _print_plain(columns: list, numeric: dict, rows: list, title: str | None, justify: dict[str, str]) -> None:
    cells = [[_cell(value) for value in row] for row in rows]
    header = [str(column) for column in columns]
    widths = [max([len(header[j]), *(len(row[j]) for row in cells)]) for j in range(len(columns))]
    right = [justify.get(column, "right" if numeric[column] else "left") == "right" for column in columns]

    def line(values: list[str]) -> str:
        return "  ".join(value.rjust(width) if r else value.ljust(width) for value, width, r in zip(values, widths, right)).rstrip()

    text = [title] if title else []
    text += [line(header), line(["-" * width for width in widths]), *(line(row) for row in cells)]
    sys.stdout.write("\n".join(text) + "\n")


def _cell(value: Any) -> str:
    if isinstance(value, (list, tuple)):
        return ", ".join(map(str, value))
    if hasattr(value, "tolist"):  # numpy arrays (lists read back from Parquet) and numpy scalars
        value = value.tolist()
        if isinstance(value, list):
            return ", ".join(map(str, value))
    if isinstance(value, float):
        return rounded(value)
    return str(value)


def rounded(value: float) -> str:
    """A number as a person reads it: three significant digits (0.923, -0.539), whole
    numbers with thousands separators from 1,000 up (1,019,475)."""
    if value != value or value in (float("inf"), float("-inf")):
        return str(value)
    if abs(value) >= 1000:
        return f"{value:,.0f}"
    return f"{value:.3g}"


FEW_POSITIVES = 10  # below this many test positives a hit rate moves by 0.1 or more with one miss


def caution_few_positives(rows: Iterable[dict], who: Callable[[dict], str]) -> None:
    """One caution on stderr naming the rows whose figures rest on fewer than FEW_POSITIVES
    test positives (a hit rate of 1.0 from 2 positives says little)."""
    few = [f"{who(row)} ({row['positives']})" for row in rows
           if row.get("positives") is not None and row["positives"] < FEW_POSITIVES]
    if few:
        stderr.print(f"[yellow]caution:[/] fewer than {FEW_POSITIVES} test positives behind the hit rates and AUROC of "
                     f"{', '.join(dict.fromkeys(few))}: one more or one fewer change moves them by a tenth or more")


class LogProgress:
    """Progress for a log file (stderr is not a terminal, where rich draws nothing until the end):
    a line for the first step, then one at most every `every` seconds, and one for the last, each
    with the count, the time so far and the time left at the pace so far."""

    def __init__(self, what: str, total: int | None, every: float = 30.0) -> None:
        import time

        self.what, self.total, self.every = what, total, every
        self.done, self._clock = 0, time.monotonic
        self.worked = 0  # steps that did work: a resumed run's stored steps take no time and set no pace
        self.started = self._last = self._clock()
        self._said = False

    def advance(self, detail: str = "", steps: int = 1, worked: bool = True) -> None:
        """`worked`: False for steps that did nothing (already done): the time left is the pace of
        the steps that worked times the steps still to do."""
        self.done += steps
        self.worked += steps if worked else 0
        now = self._clock()
        finished = self.total is not None and self.done >= self.total
        if self._said and not finished and now - self._last < self.every:
            return
        self._said, self._last = True, now
        elapsed = now - self.started
        left = elapsed / self.worked * (self.total - self.done) if self.total and self.worked else None
        count = f"{self.done}/{self.total}" if self.total is not None else str(self.done)
        stderr.print(f"{self.what}: {count} after {_duration(elapsed)}" + (f", about {_duration(left)} left" if left else "")
                     + (f" ({detail})" if detail else ""), markup=False, highlight=False, soft_wrap=True)


def _duration(seconds: float) -> str:
    minutes, seconds = divmod(int(round(seconds)), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m" if hours else f"{minutes}m{seconds:02d}s" if minutes else f"{seconds}s"


def logging_progress() -> bool:
    """Is stderr a log (not a terminal)?  Then long commands write LogProgress lines."""
    return not stderr.is_terminal
