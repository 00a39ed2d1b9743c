"""Fits shared between the levels of a nested leave-one-project-out.

Judging a learner across projects holds each project A out in turn and trains on the others;
that training places its operating point on out-of-project scores, so it holds each other
project B out in turn as well (models.backtest.train_one with groups): a fit on every project
but A and B, scoring B.  When B is held out in its turn, its training holds A out on the very
same rows: every project but A and B, in the same order, with the same seed.  The fit is the
same, so the first one scores both A and B, and the second is not made: n(n-1)/2 inner fits
instead of n(n-1) for n projects (benchmarks/paired_fits.py measures it).

Nested one level deeper (a bundle trained as shipped on every project but A, whose own choice
of policy holds B out, whose operating point holds C out: `evaluate --shipped --held-out`), a fit
on every project but A, B and C is asked for by six orders of the three, some of them twice for
the same project: with `keep` each score is handed out as often as asked, and the fits fall from
n(n-1)(n-2) to n(n-1)(n-2)/6.

Only the scores are kept, for the projects a fit may serve later: a random forest of every set
of projects would not fit in memory, its scores do.  A `shelf` (the evaluation's folder of
kept fits, selector.evaluation.held_out_fits) keeps them across runs too: a run cut off half
way, or the next step of the corpus's evaluation, takes them instead of fitting again.
"""

from __future__ import annotations

from typing import Callable, Mapping, Protocol

import numpy as np
import pandas as pd

from perf_selector.models.registry import positive_scores


class Shelf(Protocol):
    """Where the scores of one fit outlive the run: by the projects it was trained on."""

    def load(self, trained_on: frozenset) -> dict[str, np.ndarray] | None: ...

    def save(self, trained_on: frozenset, scores: dict[str, np.ndarray]) -> None: ...


class PairedFits:
    """Out-of-project scores of nested leave-one-project-out fits, each fit made once.

    `design`: each project's model inputs, every row a training table of the projects holds
    for it, in that table's order (a project's rows are the same whichever others it is
    trained beside).  `keep`: a kept score is handed out as often as asked (nesting deeper than
    two levels asks for some twice), else once, and forgotten.  `shelf`: kept across runs."""

    def __init__(self, design: Mapping[str, pd.DataFrame], keep: bool = False, shelf: Shelf | None = None) -> None:
        self.design = dict(design)
        self.keep = keep
        self.shelf = shelf
        self.waiting: dict[tuple[frozenset, str], np.ndarray] = {}
        self.fits = 0

    def scores(self, trained_on: frozenset, held_out: str, rows: pd.DataFrame, fit: Callable[[], object]) -> np.ndarray:
        """The scores of `held_out`'s `rows` by a model trained on the projects `trained_on`:
        kept from the fit another hold-out made on the same projects (in this run or, with a
        shelf, an earlier one), or made now by `fit()`, which then also scores every project its
        training left out besides `held_out`, for later."""
        kept = self._kept(trained_on, held_out)
        if kept is not None:
            return kept
        estimator = fit()
        self.fits += 1
        scored = {other: positive_scores(estimator, self.design[other]) for other in self.design.keys() - trained_on - {held_out}}
        scored[held_out] = positive_scores(estimator, rows)
        if self.shelf is not None:
            self.shelf.save(trained_on, scored)
        self.waiting.update({(trained_on, other): scores for other, scores in scored.items()
                             if other != held_out or self.keep})
        return scored[held_out]

    def _kept(self, trained_on: frozenset, held_out: str) -> np.ndarray | None:
        key = (trained_on, held_out)
        if key not in self.waiting and self.shelf is not None:
            shelved = self.shelf.load(trained_on)
            if shelved is not None and held_out in shelved:
                self.waiting.update({(trained_on, other): scores for other, scores in shelved.items()})
        return self.waiting.get(key) if self.keep else self.waiting.pop(key, None)
