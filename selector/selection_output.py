"""Printing a selection: text for people, JSON for scripts, GitHub Actions outputs for CI.

Exit statuses of `selector select` (like grep): 0 when some benchmark should run,
1 when none needs to, 2 for a usage or input error, 3 for an internal error in
``--strict`` mode (without it, an internal error selects every benchmark, exit 0).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from selector.selection import Selection
from selector.tables import print_json, print_rows, stderr, stdout

EXIT_RUN, EXIT_NOTHING, EXIT_ERROR, EXIT_INTERNAL = 0, 1, 2, 3


def exit_status(selection: Selection) -> int:
    return EXIT_RUN if selection.run else EXIT_NOTHING


def print_selection(selection: Selection, output_format: str, compared: list[dict] | None = None) -> None:
    """`compared`: the rows of `--run-benchmarks` (selector.verify), which the JSON document
    carries as ``compared`` so that stdout stays one JSON document; other formats print
    them as a table afterwards."""
    if output_format == "json":
        print_json(selection.document() | ({"compared": compared} if compared is not None else {}))
    elif output_format == "github":
        write_github_outputs(selection)
    else:
        print_text(selection)


def print_text(selection: Selection) -> None:
    rows = []
    for d in selection.benchmarks:
        rows.append({
            "benchmark": d.name, "decision": d.decision.upper(),
            "p": "" if d.probability is None else f"{d.probability:.2f}",
            "threshold": "" if d.threshold is None or d.threshold == float("-inf") else f"{d.threshold:.2f}",
            "against": f"{d.against[:10]} ({d.hops} back)" if d.against else "", "why": d.reason,
        })
    print_rows(rows, title=f"benchmarks for {selection.commit[:12]}")
    for d in selection.benchmarks:
        if d.drivers:
            shown = ", ".join(
                f"{x.function} ({x.change}, rank {x.rank_instructions:.0f}, {x.instruction_delta:+d} instr)" if x.change != "data"
                else f"{x.function} (data it reads changed)" for x in d.drivers)
            stdout.print(f"  {d.name}: {shown}")
    for note in selection.notes:
        stderr.print(f"note: {note}")
    stdout.print(f"run: {' '.join(selection.run) if selection.run else '(nothing)'}")


def write_github_outputs(selection: Selection) -> None:
    """`run`, `matrix` (for strategy.matrix: fromJSON) and `any` into $GITHUB_OUTPUT; a summary table
    into $GITHUB_STEP_SUMMARY when GitHub provides one.  Outside Actions, the outputs go to stdout."""
    lines = [
        f"run={json.dumps(selection.run)}",
        f"matrix={json.dumps({'benchmark': selection.run})}",
        f"any={'true' if selection.run else 'false'}",
    ]
    target = os.environ.get("GITHUB_OUTPUT")
    if target:
        with open(target, "a", encoding="utf-8") as handle:
            handle.write("\n".join(lines) + "\n")
    else:
        stdout.print("\n".join(lines), markup=False, highlight=False)
    summary = os.environ.get("GITHUB_STEP_SUMMARY")
    if summary:
        table = ["| benchmark | decision | p | why |", "|---|---|---|---|"] + [
            f"| {d.name} | {d.decision} | {'' if d.probability is None else f'{d.probability:.2f}'} | {d.reason} |"
            for d in selection.benchmarks
        ]
        Path(summary).open("a", encoding="utf-8").write(f"### perf-selector: {selection.commit[:12]}\n\n" + "\n".join(table) + "\n")
    stderr.print(f"run: {' '.join(selection.run) if selection.run else '(nothing)'}")
