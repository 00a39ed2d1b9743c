"""Labels under perturbation, project by project (issue 37): of the pairs the normalised
context labels changed, how many hold in every perturbed context `collect` re-measured them
in (`[labels] perturbed_contexts`, selector/collection/perturbed_labels.py), and how many labels the
relabelling changed.

The labels are made twice from the store's tables (selector.confirmation.current_labels, which
writes nothing): once without the `perturbed` table, as the store would label with no
perturbed runs, and once with it, as `collect` labels now.  A changed label the perturbed runs
turn undecided is one the relabelling changed; a changed label without runs in every
configured context was not checked (a collection stopped before its checks ran).
Usage: python corpus/perturbation_counts.py STORE[=CONFIG]... [--markdown]
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd

from perf_selector.collectors.errors import UserError
from perf_selector.selector.config import label_rules
from perf_selector.selector.collection.confirmation import current_labels
from perf_selector.selector.markdown_section import number
from perf_selector.selector.collection.perturbed_labels import TABLE, configured_contexts, stored_contexts
from perf_selector.selector.evaluation.project_evaluation import open_project


def changed_pairs(labels: list[dict]) -> set[tuple[str, str, str]]:
    """(new, old, benchmark) of every changed closest-ancestor label."""
    return {(row["new"], row["old"], row["benchmark"]) for row in labels if row["label"] is True}


def project_counts(store_path: Path, config_path: Path | None) -> dict:
    name, store, config = open_project(store_path, config_path)
    rules = label_rules(config)
    before = changed_pairs(current_labels(store, rules, perturbed=False))
    after = changed_pairs(current_labels(store, rules))
    contexts = set(configured_contexts(config))
    stored = stored_contexts(store.read(TABLE))
    checked = {pair for pair in before if contexts and contexts <= stored.get(pair, set())}
    held = checked & after
    return {"project": name, "contexts": len(contexts), "changed_normalised": len(before), "checked": len(checked),
            "held_in_all": len(held), "held_share": len(held) / len(checked) if checked else float("nan"),
            "relabelled": len(before - after), "unchecked": len(before - checked)}


def markdown(table: pd.DataFrame) -> str:
    lines = ["| project | perturbed contexts | changed (normalised context) | checked in every context | held in all | "
             "share held | relabelled (changed to undecided) | not checked |", "|---|---|---|---|---|---|---|---|"]
    for row in table.itertuples(index=False):
        lines.append(f"| {row.project} | {row.contexts} | {row.changed_normalised} | {row.checked} | {row.held_in_all} | "
                     f"{number(row.held_share)} | {row.relabelled} | {row.unchecked} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("stores", nargs="+", help="STORE or STORE=CONFIG (default: selector.toml beside the store)")
    parser.add_argument("--markdown", action="store_true", help="print a Markdown table")
    arguments = parser.parse_args()
    rows = []
    for given in arguments.stores:
        store, _, config = given.partition("=")
        try:
            rows.append(project_counts(Path(store), Path(config) if config else None))
        except UserError as error:
            parser.exit(2, f"perturbation_counts.py: {error}\n")
    table = pd.DataFrame(rows)
    print(markdown(table) if arguments.markdown else table.to_string(index=False))


if __name__ == "__main__":
    main()
