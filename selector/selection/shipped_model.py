"""The cross-project model shipped with the package, for a project that has no model of its own.

It is a model bundle like the ones `selector train` writes (ONNX and skops files, a
manifest, its SHA-256 seal beside it; no pickle, refused when altered), trained by
`selector evaluate --write-model` on the development corpus (corpus/: several C
projects' histories) with the benchmark's identity left out of its inputs, so it applies
to any benchmark of any project.  `select` uses it when the store has no bundle, and
for a benchmark whose own model learnt from fewer than OWN_POSITIVES_NEEDED changes
(a threshold picked on a handful of positives does not hold): the selection says so.
"""

from __future__ import annotations

from pathlib import Path

SHIPPED_BUNDLE = Path(__file__).parent.parent / "data" / "cross-project"
# Below this many performance changes in its training tuples, a project's own model yields
# to the shipped one: 19 is the fewest from which any threshold can promise a 95% hit rate
# on the next changes (the split-conformal bound, models.evaluation).  Measured on the corpus
# (docs/evaluation.md): switching to the own model at 5 changes caught 0.42-0.57 of the
# changes, at 19 it keeps the cross-project model's 0.98.
OWN_POSITIVES_NEEDED = 19


def shipped_bundle_path() -> Path | None:
    """The shipped bundle's directory, or None when this install carries none."""
    return SHIPPED_BUNDLE if (SHIPPED_BUNDLE / "manifest.json").is_file() else None


def describe(trained_on: dict) -> str:
    projects = trained_on.get("projects") or []
    return (f"the shipped cross-project model (trained on {trained_on.get('tuples', '?')} tuples of "
            f"{len(projects)} projects: {', '.join(projects)})")
