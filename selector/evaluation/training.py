"""`selector train`: final models on the whole history, with operating points, into a bundle.

Training uses every labelled closest-ancestor tuple in the store (what Method 4's
last epoch would train on), chooses each model's operating point on out-of-fold
scores of that data for the target hit rate, and writes a bundle
(:mod:`models.bundle`) that `selector select` loads.  A benchmark whose history holds
no performance change yet gets a model that runs it every time: when in doubt, run.
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

import numpy as np
import pandas as pd

from perf_selector.collectors.errors import UserError
from perf_selector.features.catalogue import FEATURE_NAMES
from perf_selector.features.tuples import closest_tuples
from perf_selector.models.backtest import FittedModel, measured_effects, train_one
from perf_selector.models.decision import harmless_hazards
from perf_selector.models.design import design_matrix
from perf_selector.models.bundle import Bundle, save_bundle
from perf_selector.models.names import STEPPING_ASIDE_RULE, WITHIN_RULE
from perf_selector.models.registry import model_spec
from perf_selector.selector.config import Config, harness_digest
from perf_selector.selector.selection.shipped_model import OWN_POSITIVES_NEEDED
from perf_selector.selector.evaluation.feature_table import benchmarks_of
from perf_selector.storage.history import History, load_history
from perf_selector.selector.selection.policy import (backtest_evidence, bounded_policy, feature_rows, own_model_epochs,
                                                      policy_bounded_on, policy_from)
from perf_selector.selector.evaluation.store_backtest import evaluation_data, labelled_feature_table, run_backtest
from perf_selector.storage.store import Store

BUNDLE_DIRECTORY = "models"
# The own model's evidence (own_policies): Method 4 as `selector backtest` runs it by default.
OWN_BACKTEST = {"k": 5, "first": None, "epoch_days": None}
OWN_EVIDENCE = "own backtest"
# `train --model auto`: the learners the project's own backtest chooses among (the rules need no
# choosing), in the order that breaks a tie (the cheaper and better-known first).
AUTO = "auto"
CANDIDATES = ("xgboost", "xgboost-monotone", "random-forest", "logistic", "perphecy", "perphecy-extended", "effect", "svm")
FALLBACK = "xgboost"  # trained where nothing can be chosen yet (too few changes): the shipped model decides meanwhile


class NothingToLearnYet(UserError):
    """The history is too short to learn from: no commit has a measured ancestor, or no pair is
    decided.  CI's first runs meet it on the way to a history (`train --if-ready`)."""


def default_bundle_path(store: Store) -> Path:
    if store.location != store.root:
        raise UserError("the store is not a local directory; give --bundle PATH for the model bundle")
    return Path(store.root) / BUNDLE_DIRECTORY


def train_bundle(store: Store, config: Config, model: str, scope: str, target_hit_rate: float, seed: int,
                 bundle_path: Path, benchmarks: Sequence[str] | None = None,
                 operating_point: str = "quantile") -> tuple[Bundle, pd.DataFrame]:
    """Train and save; returns the bundle and a summary table (one row per benchmark).  `model`
    AUTO: the learner the project's own backtest chooses (choose_model)."""
    history = load_history(store)
    chosen = list(benchmarks) if benchmarks else benchmarks_of(history)
    if not chosen:
        raise UserError(f"{store.location}: no measurements; configure [[benchmark]] and run `selector collect`")
    tuples = closest_tuples(history, chosen)
    if tuples.empty:
        raise NothingToLearnYet(f"{store.location}: no commit has a measured ancestor yet; collect at least two commits")
    table = labelled_feature_table(store, config, history, tuples)
    undecided = int(table["label"].isna().sum())
    table = table[table["label"].notna()].reset_index(drop=True)
    if table.empty:
        raise NothingToLearnYet(f"{store.location}: none of its {undecided} labelled pairs is decided, so there is nothing to learn "
                        "from (`selector collect` says why labels are undecided; `selector calibrate` decides those of "
                        "exact counts); until then `select` uses the shipped cross-project model")
    # select follows the project's own model where it learnt from enough changes: a benchmark's own
    # (per-benchmark), or all of them (pooled)
    changes = table[table["label"] == True].groupby("benchmark").size()  # noqa: E712
    deciding = ([] if int(changes.sum()) < OWN_POSITIVES_NEEDED else list(chosen)) if scope == "pooled" else \
        [b for b in chosen if int(changes.get(b, 0)) >= OWN_POSITIVES_NEEDED]
    judged = None if scope == "pooled" else deciding
    policies: dict[str, dict] = {}
    choice = None
    if model == AUTO:
        model, choice, policies = choose_model(store, config, history, scope, target_hit_rate, seed, operating_point, chosen,
                                               judged, bool(deciding))
    spec = model_spec(model)
    fitted: list[FittedModel] = []
    inputs: dict[str | None, pd.DataFrame] = {}
    groups = [(None, table)] if scope == "pooled" else [(b, table[table["benchmark"] == b]) for b in chosen]
    for benchmark, part in groups:
        if part.empty:
            continue
        X = design_matrix(part, FEATURE_NAMES, scope, chosen)
        inputs[benchmark] = X
        fitted.append(train_one(spec, X, part["label"].to_numpy(bool), part["hops"].to_numpy(), scope, benchmark,
                                target_hit_rate, seed, operating_point=operating_point, effect=measured_effects(part),
                                min_effect=config.labels.min_effect))
    commits = history.commits.sort_by("author_time").to_pylist()  # stable: the last of equal times, as before
    newest = commits[-1]
    trained_on = {
        "commits": len({commit["sha"] for commit in commits}), "tuples": len(table), "benchmarks": chosen,
        "newest_commit": str(newest["sha"]), "newest_time": str(newest["author_time"]),
        "store": str(store.location),
    }
    settings = {"model": model, "scope": scope, "target_hit_rate": target_hit_rate, "seed": seed,
                "operating_point": operating_point,
                "harness": {benchmark: harness_digest(config, benchmark) for benchmark in chosen}}
    # The hazards this project's own labelled history shows harmless, per benchmark: only there may
    # a model prune a tuple on which one fires (models.decision).
    settings["harmless_hazards"] = harmless_hazards(table[FEATURE_NAMES].to_numpy(float), table["label"].to_numpy(bool),
                                                    table["benchmark"].tolist())
    if any(m.training_positives < OWN_POSITIVES_NEEDED for m in fitted):  # the shipped model will decide for some
        settings["shipped_threshold"] = adapted_shipped_threshold(table, config, target_hit_rate)
    if choice is not None:
        settings["model_choice"] = choice
    if deciding:  # select will follow this model for some benchmarks: does it earn its keep here?
        settings |= policies.get(model) or own_policies(store, config, history, [model], scope, target_hit_rate, seed,
                                                        operating_point, chosen, judged)[model]
    bundle = save_bundle(bundle_path, fitted, list(FEATURE_NAMES), trained_on, settings, training_inputs=inputs)
    summary = pd.DataFrame([{
        "benchmark": m.benchmark or "(all, pooled)", "model": m.spec_name, "tuples": m.training_tuples,
        "positives": m.training_positives,
        "threshold": m.threshold if np.isfinite(m.threshold) else None,
        "note": "no change in its history yet: always run" if not m.training_positives else "",
    } for m in fitted])
    return bundle, summary


def choose_model(store: Store, config: Config, history: History, scope: str, target_hit_rate: float, seed: int,
                 operating_point: str, benchmarks: Sequence[str], judged: Sequence[str] | None,
                 enough: bool) -> tuple[str, dict, dict[str, dict]]:
    """The learner `select` should follow, chosen by the project's own Method 4 backtest of every
    CANDIDATES learner (own_policies): on the backtest's earlier epochs, the one that prunes the
    most among those whose evidence there earned pruning; that learner alone is then held to the
    conformal bound on the later epochs, and where its changes there cannot certify the miss
    rate asked, the rule decides (no other learner is tried on them: that would choose on the
    very changes that certify).  Where none earned pruning, FALLBACK, and the rule decides.
    Returns (model, the choice as the bundle records it, own_policies' result)."""
    if not enough:
        return FALLBACK, {"chosen": FALLBACK, "by": OWN_EVIDENCE, "reason": (
            f"not chosen by evidence: no benchmark's history holds {OWN_POSITIVES_NEEDED} changes yet, so the shipped "
            f"model decides; {FALLBACK} is trained meanwhile")}, {}
    policies = own_policies(store, config, history, list(CANDIDATES), scope, target_hit_rate, seed, operating_point,
                            benchmarks, judged)
    candidates = {name: _candidate_figures(result) for name, result in policies.items()}
    pruning = [name for name in CANDIDATES if candidates[name]["policy"] != STEPPING_ASIDE_RULE
               and candidates[name]["dismiss_rate"] is not None]
    earned = f"{len(pruning)} of {len(CANDIDATES)}"
    if pruning:
        best = max(pruning, key=lambda name: (candidates[name]["dismiss_rate"], -CANDIDATES.index(name)))
        figures = candidates[best]
        reason = (f"of {len(CANDIDATES)} learners backtested on this history, {earned} earned pruning on its earlier "
                  f"epochs ({figures['changes']} changes); {best} "
                  f"({'within the rule' if figures['policy'] == WITHIN_RULE else 'alone'}) dismissed the most there "
                  f"({figures['dismiss_rate']:.2f} against the rule's {figures['rule_dismiss_rate']:.2f}) at a hit rate of "
                  f"{figures['hit_rate']:.2f}; {_certified(policies[best])}")
    else:
        best = FALLBACK
        reason = (f"none of {len(CANDIDATES)} learners backtested on this history earned pruning on its earlier epochs: "
                  "the rule decides")
    return best, {"chosen": best, "by": OWN_EVIDENCE, "reason": reason, "earned": earned, "candidates": candidates}, policies


def _certified(result: dict) -> str:
    """What the later epochs said of the chosen learner: the bound its changes there certify."""
    bound = result.get("own_bound") or {}
    if not bound:
        return "no later epoch judged it: the rule decides"
    said = (f"on the later epochs its {bound['changes']} changes ({bound['missed']} missed) certify a miss rate of at "
            f"most {bound['bound']:.3f}")
    return said + (f", above the {bound['miss_rate']:.2f} asked: the rule decides" if bound.get("decided") else "")


def _candidate_figures(result: dict) -> dict:
    """A candidate's policy and its figures under it, beside the rule's, on the evidence it was
    chosen on (the backtest's earlier epochs), for the bundle's record."""
    chosen_on = result.get("chosen_on") or result
    evidence = (chosen_on.get("evidence") or {}).get(OWN_EVIDENCE)
    if evidence is None:
        return {"policy": chosen_on["policy"], "hit_rate": None, "dismiss_rate": None, "rule_dismiss_rate": None,
                "changes": None, "bound": None}
    shown = WITHIN_RULE if chosen_on["policy"] == STEPPING_ASIDE_RULE else chosen_on["policy"]
    return {"policy": chosen_on["policy"], "hit_rate": evidence[shown]["hit_rate"],
            "dismiss_rate": evidence[shown]["dismiss_rate"], "rule_dismiss_rate": evidence["rule"]["dismiss_rate"],
            "changes": evidence["changes"], "bound": result.get("own_bound", {}).get("bound")}


def own_policies(store: Store, config: Config, history: History, models: Sequence[str], scope: str, target_hit_rate: float,
                 seed: int, operating_point: str, benchmarks: Sequence[str], judged: Sequence[str] | None) -> dict[str, dict]:
    """For each of `models`, the policy `select` follows with it as the project's own model
    (selector.policy), from one Method 4 backtest of them all on the project's own history: on
    the test tuples of the epochs whose training held OWN_POSITIVES_NEEDED changes (where
    `select` would follow it, before that the shipped model decides), of the `judged` benchmarks
    (None: all), the model, the model within the executed-changed rule and the rule, each
    deciding as `select` does.  Every epoch is trained on its past alone.  A policy that prunes
    must also keep the conformal bound of its test changes (own_bound).  With several `models`
    (one to be chosen among them), each policy is judged on the earlier epochs
    (choosing_and_certifying; recorded as "chosen_on") and bounded on the later ones alone.  A
    history the backtest cannot judge (too short for its epochs, or no test tuple) leaves the rule
    to decide, as an uncertified policy may not prune, and the reason says so."""
    try:
        data = evaluation_data(store, config, "method4", OWN_BACKTEST, benchmarks, history)
    except UserError as error:
        return {m: {"policy": STEPPING_ASIDE_RULE, "policy_reason": _unjudged(str(error))} for m in models}
    predictions = run_backtest(data, list(models), [scope], target_hit_rate, seed, operating_point=operating_point).predictions
    enough = own_model_epochs(data.plan, data.table["label"])
    tests = predictions[predictions["epoch"].isin(enough)] if enough else predictions
    if judged is not None:
        tests = tests[tests["benchmark"].isin(judged)]
    rows = feature_rows(data.table)
    epochs = f"{len(enough)} epochs trained on {OWN_POSITIVES_NEEDED} changes or more" if enough else "every epoch"
    judged_on = f"in this project's own Method 4 backtest ({epochs})"
    if len(models) > 1:
        return _chosen_and_bounded(tests, models, rows, config.labels.min_effect, judged_on, 1.0 - target_hit_rate)
    policies = {}
    for model in models:
        mine = tests[tests["model"] == model]
        if mine.empty:
            policies[model] = {"policy": STEPPING_ASIDE_RULE, "policy_reason": _unjudged("its backtest tested no tuple")}
            continue
        evidence = {OWN_EVIDENCE: backtest_evidence(mine, rows, config.labels.min_effect)}
        policy, reason, bound = bounded_policy(evidence, judged_on, 1.0 - target_hit_rate)
        policies[model] = {"policy": policy, "policy_reason": reason, "evidence": evidence, "own_bound": bound}
    return policies


def _unjudged(why: str) -> str:
    """The reason of a policy no backtest judged: the rule decides, since no changes certify a bound."""
    return f"not judged against the executed-changed rule ({why}), so no miss rate is certified: the rule decides"


def _chosen_and_bounded(tests: pd.DataFrame, models: Sequence[str], rows: pd.DataFrame, min_effect: float,
                        judged_on: str, miss_rate: float) -> dict[str, dict]:
    """own_policies for a choice among `models`: each one's policy judged on the earlier epochs
    ("chosen_on") and bounded on the later ones alone (choosing_and_certifying).  Without an
    earlier epoch nothing earns pruning, and without a later one nothing is certified: either
    way the rule decides (never the model unjudged)."""
    choosing, certifying = choosing_and_certifying(tests)
    policies = {}
    for model in models:
        earlier_tests, later_tests = choosing[choosing["model"] == model], certifying[certifying["model"] == model]
        if earlier_tests.empty:
            chosen_policy, chosen_reason, earlier = STEPPING_ASIDE_RULE, f"{judged_on}, no earlier epoch to choose on", None
        else:
            earlier = {OWN_EVIDENCE: backtest_evidence(earlier_tests, rows, min_effect)}
            chosen_policy, chosen_reason = policy_from(earlier, f"{judged_on}, on its earlier epochs")
        chosen_on = {"policy": chosen_policy, "evidence": earlier}
        if later_tests.empty:
            policies[model] = {"policy": STEPPING_ASIDE_RULE, "chosen_on": chosen_on,
                               "policy_reason": f"{judged_on}, no later epoch to bound it: the rule decides"}
            continue
        evidence = {OWN_EVIDENCE: backtest_evidence(later_tests, rows, min_effect)}
        policy, reason, bound = policy_bounded_on(chosen_policy, evidence, f"{judged_on}, on its later epochs", miss_rate)
        policies[model] = {"policy": policy, "policy_reason": reason or chosen_reason, "evidence": evidence,
                           "own_bound": bound, "chosen_on": chosen_on}
    return policies


def choosing_and_certifying(tests: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """An own backtest's test predictions of several learners split in time, by epoch: the earlier
    epochs, which hold the first half of the test changes and on which one learner is chosen,
    and the later ones, on which the chosen learner alone is held to the conformal bound.  The
    bound assumes a policy fixed before its changes were seen; a learner chosen because it kept
    every change of the very changes that bound it is not (of eight learners backtested on 32 of
    MuJS's changes, six missed two or one; one of the two that missed none was chosen, and missed
    the next change the replay walked)."""
    one = tests[tests["model"] == tests["model"].iloc[0]] if len(tests) else tests
    changes = one.groupby("epoch")["label"].sum().sort_index().cumsum()
    if len(changes) < 2:  # one epoch or none: nothing to choose on apart from what bounds
        return tests.iloc[:0], tests
    # the first epoch that reaches half of the changes closes the earlier part; the later keeps one epoch at least
    at = min(int(np.searchsorted(changes.to_numpy(), changes.iloc[-1] / 2)), len(changes) - 2)
    return tests[tests["epoch"] <= changes.index[at]], tests[tests["epoch"] > changes.index[at]]


def adapted_shipped_threshold(table: pd.DataFrame, config: Config, target_hit_rate: float) -> float | None:
    """The shipped model's operating point adapted to the project's own labelled changes: lowered
    (never raised) until it keeps the target share of those that its policy can run, as `select`
    decides them.  None without a shipped model or a change.  Only the project's past reaches
    it (the labelled commits so far), and `select` applies it while the shipped model decides."""
    from perf_selector.models.bundle import BundleError, load_bundle
    from perf_selector.models.evaluation import operating_threshold
    from perf_selector.models.decision import executed_rule_scores, steps_aside, within_rule
    from perf_selector.selector.selection.shipped_model import shipped_bundle_path

    path, labels = shipped_bundle_path(), table["label"].to_numpy(bool)
    if path is None or not labels.any():
        return None
    try:
        shipped = load_bundle(path, portable=True)
    except BundleError:
        return None
    entry = shipped.entry_for("")
    if entry is None or steps_aside(shipped):
        return None  # the rule decides: there is no threshold to adapt
    features = table[FEATURE_NAMES].to_numpy(float)
    reachable = labels & (executed_rule_scores(features) > 0) if within_rule(shipped) else labels
    if not reachable.any():
        return None
    scores = shipped.score_rows(entry, features[reachable], table["benchmark"][reachable].tolist(), list(FEATURE_NAMES))
    return float(min(entry.threshold, operating_threshold(scores, np.ones(len(scores), bool), target_hit_rate)))
