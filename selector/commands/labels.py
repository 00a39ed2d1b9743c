"""`selector labels`: the store's labels, which pairs changed, by how much, decided how and why."""

from __future__ import annotations

import csv
import io
import sys
from pathlib import Path

import click

from perf_selector.selector.commands.common import DEFAULT_STORE, repo_option, store_option
from perf_selector.selector.tables import print_json, print_rows

COLUMNS = ["new", "old", "benchmark", "metric", "label", "effect", "p_value", "spread", "decided_by", "reason"]
STATES = {"changed": True, "unchanged": False, "undecided": None}


def label_rows(store, commit: str | None = None, benchmark: str | None = None, state: str | None = None) -> list[dict]:
    """The stored labels as rows (COLUMNS), newest commit pairs first as stored, filtered by the
    new commit (a full id or a prefix), the benchmark and the state (STATES)."""
    table = store.read("labels")
    rows = table.select([c for c in COLUMNS if c in table.column_names]).to_pylist() if table.num_rows else []
    chosen = []
    for row in rows:
        if commit and not str(row["new"]).startswith(commit):
            continue
        if benchmark and row["benchmark"] != benchmark:
            continue
        if state is not None and row.get("label") is not STATES[state]:
            continue
        row["label"] = {True: "changed", False: "unchanged"}.get(row.get("label"), "undecided")
        chosen.append(row)
    return chosen


@click.command("labels")
@repo_option("The git repository whose store is read.")
@store_option(f"The store to read (directory or fsspec URL) [default: {DEFAULT_STORE}/ in the repository].")
@click.option("--commit", help="Only the pairs whose new commit is this one (a revision, or an id's prefix).")
@click.option("--benchmark", help="Only this benchmark's pairs.")
@click.option("--state", type=click.Choice(list(STATES)), help="Only the changed, unchanged or undecided pairs.")
@click.option("--format", "output_format", type=click.Choice(["text", "json", "csv"]), default="text", show_default=True,
              help="text for people; json or csv for scripts (alone on stdout).")
def labels_command(repository: Path, store_location: str | None, commit: str | None, benchmark: str | None,
                   state: str | None, output_format: str) -> None:
    """The store's labels: for each pair of a commit and the ancestor it was compared with, and
    each benchmark, whether it changed (changed, unchanged or undecided), the relative effect of
    the median, the test's p-value, the spread the effect had to exceed, what decided the label
    (`exact`, `test`, `equivalence`, a confirmation, perturbed contexts) and why."""
    from perf_selector.selector.commands.common import open_store

    store = open_store(repository, store_location)
    rows = label_rows(store, _resolved(repository, commit), benchmark, state)
    if output_format == "json":
        print_json(rows)
    elif output_format == "csv":
        buffer = io.StringIO()
        writer = csv.DictWriter(buffer, fieldnames=COLUMNS, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)
        sys.stdout.write(buffer.getvalue())
    else:
        shown = [{**row, "new": str(row["new"])[:10], "old": str(row["old"])[:10]} for row in rows]
        changed = sum(row["label"] == "changed" for row in rows)
        print_rows(shown, title=f"{len(rows)} labelled pairs, {changed} changed")


def _resolved(repository: Path, commit: str | None) -> str | None:
    """A revision as the full id it names, or the text itself (a prefix) where git does not know it."""
    if not commit:
        return None
    from perf_selector.collectors.errors import UserError
    from perf_selector.collectors.repository import Repository

    try:
        found = Repository.open(repository).commit(commit)
    except UserError:
        return commit
    return found.sha if found is not None else commit
