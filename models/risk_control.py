"""A pruning threshold whose miss rate holds on a project never seen: conformal risk control
(Angelopoulos et al., "Conformal risk control", 2022) over the projects left out in turn.

The unit is a project, not a tuple: a model trained on the other projects scores each held-out
project's labelled tuples, and the project's loss at a threshold is the share of its changes
the policy would skip there (its miss rate, bounded by 1).  If a new project is exchangeable
with the corpus's projects, the threshold chosen so that

    n / (n + 1) * mean loss over the n projects + 1 / (n + 1)  <=  the stated miss rate

keeps the new project's expected miss rate at most the stated one.  So n projects can
certify no miss rate below 1 / (n + 1) whatever they realized: eleven projects, 0.083;
fourteen, 0.067.  Projects without a labelled change have no miss rate and are left out
(MAPIE's controller requires a positive in every unit; leaving them out only loosens the bound).

The threshold is searched by MAPIE's `MultiLabelClassificationController` (method "crc", risk
"recall"): each project is one observation, its tuples the labels (padded with negatives).
The scores given to it are those that decide: a tuple `select` runs whatever its score
(the build, the predicted effect, a hazard) scores 1, a tuple the policy cannot run (outside
the executed-changed rule, for a model within it) scores 0.
"""

from __future__ import annotations

import warnings
from dataclasses import asdict, dataclass, field
from typing import Mapping

import numpy as np

from perf_selector.models.evaluation import RUN_EVERYTHING


@dataclass(frozen=True)
class HeldOut:
    """One project held out: its deciding scores (see the module) and labels."""

    scores: np.ndarray
    labels: np.ndarray


@dataclass(frozen=True)
class RiskBound:
    miss_rate: float  # the stated miss rate the threshold must keep on an unseen project
    threshold: float  # the highest threshold that keeps it (RUN_EVERYTHING: none does)
    controlled: bool  # whether some threshold keeps it
    projects: int  # the held-out projects with changes: the units of the bound
    least_certifiable: float  # 1 / (projects + 1): no smaller miss rate can be certified
    realized: dict[str, float] = field(default_factory=dict)  # each project's miss rate at the threshold

    def as_dict(self) -> dict:
        document = asdict(self)
        document["threshold"] = None if not np.isfinite(self.threshold) else self.threshold
        return document


def deciding_scores(scores: np.ndarray, forced: np.ndarray, excluded: np.ndarray) -> np.ndarray:
    """The scores a threshold decides by: 1 where a tuple runs whatever its score (`forced`), 0
    where the policy cannot run it (`excluded`), else the model's score (clipped to [0, 1])."""
    return np.where(forced, 1.0, np.where(excluded, 0.0, np.clip(np.nan_to_num(scores, nan=1.0), 0.0, 1.0)))


def risk_controlled_threshold(held_out: Mapping[str, HeldOut], miss_rate: float) -> RiskBound:
    """The highest threshold whose conformal risk control bound over the `held_out` projects keeps
    the expected miss rate of an unseen project at most `miss_rate`; RUN_EVERYTHING when none does."""
    from mapie.risk_control import MultiLabelClassificationController

    if not 0 < miss_rate < 1:
        raise ValueError("the miss rate must be in (0, 1)")
    units = {name: h for name, h in held_out.items() if np.asarray(h.labels, bool).any()}
    least = 1.0 / (len(units) + 1)
    if not units:
        return RiskBound(miss_rate, RUN_EVERYTHING, False, 0, least)
    width = max(len(h.labels) for h in units.values())
    scores = np.zeros((len(units), width))
    labels = np.zeros((len(units), width), dtype=int)
    for row, h in enumerate(units.values()):
        scores[row, :len(h.scores)] = h.scores
        labels[row, :len(h.labels)] = np.asarray(h.labels, bool)
    # MAPIE includes a label when its score is above the parameter: one parameter just below each
    # score (and below 0) makes "above it" mean "at least that score".
    candidates = np.nextafter(np.unique(np.r_[0.0, scores[labels == 1]]), -np.inf)
    controller = MultiLabelClassificationController(predict_function=lambda X: X, risk="recall", method="crc",
                                                    target_level=1.0 - miss_rate, predict_params=candidates)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "the risk cannot be controlled": said by `controlled`
        controller.calibrate(scores, labels)
    controlled = bool((np.asarray(controller.r_hat_plus) <= miss_rate).any())  # the CRC bound of each candidate
    parameter = float(np.ravel(controller.best_predict_param)[0])
    threshold = float(np.nextafter(parameter, np.inf)) if controlled else RUN_EVERYTHING
    realized = {name: float(1.0 - (h.scores[np.asarray(h.labels, bool)] >= threshold).mean()) for name, h in units.items()}
    return RiskBound(miss_rate, threshold, controlled, len(units), least, realized)
