"""Nested leave-one-project-out with each fit on all projects but two shared by both hold-outs
(models.paired_fits): the same scores and operating points as every fit made, with half the
inner fits.  On three packs of the corpus (real histories collected with gcc and callgrind)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from perf_selector.models import paired_fits
from perf_selector.selector.evaluation.project_evaluation import held_out_scores, load_projects

CORPUS = Path(__file__).resolve().parent.parent / "corpus"


@pytest.fixture(scope="module")
def projects():
    packs = [CORPUS / name / "pack" for name in ("lz4", "zlib", "snappy")]
    return load_projects([(pack, None) for pack in packs], {"k": 5, "first": None, "epoch_days": None})


@pytest.mark.parametrize("model", ["xgboost-monotone", "perphecy-extended"])
def test_shared_fits_give_every_fits_scores_and_operating_points_with_half_the_inner_fits(projects, model, monkeypatch):
    made = []
    original = paired_fits.PairedFits.__init__

    def recorded(self, design):
        original(self, design)
        made.append(self)

    monkeypatch.setattr(paired_fits.PairedFits, "__init__", recorded)
    every = held_out_scores(projects, model, shared_fits=False)
    shared = held_out_scores(projects, model, shared_fits=True)
    assert set(every) == set(shared) == {"lz4", "zlib", "snappy"}
    for name in every:
        assert np.array_equal(every[name].scores, shared[name].scores), name
        assert every[name].threshold == shared[name].threshold, name
    n = len(projects)
    assert [fits.fits for fits in made] == [n * (n - 1) // 2]  # 3 fits on one project each, not 6
    assert not made[0].waiting  # every score kept for a later hold-out was handed out


def test_a_kept_score_is_handed_out_once_and_a_fit_scores_the_project_left_out():
    design = {name: pd.DataFrame({"x": [float(i) for i in range(k)]}) for name, k in (("a", 2), ("b", 3), ("c", 4))}
    fits = paired_fits.PairedFits(design)

    class Constant:  # a fitted model scoring every row by its x
        classes_ = [False, True]

        def predict_proba(self, X):
            x = np.asarray(X, dtype=float)[:, 0] / 10
            return np.column_stack([1 - x, x])

    first = fits.scores(frozenset({"c"}), "b", design["b"], Constant)  # trained on c, scoring b: a is scored for later
    assert list(fits.waiting) == [(frozenset({"c"}), "a")]
    second = fits.scores(frozenset({"c"}), "a", design["a"], lambda: pytest.fail("a second fit of the same projects"))
    assert np.allclose(first, [0, 0.1, 0.2]) and np.allclose(second, [0, 0.1]) and fits.fits == 1 and not fits.waiting


def test_each_model_held_out_in_turn_predicts_what_each_project_held_out_alone_predicts(projects):
    """evaluate's leave-one-project-out, a model at a time with its fits shared, gives each held-out
    project the predictions of its own training on the others with every fit made."""
    from perf_selector.selector.evaluation.project_evaluation import _held_out_predictions, cross_project_predictions

    shared = _held_out_predictions(projects, "xgboost", 0.95, 0, True, "quantile")
    for held_out, frame in zip(projects, shared):
        others = [p for p in projects if p is not held_out]
        alone = cross_project_predictions(others, held_out, ["xgboost"], 0.95, 0, True, "quantile")
        pd.testing.assert_frame_equal(frame, alone)
