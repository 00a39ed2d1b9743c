"""Whether learning earns its keep (issue 27): the evidence that a model, deciding as `select`
does, kept as many changes as the executed-changed rule while dismissing more, and the
policy `select` follows from it: the model, the model deciding only among the rule's runs,
or the rule.  The shipped bundle's evidence is each training project held out in turn
(selector.project_evaluation); a project's own bundle's is its own Method 4 backtest
(selector.training)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from perf_selector.features.catalogue import FEATURE_NAMES
from perf_selector.features.tuples import TUPLE_KEYS
from perf_selector.models.names import STEPPING_ASIDE_RULE, WITHIN_RULE
from perf_selector.models.decision import decide_by_policy, pooled_rate
from perf_selector.models.rates import dismiss_rate, hit_rate
from perf_selector.selector.selection.shipped_model import OWN_POSITIVES_NEEDED


def policy_evidence(scores: np.ndarray, thresholds: np.ndarray, features: np.ndarray, labels: np.ndarray,
                    min_effect: float) -> dict:
    """How the model (its `scores` against its `thresholds`), the model within the executed-changed
    rule and the rule itself decide labelled tuples (`features` in FEATURE_NAMES order), each
    with the build configuration and the predicted instruction change around it, as `select`
    decides: the tuples, the changes, and each policy's hit and dismiss rates."""
    labels = np.asarray(labels, dtype=bool)
    return {"tuples": len(labels), "changes": int(labels.sum()),
            **{name: _rates(decide_by_policy(policy, scores, thresholds, features, min_effect), labels)
               for name, policy in (("model", "model"), (WITHIN_RULE, WITHIN_RULE), ("rule", STEPPING_ASIDE_RULE))}}


def own_model_epochs(plan, labels: pd.Series) -> set[int]:
    """The epochs of a backtest `plan` whose training tuples hold OWN_POSITIVES_NEEDED changes
    (`labels` of the plan's tuples): where `select` would follow the project's own model."""
    return {split.epoch for split in plan.splits
            if int((labels.iloc[split.train] == True).sum()) >= OWN_POSITIVES_NEEDED}  # noqa: E712


def feature_rows(table: pd.DataFrame) -> pd.DataFrame:
    """A feature table's FEATURE_NAMES columns, one row per tuple, indexed by TUPLE_KEYS (for features_of)."""
    return table.drop_duplicates(TUPLE_KEYS).set_index(TUPLE_KEYS)[list(FEATURE_NAMES)]


def features_of(rows: pd.DataFrame, tuples: pd.DataFrame) -> np.ndarray:
    """The features (feature_rows) of `tuples` (TUPLE_KEYS columns), in their order."""
    return rows.reindex(pd.MultiIndex.from_frame(tuples[TUPLE_KEYS])).to_numpy(float)


def backtest_evidence(predictions: pd.DataFrame, rows: pd.DataFrame, min_effect: float) -> dict:
    """policy_evidence of a backtest's predictions (a score, threshold and label per tuple), their
    features looked up in `rows` (feature_rows)."""
    return policy_evidence(predictions["score"].to_numpy(float), predictions["threshold"].to_numpy(float),
                           features_of(rows, predictions), predictions["label"].to_numpy(bool), min_effect)


def policy_from(evidence: dict[str, dict], judged_on: str = "held out in turn") -> tuple[str, str]:
    """The policy `select` follows, from the evidence of held_out_evidence: of the model alone
    ("model") and the model deciding among what the executed-changed rule runs (WITHIN_RULE),
    those that on every project held out kept a hit rate at least as high as the rule's while
    dismissing no less, and on at least one dismissed more, the one that dismissed the most
    overall (within the rule where they tie); if neither did, the rule itself (STEPPING_ASIDE_RULE).  A project where a policy
    only ties with the rule costs nothing there, so it does not veto the policy's gains on the
    others (it did until the corpus held Snappy, where the model within the rule ran exactly
    what the rule runs).  With the reason, in figures, saying what the evidence was (`judged_on`)."""
    def no_worse(name: str, e: dict) -> bool:
        policy, rule = e.get(name), e["rule"]
        if policy is None:
            return False
        hit_ok = policy["hit_rate"] is None or policy["hit_rate"] >= rule["hit_rate"]
        return hit_ok and (policy["dismiss_rate"] is None or policy["dismiss_rate"] >= rule["dismiss_rate"])

    def better(name: str, e: dict) -> bool:
        policy, rule = e.get(name), e["rule"]
        return policy is not None and policy["dismiss_rate"] is not None and policy["dismiss_rate"] > rule["dismiss_rate"]

    def dismissed(name: str) -> float:
        return pooled_rate(evidence, name, "dismiss_rate")

    def rates(e: dict) -> str:
        return " / ".join("-" if value is None else f"{value:.2f}" for value in (e["hit_rate"], e["dismiss_rate"]))

    # Within the rule first: where both dismiss as much, the one that never runs less than the rule
    # wins (max keeps the first of equals), as the rule kept every change on every history tried.
    winners = [name for name in (WITHIN_RULE, "model")
               if all(no_worse(name, e) for e in evidence.values()) and any(better(name, e) for e in evidence.values())]
    if winners:
        best = max(winners, key=dismissed)
        figures = "; ".join(f"{project}: {rates(e[best])} against {rates(e['rule'])}" for project, e in evidence.items())
        where = " on every project, dismissing no less anywhere and more on some" if len(evidence) > 1 else \
            " while dismissing more"
        return best, (f"{judged_on}, {'the model' if best == 'model' else 'the model within the rule'} kept as high "
                      f"a hit rate as the executed-changed rule{where} (hit / dismiss: {figures})")
    # the figures of the candidate that came closest: within the rule where it was judged
    shown = WITHIN_RULE if any(e.get(WITHIN_RULE) for e in evidence.values()) else "model"
    lost = [project for project, e in evidence.items() if not no_worse(shown, e)]
    if not lost:
        anywhere = " on any project" if len(evidence) > 1 else ""
        return STEPPING_ASIDE_RULE, f"{judged_on}, it dismissed no more than the rule{anywhere}: no gain for the risk"
    figures = "; ".join(f"{project}: {rates(evidence[project][shown])} against the rule's {rates(evidence[project]['rule'])}"
                        for project in lost)
    return STEPPING_ASIDE_RULE, f"{judged_on}, it did worse than the rule on {figures}"


def _rates(run: np.ndarray, labels: np.ndarray) -> dict:
    rates = {"hit_rate": hit_rate(run, labels), "dismiss_rate": dismiss_rate(run, labels)}
    return {name: None if math.isnan(rate) else rate for name, rate in rates.items()}  # None: JSON has no nan


def own_bound(evidence: dict, policy: str, miss_rate: float) -> dict:
    """The conformal bound of a pruning policy on the project's own history: with the backtest's n
    test changes taken as exchangeable with the next one, and m of them missed by a policy fixed
    before each was seen (Method 4 trains every epoch on its past alone), the next change is missed
    with probability at most (m + 1) / (n + 1).  So n changes certify no miss rate below 1 / (n + 1):
    19, 0.05.  The rule's own policy prunes nothing it could miss, and needs no bound."""
    changes = int(evidence["changes"])
    shown = WITHIN_RULE if policy == STEPPING_ASIDE_RULE else policy
    hit = evidence[shown]["hit_rate"]
    missed = int(round((1.0 - hit) * changes)) if hit is not None else 0
    return {"changes": changes, "missed": missed, "bound": (missed + 1) / (changes + 1), "miss_rate": round(miss_rate, 6)}


def bounded_policy(evidence: dict[str, dict], judged_on: str, miss_rate: float) -> tuple[str, str, dict]:
    """(policy, reason, bound) of one project's own evidence ({name: its policy_evidence}):
    policy_from's choice, turned into the rule where own_bound says its changes cannot certify
    `miss_rate` (the bound then records "decided").  What `train` records and evaluate's replay of
    it applies."""
    policy, reason = policy_from(evidence, judged_on)
    bounded, said, bound = policy_bounded_on(policy, evidence, judged_on, miss_rate)
    return bounded, said or reason, bound


def policy_bounded_on(policy: str, evidence: dict[str, dict], judged_on: str, miss_rate: float) -> tuple[str, str, dict]:
    """(policy, reason, bound): `policy`, chosen before `evidence` ({name: its policy_evidence})
    was seen or on it, turned into the rule where own_bound says the evidence's changes cannot
    certify `miss_rate` (the reason then says so, and the bound records "decided"; otherwise the
    reason is empty)."""
    (own,) = evidence.values()
    bound = own_bound(own, policy, miss_rate)
    if policy != STEPPING_ASIDE_RULE and bound["bound"] > bound["miss_rate"]:
        reason = (f"{judged_on}, it would prune, but its {bound['changes']} changes ({bound['missed']} missed) certify "
                  f"no miss rate below {bound['bound']:.3f}, above the {bound['miss_rate']:.2f} asked")
        bound["decided"] = True  # the bound, not the evidence, made it the rule
        return STEPPING_ASIDE_RULE, reason, bound
    return policy, "", bound
