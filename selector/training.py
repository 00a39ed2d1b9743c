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
from perf_selector.models.registry import model_spec
from perf_selector.selector.config import Config, harness_digest
from perf_selector.selector.shipped_model import OWN_POSITIVES_NEEDED
from perf_selector.selector.feature_table import benchmarks_of
from perf_selector.storage.history import History, load_history
from perf_selector.selector.policy import backtest_evidence, feature_rows, own_model_epochs, policy_from
from perf_selector.selector.store_backtest import evaluation_data, labelled_feature_table, run_backtest
from perf_selector.storage.store import Store

BUNDLE_DIRECTORY = "models"
# The own model's evidence (own_policy): Method 4 as `selector backtest` runs it by default.
OWN_BACKTEST = {"k": 5, "first": None, "epoch_days": None}
OWN_EVIDENCE = "own backtest"


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
    """Train and save; returns the bundle and a summary table (one row per benchmark)."""
    spec = model_spec(model)
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
    deciding = [m.benchmark for m in fitted if m.training_positives >= OWN_POSITIVES_NEEDED]
    if deciding:  # select will follow this model for some benchmarks: does it earn its keep here?
        settings |= own_policy(store, config, history, model, scope, target_hit_rate, seed, operating_point, chosen,
                               None if scope == "pooled" else deciding)
    bundle = save_bundle(bundle_path, fitted, list(FEATURE_NAMES), trained_on, settings, training_inputs=inputs)
    summary = pd.DataFrame([{
        "benchmark": m.benchmark or "(all, pooled)", "model": m.spec_name, "tuples": m.training_tuples,
        "positives": m.training_positives,
        "threshold": m.threshold if np.isfinite(m.threshold) else None,
        "note": "no change in its history yet: always run" if not m.training_positives else "",
    } for m in fitted])
    return bundle, summary


def own_policy(store: Store, config: Config, history: History, model: str, scope: str, target_hit_rate: float,
               seed: int, operating_point: str, benchmarks: Sequence[str], judged: Sequence[str] | None) -> dict:
    """The policy `select` follows with the project's own model (selector.policy), from the
    project's own Method 4 backtest of that model: on the test tuples of the epochs whose
    training held OWN_POSITIVES_NEEDED changes (where `select` would follow it, before that the
    shipped model decides), of the `judged` benchmarks (None: all), the model, the model within
    the executed-changed rule and the rule, each deciding as `select` does.  Every epoch is
    trained on its past alone.  A history too short for the backtest leaves the model to
    decide, and the reason says so."""
    try:
        data = evaluation_data(store, config, "method4", OWN_BACKTEST, benchmarks, history)
    except UserError as error:
        return {"policy": "model", "policy_reason": f"not judged against the executed-changed rule: {error}"}
    predictions = run_backtest(data, [model], [scope], target_hit_rate, seed, operating_point=operating_point).predictions
    enough = own_model_epochs(data.plan, data.table["label"])
    tests = predictions[predictions["epoch"].isin(enough)] if enough else predictions
    if judged is not None:
        tests = tests[tests["benchmark"].isin(judged)]
    if tests.empty:
        return {"policy": "model", "policy_reason": "not judged against the executed-changed rule: its backtest tested no tuple"}
    evidence = {OWN_EVIDENCE: backtest_evidence(tests, feature_rows(data.table), config.labels.min_effect)}
    epochs = f"{len(enough)} epochs trained on {OWN_POSITIVES_NEEDED} changes or more" if enough else "every epoch"
    policy, reason = policy_from(evidence, f"in this project's own Method 4 backtest ({epochs})")
    return {"policy": policy, "policy_reason": reason, "evidence": evidence}


def adapted_shipped_threshold(table: pd.DataFrame, config: Config, target_hit_rate: float) -> float | None:
    """The shipped model's operating point adapted to the project's own labelled changes: lowered
    (never raised) until it keeps the target share of those that its policy can run, as `select`
    decides them.  None without a shipped model or a change.  Only the project's past reaches
    it (the labelled commits so far), and `select` applies it while the shipped model decides."""
    from perf_selector.models.bundle import BundleError, load_bundle
    from perf_selector.models.evaluation import operating_threshold
    from perf_selector.models.decision import executed_rule_scores, steps_aside, within_rule
    from perf_selector.selector.shipped_model import shipped_bundle_path

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
