"""Rows as Arrow tables: the one table type of the collectors, the store and the features.

Collectors gather plain Python rows and tabulate them here; the store casts what it
writes to its declared types (storage.schema), so these builders only need to get the
values right, not the exact Arrow types.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterable

if TYPE_CHECKING:
    import pyarrow as pa


def table_of_rows(rows: list[tuple], columns: list[str]) -> pa.Table:
    """The table of `rows`, a column at a time: string columns large_string, as the store
    declares them, so the table concatenates with stored ones as it is.  No rows: the
    columns, typed null."""
    import pyarrow as pa  # here: `select` analyses its binary while pyarrow is imported

    if not rows:
        return pa.table({name: pa.array([], pa.null()) for name in columns})
    arrays = [pa.array(values, pa.large_string()) if isinstance(values[0], str) else pa.array(values)
              for values in zip(*rows)]
    return pa.table(arrays, names=columns)


def with_constants(table: pa.Table, **values: Any) -> pa.Table:
    """`table` with each named column set to one value on every row (added, or replaced)."""
    import pyarrow as pa

    for name, value in values.items():
        scalar = pa.scalar(value, pa.large_string()) if isinstance(value, str) else pa.scalar(value)
        column = pa.repeat(scalar, table.num_rows)
        where = table.schema.get_field_index(name)
        table = table.set_column(where, name, column) if where >= 0 else table.append_column(name, column)
    return table


def concatenated(tables: Iterable[pa.Table]) -> pa.Table:
    """One table of all rows; columns missing from some are null there, and types are
    widened where they differ (string and large_string, null and anything)."""
    import pyarrow as pa

    tables = [table for table in tables if table.num_columns]
    if not tables:
        return pa.table({})
    return pa.concat_tables(tables, promote_options="permissive")
