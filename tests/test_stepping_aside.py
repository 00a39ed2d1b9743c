"""Learning that earns its keep, or steps aside (issue 27): a bundle whose model did not beat
the executed-changed rule on the projects it was tested on, held out in turn, lets the rule
decide, and `select`'s decision code says so."""

from __future__ import annotations

import numpy as np
import pandas as pd

from features.catalogue import FEATURE_NAMES
from models.backtest import train_one
from models.bundle import load_bundle, save_bundle
from models.design import design_matrix
from models.names import STEPPING_ASIDE_RULE
from models.registry import model_spec
from selector.project_evaluation import policy_from
from selector.selection import decide_rows


def _evidence(model_hit, model_dismiss, rule_hit, rule_dismiss, changes=10):
    return {"tuples": 100, "changes": changes, "model": {"hit_rate": model_hit, "dismiss_rate": model_dismiss},
            "rule": {"hit_rate": rule_hit, "dismiss_rate": rule_dismiss}}


def test_the_model_decides_only_where_it_beat_the_rule_on_every_held_out_project():
    assert policy_from({"a": _evidence(1.0, 0.9, 1.0, 0.8), "b": _evidence(0.95, 0.7, 0.9, 0.5)})[0] == "model"
    policy, reason = policy_from({"a": _evidence(1.0, 0.9, 1.0, 0.8), "b": _evidence(0.9, 0.95, 1.0, 0.5)})
    assert policy == STEPPING_ASIDE_RULE and "b:" in reason and "a:" not in reason  # b: it missed what the rule caught
    policy, reason = policy_from({"a": _evidence(1.0, 0.8, 1.0, 0.8)})  # no more dismissed: no gain for the risk
    assert policy == STEPPING_ASIDE_RULE and "a:" in reason
    # a project without changes judges the dismiss rate alone
    assert policy_from({"a": _evidence(None, 0.9, None, 0.8, changes=0)})[0] == "model"


def _bundle(tmp_path, policy: str | None):
    rng = np.random.default_rng(1)
    table = pd.DataFrame(rng.random((300, len(FEATURE_NAMES))), columns=FEATURE_NAMES)
    table["build_config_changed"] = 0.0
    table["benchmark"] = "b"
    label = table["top_changed_rank_by_instructions"].to_numpy() > 0.8
    X = design_matrix(table, FEATURE_NAMES, "cross-project", [])
    fitted = train_one(model_spec("perphecy"), X, label, np.ones(len(label)), "cross-project", None, 0.95, 0)
    settings = {"model": "perphecy", "scope": "cross-project"} | ({"policy": policy} if policy else {})
    save_bundle(tmp_path / str(policy), [fitted], list(FEATURE_NAMES), {"projects": ["p"]}, settings, {None: X})
    return load_bundle(tmp_path / str(policy), portable=True)


def test_a_bundle_that_steps_aside_decides_by_the_executed_changed_rule(tmp_path):
    features = np.zeros((4, len(FEATURE_NAMES)))
    column = FEATURE_NAMES.index
    features[0, column("top_changed_rank_by_instructions")] = 95.0  # the model runs it; nothing executed changed
    features[1, column("executed_changed_share")] = 0.002  # executed changed code: the rule runs it
    features[2, column("changed_data_reached")] = 1.0  # a data object it reads changed: the rule runs it
    # row 3: nothing changed
    benchmarks = ["b"] * 4
    deciding = decide_rows(_bundle(tmp_path, None), features, benchmarks, 0.01)
    aside = decide_rows(_bundle(tmp_path, STEPPING_ASIDE_RULE), features, benchmarks, 0.01)
    assert deciding.run[0] and not aside.run[0]
    assert aside.run.tolist() == [False, True, True, False]
    assert aside.why.tolist() == ["skip", "model", "model", "skip"] and (aside.threshold == 0.5).all()
