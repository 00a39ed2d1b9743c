"""The cross-project operating point: the threshold that keeps the target hit rate on every
training project held out in turn, not on the pooled changes (issue 27)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sklearn.base import clone
from sklearn.model_selection import LeaveOneGroupOut, cross_val_predict

from perf_selector.models.backtest import train_one
from perf_selector.models.evaluation import RUN_EVERYTHING, operating_threshold, worst_group_threshold
from perf_selector.models.registry import model_spec


def test_the_worst_group_sets_the_threshold_where_the_pooled_quantile_hides_it():
    # project a: 19 changes scored high; project b: 2 changes, one scored low
    scores = np.concatenate([np.linspace(0.6, 0.99, 19), [0.1] * 30, [0.8, 0.2], [0.05] * 10])
    labels = np.concatenate([np.ones(19), np.zeros(30), np.ones(2), np.zeros(10)]).astype(bool)
    groups = np.array(["a"] * 49 + ["b"] * 12)
    pooled = operating_threshold(scores, labels, 0.95)
    worst = worst_group_threshold(scores, labels, groups, 0.95)
    assert pooled > 0.2 and worst == 0.2  # b keeps both its changes only at 0.2
    b = groups == "b"
    assert (scores[b & labels] >= worst).all() and (scores[b & labels] >= pooled).mean() == 0.5
    assert worst_group_threshold(scores, np.zeros(len(scores), bool), groups) == RUN_EVERYTHING


def test_cross_project_training_keeps_every_held_out_projects_changes():
    """Fitted with a project per row, the threshold keeps the target share of each training
    project's changes in its held-out scores; a fixed rule keeps its own threshold."""
    rng = np.random.default_rng(0)
    frames = []
    for project, shift in (("p", 0.0), ("q", 1.5), ("r", -1.0)):
        n = 200
        label = rng.random(n) < 0.1
        frames.append(pd.DataFrame({"x": rng.normal(shift + 2.5 * label, 1.0), "z": rng.normal(size=n),
                                    "label": label, "project": project}))
    table = pd.concat(frames, ignore_index=True)
    X, y, groups = table[["x", "z"]], table["label"].to_numpy(), table["project"].to_numpy()
    fitted = train_one(model_spec("logistic"), X, y, np.ones(len(y)), "cross-project", None, 0.95, 0, groups=groups)
    # the same out-of-project scores, made here with scikit-learn's own splitter
    held_out = cross_val_predict(clone(model_spec("logistic").build(0)), X, y, groups=groups, cv=LeaveOneGroupOut(),
                                 method="predict_proba")[:, 1]
    assert fitted.threshold == pytest.approx(worst_group_threshold(held_out, y, groups, 0.95))
    for project in "pqr":
        mine = (groups == project) & y
        assert (held_out[mine] >= fitted.threshold).mean() >= 0.95
    rule = train_one(model_spec("executed-changed"), pd.DataFrame({"executed_changed_share": X["x"],
                                                                   "changed_data_reached": 0.0,
                                                                   "build_config_changed": 0.0}),
                     y, np.ones(len(y)), "cross-project", None, 0.95, 0, groups=groups)
    assert rule.threshold == 0.5
    # the effect bound learns from the measured effects and keeps its own threshold
    effect = train_one(model_spec("effect"), X, y, np.ones(len(y)), "cross-project", None, 0.95, 0, groups=groups,
                       effect=np.where(y, 0.05, 0.001))
    assert effect.threshold == 0.5
