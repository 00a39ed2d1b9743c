"""Fits shared between the two sides of a nested leave-one-project-out.

Judging a learner across projects holds each project A out in turn and trains on the others;
that training places its operating point on out-of-project scores, so it holds each other
project B out in turn as well (models.backtest.train_one with groups): a fit on every project
but A and B, scoring B.  When B is held out in its turn, its training holds A out on the very
same rows: every project but A and B, in the same order, with the same seed.  The fit is the
same, so the first one scores both A and B, and the second is not made: n(n-1)/2 inner fits
instead of n(n-1) for n projects, the most of what choosing the shipped learner costs
(benchmarks/paired_fits.py measures it).

Only the scores are kept, for the project the fit will serve later, and each is handed out
once: a random forest of every pair would not fit in memory, its scores do.
"""

from __future__ import annotations

from typing import Callable, Mapping

import numpy as np
import pandas as pd

from perf_selector.models.registry import positive_scores


class PairedFits:
    """Out-of-project scores of nested leave-one-project-out fits, each fit made once.

    `design`: each project's model inputs, every row a training table of the projects holds
    for it, in that table's order (a project's rows are the same whichever others it is
    trained beside)."""

    def __init__(self, design: Mapping[str, pd.DataFrame]) -> None:
        self.design = dict(design)
        self.waiting: dict[tuple[frozenset, str], np.ndarray] = {}
        self.fits = 0

    def scores(self, trained_on: frozenset, held_out: str, rows: pd.DataFrame, fit: Callable[[], object]) -> np.ndarray:
        """The scores of `held_out`'s `rows` by a model trained on the projects `trained_on`:
        kept from the fit another hold-out made on the same projects, or made now by `fit()`,
        which then also scores the project its training left out besides `held_out`, for later."""
        kept = self.waiting.pop((trained_on, held_out), None)
        if kept is not None:
            return kept
        estimator = fit()
        self.fits += 1
        for other in self.design.keys() - trained_on - {held_out}:
            self.waiting[(trained_on, other)] = positive_scores(estimator, self.design[other])
        return positive_scores(estimator, rows)
