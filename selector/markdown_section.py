"""A generated section of a Markdown file: the text between two markers, rewritten in place so
the prose around it stays (docs/evaluation.md holds several, one per `selector evaluate` mode)."""

from __future__ import annotations

from pathlib import Path


def write_section(path: Path, begin: str, end: str, generated: str, heading: str) -> None:
    """Put `generated` between `begin` and `end` in `path`.  Where the markers are not found,
    the section is appended under `heading`, the markers included for next time (a new file
    starts with "# Evaluation")."""
    section = f"{begin}\n{generated}{end}"
    text = path.read_text() if path.exists() else ""
    if begin in text and end in text:
        before, rest = text.split(begin, 1)
        path.write_text(before + section + rest.split(end, 1)[1])
    else:
        path.write_text(f"{text.rstrip() or '# Evaluation'}\n\n## {heading}\n\n{section}\n")


def number(value) -> str:
    """A figure of a generated table: three decimals, "-" for a missing one (NaN, or None: a document
    read back from JSON, or records() of a frame, holds NaN as null)."""
    return "-" if value is None or value != value else f"{value:.3f}"
