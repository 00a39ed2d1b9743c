"""Comparing two static analyses: which functions and data objects are new, deleted, changed.

Works on the Arrow tables of the analyses (``StaticAnalysis.functions``, or a
store's ``functions`` table) or on their rows as dicts (``StaticAnalysis.function_records()``:
`selector diff` does not wait for pyarrow's import), and returns plain rows, so
`selector diff` runs on the core install, without pandas.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Union

from perf_selector.collectors.metrics import INSTRUCTIONS

if TYPE_CHECKING:
    import pyarrow as pa

    Rows = Union[pa.Table, list[dict[str, Any]]]

NEW, DELETED, CHANGED, UNCHANGED = "new", "deleted", "changed", "unchanged"
DIFF_COLUMNS = ["name", "status", "old_instructions", "new_instructions", "instruction_delta", "old_size", "new_size"]
OBJECT_DIFF_COLUMNS = ["name", "status", "old_size", "new_size"]
_ORDER = {NEW: 0, DELETED: 1, CHANGED: 2, UNCHANGED: 3}


def diff_functions(old: Rows, new: Rows, include_unchanged: bool = False) -> list[dict[str, Any]]:
    """One row (DIFF_COLUMNS) per function present in either table, keyed by the parent name.

    ``instruction_delta`` is the change of the static instruction count (new - old);
    a function counts as changed when its fingerprint differs.
    """
    rows = []
    for name, before, after in _outer(old, new, ["fingerprint", INSTRUCTIONS.name, "size"]):
        status = _status(before, after)
        if status == UNCHANGED and not include_unchanged:
            continue
        old_instructions, new_instructions = before.get(INSTRUCTIONS.name, 0), after.get(INSTRUCTIONS.name, 0)
        rows.append({"name": name, "status": status, "old_instructions": old_instructions, "new_instructions": new_instructions,
                     "instruction_delta": new_instructions - old_instructions,
                     "old_size": before.get("size", 0), "new_size": after.get("size", 0)})
    return _ordered(rows)


def diff_objects(old: Rows, new: Rows) -> list[dict[str, Any]]:
    """Data objects (OBJECT_DIFF_COLUMNS) whose contents (pointers resolved to names) differ, appeared or went."""
    rows = [{"name": name, "status": status, "old_size": before.get("size", 0), "new_size": after.get("size", 0)}
            for name, before, after in _outer(old, new, ["fingerprint", "size"])
            if (status := _status(before, after)) != UNCHANGED]
    return _ordered(rows)


def _outer(old: Rows, new: Rows, columns: list[str]) -> list[tuple[str, dict, dict]]:
    """(name, old row, new row) for every name of either table; a missing side is an empty dict."""
    before = _by_name(old, columns)
    after = _by_name(new, columns)
    return [(name, before.get(name, {}), after.get(name, {})) for name in before.keys() | after.keys()]


def _by_name(table: Rows, columns: list[str]) -> dict[str, dict]:
    if isinstance(table, list):
        return {row["name"]: row for row in table}
    if table.num_rows == 0:
        return {}
    return {row["name"]: row for row in table.select(["name", *columns]).to_pylist()}


def _status(before: dict, after: dict) -> str:
    if not before:
        return NEW
    if not after:
        return DELETED
    return CHANGED if before["fingerprint"] != after["fingerprint"] else UNCHANGED


def _ordered(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(rows, key=lambda row: (_ORDER[row["status"]], row["name"]))
