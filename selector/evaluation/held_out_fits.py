"""One learner's fits over every nesting of a corpus held out in turn, each made once.

A learner judged across projects is fitted on sets of them at three depths: on all but A (to
decide A), on all but A and B (to place that fit's operating point on B, or to judge, inside a
bundle trained without A, the policy it earns on B), on all but A, B and C (the operating
point of that one).  The same set of projects is asked for again and again from different
hold-outs: the fit on all but A and B decides B inside A's hold-out and A inside B's.  Here
each fit is made once per set and kept as the scores it gives every project it was not
trained on:

- inner fits (the out-of-project scores a threshold is placed on: models.paired_fits), and
- outer fits (a model trained as shipped, with its operating point: a project's held-out
  scores and threshold, as held_out_scores gives them).

With a folder (an evaluation's `fits/`), both outlive the run, keyed by the digests of the
projects trained on (in the order training concatenates them: by name), the learner, its settings and the code
(evaluation_parts.Parts): `evaluate`, `evaluate --shipped --held-out`, `--replay --held-out`
and corpus/risk_bound.py, given the same folder, share what the others fitted, and a run cut
off half way resumes.
"""

from __future__ import annotations

from typing import Callable

import numpy as np
import pandas as pd

from perf_selector.models.paired_fits import PairedFits
from perf_selector.models.registry import positive_scores
from perf_selector.selector.evaluation.evaluation_parts import Parts


class FitShelf:
    """The scores of fits kept in `parts` by the projects they were trained on (models.paired_fits.Shelf).
    Each project scored is named with its digest: a project of the same name with other tuples is another."""

    def __init__(self, parts: Parts, kind: str, settings: list, digests: dict[str, str]) -> None:
        self.parts, self.kind, self.settings, self.digests = parts, kind, settings, digests
        self.order = list(digests)  # the training order: rows are concatenated in it

    def key(self, trained_on: frozenset) -> str:
        return self.parts.key(self.kind, self.settings, [(name, self.digests[name]) for name in self.order if name in trained_on])

    def load(self, trained_on: frozenset) -> dict | None:
        """What the fit on `trained_on` gave (its scores by project, and anything else saved), or None."""
        value = self.parts.load(self.key(trained_on))
        if not isinstance(value, dict):
            return None
        scores = {name: value["scores"][f"{name}:{digest}"] for name, digest in self.digests.items()
                  if f"{name}:{digest}" in value.get("scores", {})}
        return {**value, "scores": scores}

    def save(self, trained_on: frozenset, scores: dict[str, np.ndarray], **more) -> None:
        """Adds `scores` (by project) to what is kept of the fit on `trained_on`, with `more`."""
        key = self.key(trained_on)
        kept = self.parts.load(key)
        named = {**(kept or {}).get("scores", {}), **{f"{name}:{self.digests[name]}": s for name, s in scores.items()}}
        self.parts.save(key, {**(kept or {}), **more, "scores": named})


class InnerShelf:
    """The Shelf models.paired_fits.PairedFits keeps its fits on: scores alone."""

    def __init__(self, shelf: FitShelf) -> None:
        self.shelf = shelf

    def load(self, trained_on: frozenset) -> dict[str, np.ndarray] | None:
        kept = self.shelf.load(trained_on)
        return None if kept is None else kept["scores"]

    def save(self, trained_on: frozenset, scores: dict[str, np.ndarray]) -> None:
        self.shelf.save(trained_on, scores)


class HeldOutFits:
    """`settings` (the learner and how it is trained) fitted on sets of the projects of `design`
    (each project's model inputs, its rows as every training holds them).  `keep`: every kept
    score handed out as often as asked (three levels of nesting ask for some twice).  `parts`
    and `digests` (by project, in the training order): kept across runs."""

    def __init__(self, design: dict[str, pd.DataFrame], settings: list, keep: bool = False, parts: Parts | None = None,
                 digests: dict[str, str] | None = None) -> None:
        self.design, self.settings = design, settings
        shelved = parts is not None and parts.directory is not None and digests is not None
        self.inner = PairedFits(design, keep, InnerShelf(FitShelf(parts, "inner-fit", settings, digests)) if shelved else None)
        self.outer_shelf = FitShelf(parts, "outer-fit", settings, digests) if shelved else None
        self.outer: dict[frozenset, tuple[float, dict[str, np.ndarray]]] = {}
        self.outer_fits = 0

    @property
    def shelved(self) -> bool:
        """Whether the fits are kept in a folder: processes side by side share them there."""
        return self.outer_shelf is not None

    def __getstate__(self) -> dict:
        """Sent to another process without what this one keeps in memory: the folder holds it."""
        state = dict(self.__dict__)
        state["outer"] = {}
        state["inner"] = PairedFits(self.inner.design, self.inner.keep, self.inner.shelf)
        return state

    def held_out(self, trained_on: frozenset, held_out: str, fit: Callable[[], object]) -> tuple[np.ndarray, float]:
        """The scores of `held_out`'s rows, and the operating point, of the model `fit()` trains on
        the projects `trained_on` (a FittedModel): kept from another hold-out's, or fitted now and
        kept for every project left out."""
        kept = self._outer(trained_on, held_out)
        if kept is None:
            fitted = fit()
            self.outer_fits += 1
            scores = {name: positive_scores(fitted.estimator, rows) for name, rows in self.design.items()
                      if name not in trained_on}
            self.outer[trained_on] = (float(fitted.threshold), scores)
            if self.outer_shelf is not None:
                self.outer_shelf.save(trained_on, scores, threshold=float(fitted.threshold))
            kept = self.outer[trained_on]
        threshold, scores = kept
        return scores[held_out], threshold

    def _outer(self, trained_on: frozenset, held_out: str) -> tuple[float, dict] | None:
        if trained_on not in self.outer and self.outer_shelf is not None:
            shelved = self.outer_shelf.load(trained_on)
            if shelved is not None and "threshold" in shelved:
                self.outer[trained_on] = (shelved["threshold"], shelved["scores"])
        kept = self.outer.get(trained_on)
        return kept if kept is not None and held_out in kept[1] else None
