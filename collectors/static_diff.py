"""Comparing two static analyses: which functions and data objects are new, deleted, changed."""

from __future__ import annotations

import pandas as pd

NEW, DELETED, CHANGED, UNCHANGED = "new", "deleted", "changed", "unchanged"
DIFF_COLUMNS = ["name", "status", "old_instructions", "new_instructions", "instruction_delta", "old_size", "new_size"]


def diff_functions(old: pd.DataFrame, new: pd.DataFrame, include_unchanged: bool = False) -> pd.DataFrame:
    """One row per function present in either table, keyed by the parent name.

    ``instruction_delta`` is the change of the static instruction count (new - old);
    a function counts as changed when its fingerprint differs.
    """
    merged = _outer(old, new, ["fingerprint", "instructions", "size"])
    merged["status"] = _status(merged)
    merged["old_instructions"] = merged["instructions_old"].fillna(0).astype("int64")
    merged["new_instructions"] = merged["instructions_new"].fillna(0).astype("int64")
    merged["instruction_delta"] = merged["new_instructions"] - merged["old_instructions"]
    merged["old_size"] = merged["size_old"].fillna(0).astype("int64")
    merged["new_size"] = merged["size_new"].fillna(0).astype("int64")
    if not include_unchanged:
        merged = merged[merged["status"] != UNCHANGED]
    return _ordered(merged[DIFF_COLUMNS])


def diff_objects(old: pd.DataFrame, new: pd.DataFrame) -> pd.DataFrame:
    """Data objects whose contents (pointers resolved to names) differ, appeared or went."""
    merged = _outer(old, new, ["fingerprint", "size"])
    merged["status"] = _status(merged)
    merged["old_size"] = merged["size_old"].fillna(0).astype("int64")
    merged["new_size"] = merged["size_new"].fillna(0).astype("int64")
    return _ordered(merged.loc[merged["status"] != UNCHANGED, ["name", "status", "old_size", "new_size"]])


def _outer(old: pd.DataFrame, new: pd.DataFrame, columns: list[str]) -> pd.DataFrame:
    return pd.merge(
        old[["name", *columns]], new[["name", *columns]], on="name", how="outer", suffixes=("_old", "_new")
    )


def _status(merged: pd.DataFrame) -> pd.Series:
    status = pd.Series(UNCHANGED, index=merged.index, dtype="object")
    status[merged["fingerprint_old"] != merged["fingerprint_new"]] = CHANGED
    status[merged["fingerprint_old"].isna()] = NEW
    status[merged["fingerprint_new"].isna()] = DELETED
    return status


def _ordered(frame: pd.DataFrame) -> pd.DataFrame:
    order = {NEW: 0, DELETED: 1, CHANGED: 2, UNCHANGED: 3}
    return frame.sort_values(["status", "name"], key=lambda c: c.map(order) if c.name == "status" else c).reset_index(drop=True)
