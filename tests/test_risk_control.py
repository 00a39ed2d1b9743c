"""Conformal risk control of the pruning threshold over projects held out in turn
(models/risk_control.py), with MAPIE, checked against the bound computed here by hand."""

from __future__ import annotations

import numpy as np
import pytest

from perf_selector.features.catalogue import FEATURE_NAMES
from perf_selector.models.evaluation import RUN_EVERYTHING
from perf_selector.models.names import WITHIN_RULE
from perf_selector.models.risk_control import HeldOut, deciding_scores, risk_controlled_threshold
from perf_selector.selector.evaluation.project_evaluation import HeldOutScores, policy_risk_bound


def _projects(count: int, seed: int = 0, tuples: int = 200, changes: int = 6) -> dict[str, HeldOut]:
    """Held-out projects whose changes score higher than the rest, with overlap."""
    rng = np.random.default_rng(seed)
    projects = {}
    for number in range(count):
        scores, labels = rng.random(tuples), np.zeros(tuples, bool)
        labels[:changes] = True
        scores[:changes] = 0.4 + 0.6 * rng.random(changes)
        projects[f"p{number}"] = HeldOut(scores, labels)
    return projects


def _crc_bound(projects: dict[str, HeldOut], threshold: float) -> float:
    """n/(n+1) x the mean miss rate at `threshold` + 1/(n+1), over the projects with changes."""
    losses = [1 - (h.scores[h.labels] >= threshold).mean() for h in projects.values() if h.labels.any()]
    return len(losses) / (len(losses) + 1) * float(np.mean(losses)) + 1 / (len(losses) + 1)


@pytest.mark.parametrize("miss_rate", [0.05, 0.1, 0.2])
def test_the_threshold_is_the_highest_whose_bound_keeps_the_miss_rate(miss_rate):
    projects = _projects(30)
    bound = risk_controlled_threshold(projects, miss_rate)
    assert bound.controlled and bound.projects == 30 and bound.least_certifiable == pytest.approx(1 / 31)
    assert _crc_bound(projects, bound.threshold) <= miss_rate
    higher = sorted({s for h in projects.values() for s in h.scores[h.labels] if s > bound.threshold})
    assert higher and _crc_bound(projects, higher[0]) > miss_rate  # the next change's score would not keep it
    realized = {name: 1 - (h.scores[h.labels] >= bound.threshold).mean() for name, h in projects.items()}
    assert bound.realized == pytest.approx(realized)


def test_too_few_projects_cannot_certify_a_small_miss_rate():
    """Eleven projects with changes certify no miss rate below 1/12, whatever they realized."""
    projects = _projects(11)
    bound = risk_controlled_threshold(projects, 0.05)
    assert not bound.controlled and bound.threshold == RUN_EVERYTHING
    assert bound.least_certifiable == pytest.approx(1 / 12) and set(bound.realized.values()) == {0.0}
    assert risk_controlled_threshold(projects, 0.10).controlled


def test_projects_without_a_change_are_no_unit_of_the_bound():
    projects = _projects(30) | {"quiet": HeldOut(np.random.default_rng(1).random(50), np.zeros(50, bool))}
    assert risk_controlled_threshold(projects, 0.1).projects == 30


def test_what_runs_anyway_scores_one_and_what_cannot_run_zero():
    scores = np.array([0.2, 0.7, 0.4, np.nan])
    decided = deciding_scores(scores, forced=np.array([True, False, False, False]),
                              excluded=np.array([False, True, False, False]))
    assert decided.tolist() == [1.0, 0.0, 0.4, 1.0]  # a missing score runs: when in doubt, run


def test_within_the_rule_a_hazard_runs_whatever_the_score_and_the_rule_bounds_the_rest():
    def row(**values: float) -> np.ndarray:
        features = np.zeros(len(FEATURE_NAMES))
        for name, value in values.items():
            features[FEATURE_NAMES.index(name)] = value
        return features

    hazard = row(executed_changed_share=1e-6, changed_cpu_dispatch=1.0)
    ordinary, outside = row(executed_changed_share=0.01, executed_steering_share=0.01), row()
    features = np.vstack([hazard, ordinary, outside] * 4)
    labels = np.array([True, True, False] * 4)
    scores = np.array([0.1, 0.8, 0.9] * 4)
    scored = {f"p{n}": HeldOutScores(scores, 0.5, features, labels, 0.01) for n in range(30)}
    bound = policy_risk_bound(scored, WITHIN_RULE, 0.1)
    # the hazard's change scores 1 and the ordinary one 0.8: the highest threshold keeping both is 0.8
    assert bound.controlled and bound.threshold == pytest.approx(0.8)
    assert set(bound.realized.values()) == {0.0}
