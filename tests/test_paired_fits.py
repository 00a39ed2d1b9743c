"""Nested leave-one-project-out with each fit on all projects but two shared by both hold-outs
(models.paired_fits): the same scores and operating points as every fit made, with half the
inner fits; nested a level deeper (the bundles of `evaluate --shipped --held-out`), a sixth; and
kept in a folder, none made again by the next run.  On packs of the corpus (real histories
collected with gcc and callgrind)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from perf_selector.models import paired_fits
from perf_selector.selector.evaluation.evaluation_parts import Parts
from perf_selector.selector.evaluation.project_evaluation import held_out_fits, held_out_scores, load_projects

CORPUS = Path(__file__).resolve().parent.parent / "corpus"


@pytest.fixture(scope="module")
def projects():
    packs = [CORPUS / name / "pack" for name in ("lz4", "zlib", "snappy")]
    return load_projects([(pack, None) for pack in packs], {"k": 5, "first": None, "epoch_days": None})


@pytest.mark.parametrize("model", ["xgboost-monotone", "perphecy-extended"])
def test_shared_fits_give_every_fits_scores_and_operating_points_with_half_the_inner_fits(projects, model, monkeypatch):
    made = []
    original = paired_fits.PairedFits.__init__

    def recorded(self, *arguments, **keywords):
        original(self, *arguments, **keywords)
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


class Constant:  # a fitted model scoring every row by its x
    classes_ = [False, True]

    def predict_proba(self, X):
        x = np.asarray(X, dtype=float)[:, 0] / 10
        return np.column_stack([1 - x, x])


def test_kept_scores_are_handed_out_as_often_as_asked_and_a_shelf_keeps_them_for_the_next_run():
    design = {name: pd.DataFrame({"x": [float(i) for i in range(k)]}) for name, k in (("a", 2), ("b", 3), ("c", 4))}

    class Shelf(dict):
        def load(self, trained_on):
            return self.get(trained_on)

        def save(self, trained_on, scores):
            self[trained_on] = {**self.get(trained_on, {}), **scores}

    shelf = Shelf()
    fits = paired_fits.PairedFits(design, keep=True, shelf=shelf)
    fits.scores(frozenset({"c"}), "b", design["b"], Constant)
    again = [fits.scores(frozenset({"c"}), name, design[name], lambda: pytest.fail("fitted twice")) for name in "abb"]
    assert fits.fits == 1 and [len(s) for s in again] == [2, 3, 3]
    assert set(shelf[frozenset({"c"})]) == {"a", "b"}
    next_run = paired_fits.PairedFits(design, shelf=shelf)
    assert np.allclose(next_run.scores(frozenset({"c"}), "a", design["a"], lambda: pytest.fail("fitted again")), [0, 0.1])
    assert next_run.fits == 0


@pytest.fixture(scope="module")
def four():
    packs = [CORPUS / name / "pack" for name in ("lz4", "zlib", "libdeflate", "zstd")]
    return load_projects([(pack, None) for pack in packs], {"k": 5, "first": None, "epoch_days": None})


def test_bundles_trained_without_each_project_share_their_nested_fits_and_get_every_fits_scores(four):
    """Inside the bundle trained without A, its policy is judged on each other project B held out in
    turn (a fit on all but A and B), whose operating point holds each C out (a fit on all but A, B, C):
    shared over every A, the fits are those of sets, not of orders."""
    model = "xgboost-monotone"
    shared = held_out_fits(four, model, keep=True)
    n = len(four)
    for held_out in four:
        others = [p for p in four if p is not held_out]
        every = held_out_scores(others, model, shared_fits=False)
        kept = held_out_scores(others, model, fits=shared)
        for name in every:
            assert np.array_equal(every[name].scores, kept[name].scores), (held_out.name, name)
            assert every[name].threshold == kept[name].threshold, (held_out.name, name)
    assert shared.outer_fits == n * (n - 1) // 2  # a fit on all but two, for each pair: not one per order
    assert shared.inner.fits == n * (n - 1) * (n - 2) // 6  # all but three, for each three: not one per order
    with pytest.raises(ValueError, match="cannot stand for"):
        held_out_scores(four[1:], "perphecy", fits=shared)


def test_fits_kept_in_a_folder_are_taken_by_the_next_run_and_none_is_made_again(four, tmp_path):
    model = "perphecy-extended"
    first = held_out_fits(four[:3], model, kept=Parts(tmp_path))
    scored = held_out_scores(four[:3], model, fits=first)
    assert first.outer_fits == 3 and first.inner.fits == 3 and any(tmp_path.iterdir())
    second = held_out_fits(four[:3], model, kept=Parts(tmp_path))
    again = held_out_scores(four[:3], model, fits=second)
    assert second.outer_fits == 0 and second.inner.fits == 0
    for name in scored:
        assert np.array_equal(scored[name].scores, again[name].scores) and scored[name].threshold == again[name].threshold
    other_order = held_out_fits([four[1], four[0], four[2]], model, kept=Parts(tmp_path))
    held_out_scores([four[1], four[0], four[2]], model, fits=other_order)
    # the same projects given in another order are concatenated by name as before: every fit taken
    assert other_order.outer_fits == 0 and other_order.inner.fits == 0


def test_the_choice_of_the_shipped_learner_takes_the_fits_leave_one_project_out_kept(projects, tmp_path):
    """`evaluate --write-model` judges each candidate held out in turn, as its leave-one-project-out
    already did: given the same folder, it fits nothing again, and gets the same scores."""
    from perf_selector.selector.evaluation.project_evaluation import _held_out_predictions

    model = "perphecy-extended"
    frames = _held_out_predictions(projects, model, 0.95, 0, True, "quantile", Parts(tmp_path))
    fits = held_out_fits(projects, model, kept=Parts(tmp_path))
    scored = held_out_scores(projects, model, fits=fits)
    assert fits.outer_fits == 0 and fits.inner.fits == 0
    for held_out, frame in zip(projects, frames):
        labelled = held_out.data.table["label"].notna().to_numpy()
        assert len(scored[held_out.name].scores) == labelled.sum()
        assert set(frame["score"]) <= set(scored[held_out.name].scores)
        assert (frame["threshold"] == scored[held_out.name].threshold).all()


def test_projects_held_out_side_by_side_share_the_kept_fits_and_get_every_fits_scores(four, tmp_path):
    """held_out_scores with jobs: each project held out in a process of its own, the fits shared
    through the folder; the same scores and operating points as every fit made in one process."""
    model = "xgboost-monotone"
    every = held_out_scores(four, model, shared_fits=False)
    side_by_side = held_out_scores(four, model, fits=held_out_fits(four, model, kept=Parts(tmp_path)), jobs=2)
    for name in every:
        assert np.array_equal(every[name].scores, side_by_side[name].scores), name
        assert every[name].threshold == side_by_side[name].threshold, name
    again = held_out_fits(four, model, kept=Parts(tmp_path))
    held_out_scores(four, model, fits=again)
    assert again.outer_fits == 0 and again.inner.fits == 0  # every fit the processes made is in the folder


def test_kept_fits_follow_the_code_they_were_made_with(tmp_path, monkeypatch):
    """A kept fit or part is keyed by a digest of the package's sources: every module of the five
    folders is in it (models/decision.py and this very module among them), and a changed line in
    any of them is another digest, so nothing made by other code is taken."""
    from perf_selector.selector.evaluation import evaluation_parts

    names = {path.relative_to(evaluation_parts.PACKAGE_ROOT).as_posix() for path in evaluation_parts.code_files()}
    assert {"models/decision.py", "selector/evaluation/evaluation_parts.py", "features/catalogue.py"} <= names
    copy = tmp_path / "package"
    (copy / "models").mkdir(parents=True)
    (copy / "models" / "decision.py").write_text("FLOOR = 1e-4\n")
    monkeypatch.setattr(evaluation_parts, "PACKAGE_ROOT", copy)
    evaluation_parts.code_fingerprint.cache_clear()
    before = evaluation_parts.code_fingerprint()
    (copy / "models" / "decision.py").write_text("FLOOR = 1e-3\n")
    evaluation_parts.code_fingerprint.cache_clear()
    assert evaluation_parts.code_fingerprint() != before
    (copy / "models" / "decision.py").unlink()
    evaluation_parts.code_fingerprint.cache_clear()
    with pytest.raises(RuntimeError, match="no Python sources"):
        evaluation_parts.code_fingerprint()
    evaluation_parts.code_fingerprint.cache_clear()


def test_the_same_projects_in_any_order_train_the_same_model(projects, tmp_path):
    """XGBoost's fit depends on the order of its rows: cross-project training concatenates the
    projects by name, so the projects given in another order give the very same scores, and the
    fits one order kept are the other's."""
    from perf_selector.selector.evaluation.project_evaluation import cross_project_training

    reordered = [projects[2], projects[0], projects[1]]
    pd.testing.assert_frame_equal(cross_project_training(projects), cross_project_training(reordered))
    assert list(cross_project_training(reordered)["project"].unique()) == sorted(p.name for p in projects)
    kept = Parts(tmp_path / "fits")
    given = held_out_scores(projects, "xgboost", fits_kept=kept)
    made = len(list((tmp_path / "fits").iterdir()))
    other = held_out_scores(reordered, "xgboost", fits_kept=kept)
    assert len(list((tmp_path / "fits").iterdir())) == made  # no fit made again for the other order
    unkept = held_out_scores(reordered, "xgboost")
    for name, scored in given.items():
        assert np.array_equal(scored.scores, other[name].scores) and np.array_equal(scored.scores, unkept[name].scores)
        assert scored.threshold == unkept[name].threshold
