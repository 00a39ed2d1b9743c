"""Writes docs/features.md from the catalogue: `python -m features.docs [PATH]`."""

from __future__ import annotations

import sys
from pathlib import Path

from perf_selector.features import catalogue

HEADER = """# Features

Generated from `features/catalogue.py` by `python -m features.docs`; do not edit by hand
(a test fails when this file and the catalogue disagree).

One row per tuple `(c_n, c_o, b)`: `c_o` is the closest ancestor of `c_n` (merges
included) with measurements and a profile of benchmark `b`.
"""


def render() -> str:
    conventions = next(p for p in catalogue.__doc__.split("\n\n") if p.startswith("Conventions"))
    lines = [HEADER, " ".join(conventions.split()), "",
             f"Constants: TOP_N = {catalogue.TOP_N}, RECENT_LABELS = {catalogue.RECENT_LABELS}, "
             f"LENGTH_CHANGE = {catalogue.LENGTH_CHANGE:.0%}, STARTUP_CALLS = {catalogue.STARTUP_CALLS}, STARTUP_OWN_SHARE = {catalogue.STARTUP_OWN_SHARE:.0%}.", ""]
    for source in ("Sousa 1.3", "Perphecy 6.2", "extension"):
        title = {"Sousa 1.3": "Sousa 2019, Table 1.3", "Perphecy 6.2": "Perphecy (de Oliveira 2015), Table 6.2",
                 "extension": "Extensions (DESIGN.md)"}[source]
        lines += [f"## {title}", "", "| feature | definition | rationale |", "|---|---|---|"]
        lines += [f"| `{f.name}` | {f.definition} | {f.rationale} |" for f in catalogue.CATALOGUE if f.source == source]
        lines.append("")
    return "\n".join(lines)


if __name__ == "__main__":
    target = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parent.parent / "docs" / "features.md"
    target.write_text(render())
    print(f"wrote {target}")
