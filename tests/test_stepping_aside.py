"""Learning that earns its keep, or steps aside (issue 27): a bundle whose model did not beat
the executed-changed rule on the projects it was tested on, held out in turn, lets the rule
decide, and `select`'s decision code says so."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pandas as pd
import pytest

from perf_selector.features.catalogue import FEATURE_NAMES
from perf_selector.models.backtest import train_one
from perf_selector.models.bundle import load_bundle, save_bundle
from perf_selector.models.design import design_matrix
from perf_selector.models.names import STEPPING_ASIDE_RULE, WITHIN_RULE
from perf_selector.models.registry import model_spec
from perf_selector.selector.selection.policy import policy_from
from perf_selector.models.decision import decide_rows


def _evidence(model_hit, model_dismiss, rule_hit, rule_dismiss, changes=10, within=(None, None)):
    rates = lambda hit, dismiss: {"hit_rate": hit, "dismiss_rate": dismiss}  # noqa: E731
    return {"tuples": 100, "changes": changes, "model": rates(model_hit, model_dismiss), "rule": rates(rule_hit, rule_dismiss),
            WITHIN_RULE: rates(*within) if within[1] is not None else None}


def test_the_model_decides_only_where_it_beat_the_rule_on_every_held_out_project():
    assert policy_from({"a": _evidence(1.0, 0.9, 1.0, 0.8), "b": _evidence(0.95, 0.7, 0.9, 0.5)})[0] == "model"
    policy, reason = policy_from({"a": _evidence(1.0, 0.9, 1.0, 0.8), "b": _evidence(0.9, 0.95, 1.0, 0.5)})
    assert policy == STEPPING_ASIDE_RULE and "b:" in reason and "a:" not in reason  # b: it missed what the rule caught
    policy, reason = policy_from({"a": _evidence(1.0, 0.8, 1.0, 0.8)})  # no more dismissed: no gain for the risk
    assert policy == STEPPING_ASIDE_RULE and "no gain" in reason
    # a tie on one project does not veto a gain on another
    assert policy_from({"a": _evidence(1.0, 0.8, 1.0, 0.8), "b": _evidence(1.0, 0.9, 1.0, 0.8)})[0] == "model"
    # dismissing less than the rule anywhere does
    policy, reason = policy_from({"a": _evidence(1.0, 0.7, 1.0, 0.8), "b": _evidence(1.0, 0.95, 1.0, 0.8)})
    assert policy == STEPPING_ASIDE_RULE and "a: 1.00 / 0.70 against the rule's 1.00 / 0.80" in reason
    # a project without changes judges the dismiss rate alone
    assert policy_from({"a": _evidence(None, 0.9, None, 0.8, changes=0)})[0] == "model"
    # the model alone missed a change on b, deciding within the rule it did not: within the rule
    evidence = {"a": _evidence(1.0, 0.9, 1.0, 0.8, within=(1.0, 0.91)), "b": _evidence(0.9, 0.95, 1.0, 0.5, within=(1.0, 0.6))}
    policy, reason = policy_from(evidence)
    assert policy == WITHIN_RULE and "a: 1.00 / 0.91 against 1.00 / 0.80" in reason
    # both beat the rule everywhere: the one that dismissed more
    evidence = {"a": _evidence(1.0, 0.95, 1.0, 0.8, within=(1.0, 0.9))}
    assert policy_from(evidence)[0] == "model"


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
    features[1, column("executed_changed_share")] = 0.002  # executed changed code that steers: the rule runs it
    features[1, column("executed_steering_share")] = 0.002
    features[2, column("changed_data_reached")] = 1.0  # a data object it reads changed: the rule runs it
    # row 3: nothing changed
    benchmarks = ["b"] * 4
    deciding = decide_rows(_bundle(tmp_path, None), features, benchmarks, 0.01)
    aside = decide_rows(_bundle(tmp_path, STEPPING_ASIDE_RULE), features, benchmarks, 0.01)
    assert deciding.run[0] and not aside.run[0]
    assert aside.run.tolist() == [False, True, True, False]
    assert aside.why.tolist() == ["skip", "model", "model", "skip"] and (aside.threshold == 0.5).all()
    # within the rule: the model decides among the rule's runs only
    features[1, column("top_changed_rank_by_instructions")] = 95.0  # both run it
    within = decide_rows(_bundle(tmp_path, WITHIN_RULE), features, benchmarks, 0.01)
    model = decide_rows(_bundle(tmp_path, None), features, benchmarks, 0.01)
    assert within.run.tolist() == (model.run & aside.run).tolist() == [False, True, model.run[2], False]


@pytest.mark.slow
@pytest.mark.parametrize("model", ["always-run", "xgboost"])
def test_the_projects_own_model_is_judged_by_its_own_backtest(evolved_sample, tmp_path, model):
    """`train` backtests the project's own model (Method 4, every epoch trained on its past) against
    the executed-changed rule on the same tuples, and `select` follows what that evidence says:
    a model that runs everything dismisses less than the rule and steps aside for it."""
    import subprocess

    from perf_selector.selector.config import load_config
    from perf_selector.selector.selection.policy import backtest_evidence, feature_rows
    from perf_selector.selector.evaluation.store_backtest import evaluation_data, run_backtest
    from perf_selector.selector.evaluation.training import OWN_BACKTEST, OWN_EVIDENCE
    from perf_selector.storage.store import Store
    from tests.helpers import selector_command

    source, commits = evolved_sample
    root = tmp_path / "project"
    shutil.copytree(source, root, symlinks=True)
    trained = subprocess.run(selector_command("train", "--repo", str(root), "--model", model, "--no-tracking",
                                              "--format", "json"), capture_output=True, text=True)
    assert trained.returncode == 0, trained.stderr
    settings = json.loads(trained.stdout)["settings"]
    evidence = settings["evidence"][OWN_EVIDENCE]
    assert evidence["changes"] >= 1 and evidence["tuples"] > evidence["changes"]
    assert settings["policy"] == policy_from(settings["evidence"], "x")[0]
    # the evidence is the backtest's own decisions, recomputed here from its predictions
    store, config = Store(root / ".selector", create=False), load_config(root / "selector.toml")
    data = evaluation_data(store, config, "method4", OWN_BACKTEST)
    tests = run_backtest(data, [model], ["pooled"], 0.95, 0).predictions
    recomputed = backtest_evidence(tests, feature_rows(data.table), config.labels.min_effect)
    if evidence["tuples"] == recomputed["tuples"]:  # every epoch was trained on enough changes
        assert evidence == recomputed
    assert evidence["rule"]["dismiss_rate"] > 0  # the rule skips what executed no changed code
    if model == "always-run":
        assert evidence["model"]["dismiss_rate"] == 0.0
        assert settings["policy"] == STEPPING_ASIDE_RULE and "own Method 4 backtest" in settings["policy_reason"]
        assert "select lets the executed-changed rule decide" in subprocess.run(
            selector_command("train", "--repo", str(root), "--model", model, "--no-tracking"),
            capture_output=True, text=True).stderr
        # select follows the rule: a comment-only commit runs nothing, and the notes say why
        neutral = next(c.sha for c in commits if c.step.kind == "neutral")
        selected = subprocess.run(selector_command("select", neutral, "--repo", str(root), "--format", "json"),
                                  capture_output=True, text=True)
        document = json.loads(selected.stdout)
        assert document["run"] == [], document["benchmarks"]
        assert f"the executed-changed rule decides: this project's {model} steps aside (it dismissed no more than the " \
               "rule on its evidence)" in document["notes"], document["notes"]
        assert document["model"]["policy"] == STEPPING_ASIDE_RULE and "own Method 4 backtest" in document["model"]["policy_reason"]
        assert max(map(len, document["notes"])) <= 200


def test_evaluations_replay_of_the_own_model_judges_each_epoch_on_earlier_ones_only():
    """evaluate's own-or-shipped replay: each epoch of the own model is decided under the policy
    judged on the earlier epochs' predictions; what happens in an epoch never sets its own policy."""
    from perf_selector.selector.evaluation.project_evaluation import own_policy_replay

    column = FEATURE_NAMES.index
    rows, predictions = [], []
    for epoch in range(3):
        for i in range(10):
            features = np.zeros(len(FEATURE_NAMES))
            executed = i < 3  # the rule runs three tuples of ten; one of them changed
            features[column("executed_changed_share")] = 0.05 if executed else 0.0
            features[column("executed_steering_share")] = 0.05 if executed else 0.0
            key = {"new": f"n{epoch}-{i}", "old": f"o{epoch}-{i}", "benchmark": "b"}
            rows.append({**key, **dict(zip(FEATURE_NAMES, features))})
            # a model that runs everything in epochs 0 and 1, and only the change in epoch 2
            score = 1.0 if epoch < 2 or i == 0 else 0.0
            predictions.append({**key, "model": "m", "scope": "pooled", "epoch": epoch, "label": i == 0, "score": score,
                                "threshold": 0.5, "run": score >= 0.5})
    table, predictions = pd.DataFrame(rows), pd.DataFrame(predictions)
    replay = own_policy_replay(predictions, {1, 2}, table, 0.01)
    assert sorted(set(replay["epoch"])) == [1, 2]  # only the epochs where select follows the own model
    run = replay.set_index("new")["run"]
    # epoch 1: judged on epoch 0, where the model dismissed nothing: the rule decides (runs 3 of 10)
    assert run[[f"n1-{i}" for i in range(10)]].tolist() == [True] * 3 + [False] * 7
    # epoch 2: judged on epoch 1 alone (the epochs with enough changes), the model lost again: the
    # rule decides, although in epoch 2 itself the model would have dismissed more
    assert run[[f"n2-{i}" for i in range(10)]].tolist() == [True] * 3 + [False] * 7
    # once epoch 1 showed the model beating the rule, epoch 2 follows it, where its changes certify the
    # miss rate asked: one change certifies no miss rate below 1/2 (own_bound), so at 0.05 the rule decides
    predictions.loc[predictions["epoch"] == 1, "score"] = (predictions["new"].str.endswith("-0")).astype(float)
    replay = own_policy_replay(predictions, {1, 2}, table, 0.01, miss_rate=0.5).set_index("new")["run"]
    assert replay[[f"n2-{i}" for i in range(10)]].tolist() == [True] + [False] * 9
    replay = own_policy_replay(predictions, {1, 2}, table, 0.01, miss_rate=0.05).set_index("new")["run"]
    assert replay[[f"n2-{i}" for i in range(10)]].tolist() == [True] * 3 + [False] * 7


def test_the_own_bound_is_the_conformal_bound_of_the_backtest_changes():
    """(missed + 1) / (changes + 1): 19 changes, none missed, certify 0.05; one missed does not."""
    from perf_selector.selector.selection.policy import own_bound

    def evidence(changes: int, hit: float) -> dict:
        return {"changes": changes, "model": {"hit_rate": hit, "dismiss_rate": 0.9},
                WITHIN_RULE: {"hit_rate": hit, "dismiss_rate": 0.9}, "rule": {"hit_rate": 1.0, "dismiss_rate": 0.5}}

    assert own_bound(evidence(19, 1.0), WITHIN_RULE, 0.05) == {"changes": 19, "missed": 0, "bound": 0.05, "miss_rate": 0.05}
    assert own_bound(evidence(19, 18 / 19), "model", 0.05)["bound"] == pytest.approx(0.1)
    assert own_bound(evidence(39, 38 / 39), "model", 0.05)["bound"] == pytest.approx(0.05)
    assert own_bound(evidence(18, 1.0), "model", 0.05)["bound"] > 0.05


def test_a_learner_chosen_among_several_is_bounded_on_changes_it_was_not_chosen_on():
    """The own backtest's test epochs are split in time at half of their changes: the learner is
    chosen on the earlier epochs, and only the later ones' changes bound it (the bound assumes a
    policy fixed before its changes were seen)."""
    from perf_selector.selector.evaluation.training import choosing_and_certifying

    labels = {0: [True, False], 1: [True, True, False], 2: [False, False], 3: [True, False], 4: [True, True]}
    tests = pd.DataFrame([{"model": model, "epoch": epoch, "label": label, "new": f"{epoch}-{i}"}
                          for model in ("a", "b") for epoch, row in labels.items() for i, label in enumerate(row)])
    choosing, certifying = choosing_and_certifying(tests)
    # six changes: epochs 0 and 1 hold the first three, the later ones the other three
    assert sorted(set(choosing["epoch"])) == [0, 1] and sorted(set(certifying["epoch"])) == [2, 3, 4]
    assert set(choosing["model"]) == set(certifying["model"]) == {"a", "b"}
    assert int(certifying[certifying["model"] == "a"]["label"].sum()) == 3
    nothing = choosing_and_certifying(tests.iloc[:0])
    assert nothing[0].empty and nothing[1].empty
    # the changes all in the last epoch (one commit that changed many benchmarks): the later part keeps it
    late = pd.DataFrame([{"model": "a", "epoch": epoch, "label": epoch == 2} for epoch in (0, 1, 2, 2)])
    choosing, certifying = choosing_and_certifying(late)
    assert sorted(set(choosing["epoch"])) == [0, 1] and sorted(set(certifying["epoch"])) == [2]
    one = choosing_and_certifying(late[late["epoch"] == 2])  # one epoch: nothing to choose on apart from it
    assert one[0].empty and len(one[1]) == 2


def test_without_an_earlier_or_a_later_epoch_the_rule_decides_never_the_model_unjudged():
    """A choice among learners whose backtest has a single test epoch cannot choose on changes
    apart from those that bound: the rule decides.  (Before the later part kept one epoch at least,
    spdlog's replay at commit 150, whose last test epoch held 42 of its 64 test changes, left the
    later part empty and let the model decide alone, unjudged.)"""
    from perf_selector.selector.evaluation.training import OWN_EVIDENCE, _chosen_and_bounded
    from perf_selector.selector.selection.policy import feature_rows

    column = FEATURE_NAMES.index
    rows, predictions = [], []
    for i in range(10):
        features = np.zeros(len(FEATURE_NAMES))
        features[column("executed_changed_share")] = features[column("executed_steering_share")] = 0.05 if i < 3 else 0.0
        key = {"new": f"n{i}", "old": f"o{i}", "benchmark": "b"}
        rows.append({**key, **dict(zip(FEATURE_NAMES, features))})
        for model in ("a", "b"):
            predictions.append({**key, "model": model, "scope": "pooled", "epoch": 7, "label": i == 0,
                                "score": float(i == 0), "threshold": 0.5})
    policies = _chosen_and_bounded(pd.DataFrame(predictions), ["a", "b"], feature_rows(pd.DataFrame(rows)), 0.01,
                                   "in the test", 0.05)
    for model in ("a", "b"):
        assert policies[model]["policy"] == STEPPING_ASIDE_RULE
        assert policies[model]["policy_reason"] == "in the test, no earlier epoch to choose on"
        assert policies[model]["chosen_on"] == {"policy": STEPPING_ASIDE_RULE, "evidence": None}
        assert policies[model]["evidence"][OWN_EVIDENCE]["changes"] == 1


def test_the_chosen_learner_alone_faces_the_later_epochs_and_no_other_is_tried_on_them(monkeypatch):
    """choose_model takes the learner that pruned the most on the earlier epochs; where the later
    epochs' changes do not certify it, the rule decides, and the learner that the later epochs
    happen to favour is not taken in its place (that would choose on the changes that bound it)."""
    from perf_selector.selector.evaluation import training

    def result(earlier_dismiss, later_policy, later_missed):
        rates = lambda hit, dismiss: {"hit_rate": hit, "dismiss_rate": dismiss}  # noqa: E731
        earlier = {"tuples": 100, "changes": 20, "model": rates(1.0, earlier_dismiss), WITHIN_RULE: rates(1.0, earlier_dismiss),
                   "rule": rates(1.0, 0.2)}
        bound = {"changes": 20, "missed": later_missed, "bound": (later_missed + 1) / 21, "miss_rate": 0.05}
        if later_policy == STEPPING_ASIDE_RULE:
            bound["decided"] = True
        return {"policy": later_policy, "policy_reason": "", "evidence": {training.OWN_EVIDENCE: earlier},
                "own_bound": bound, "chosen_on": {"policy": WITHIN_RULE, "evidence": {training.OWN_EVIDENCE: earlier}}}

    figures = {name: result(0.3, WITHIN_RULE, 0) for name in training.CANDIDATES}
    figures["effect"] = result(0.6, STEPPING_ASIDE_RULE, 1)  # the most on the earlier epochs; missed one later
    monkeypatch.setattr(training, "own_policies", lambda *args, **kwargs: figures)
    model, choice, _ = training.choose_model(None, None, None, "pooled", 0.95, 0, "quantile", [], None, True)
    assert model == "effect" and choice["chosen"] == "effect"
    assert choice["earned"] == f"{len(training.CANDIDATES)} of {len(training.CANDIDATES)}"
    assert "dismissed the most there (0.60" in choice["reason"] and "(1 missed)" in choice["reason"]
    assert choice["reason"].endswith("above the 0.05 asked: the rule decides")


@pytest.mark.slow
def test_a_learner_its_own_backtest_cannot_judge_lets_the_rule_decide(evolved_sample):
    """A model no backtest judged certifies no miss rate: whether the backtest could not run (here:
    no measurement of the benchmarks asked) or tested no tuple of the benchmarks judged, the rule
    decides and the reason says why, as for a learner chosen among several (before, a single learner
    was left to decide alone, unjudged)."""
    from perf_selector.selector.config import load_config
    from perf_selector.selector.evaluation.training import own_policies
    from perf_selector.storage.history import load_history
    from perf_selector.storage.store import Store

    root, _ = evolved_sample
    store, config = Store(root / ".selector", create=False), load_config(root / "selector.toml")
    history = load_history(store)
    arguments = ("pooled", 0.95, 0, "quantile")
    not_run = own_policies(store, config, history, ["xgboost"], *arguments, ["no-such-benchmark"], None)["xgboost"]
    untested = own_policies(store, config, history, ["xgboost"], *arguments, None, ["no-such-benchmark"])["xgboost"]
    judged = own_policies(store, config, history, ["xgboost"], *arguments, None, None)["xgboost"]
    for policy in (not_run, untested):
        assert policy["policy"] == STEPPING_ASIDE_RULE
        assert policy["policy_reason"].startswith("not judged against the executed-changed rule (")
        assert policy["policy_reason"].endswith("so no miss rate is certified: the rule decides")
        assert "evidence" not in policy
    assert "no measurements of benchmark(s) no-such-benchmark" in not_run["policy_reason"]
    assert "its backtest tested no tuple" in untested["policy_reason"]
    assert judged["evidence"]["own backtest"]["changes"] >= 1  # the same history, judged where the benchmarks exist


def test_the_one_line_says_why_the_rule_decides_where_no_evidence_or_no_epoch_judged_the_model():
    """select's one line for a model that steps aside tells the reason that made the rule decide: no
    backtest judged it (not "it did worse than the rule", which nothing showed), no earlier epoch to
    choose a learner on, no later one to certify it, or the earlier epochs' evidence it was chosen on."""
    from types import SimpleNamespace

    from perf_selector.models.decision import policy_summary
    from perf_selector.selector.evaluation.training import OWN_EVIDENCE

    def line(**settings):
        return policy_summary(SimpleNamespace(settings={"model": "xgboost", "policy": STEPPING_ASIDE_RULE, **settings}),
                              shipped=False)

    prefix = "the executed-changed rule decides: this project's xgboost steps aside ("
    assert line() == prefix + "no backtest judged it, so no miss rate is certified)"
    assert line(chosen_on={"policy": STEPPING_ASIDE_RULE, "evidence": None},
                evidence={OWN_EVIDENCE: _evidence(1.0, 0.9, 1.0, 0.5)}) == \
        prefix + "its backtest had no earlier epoch to choose a learner on)"
    earned = {OWN_EVIDENCE: _evidence(1.0, 0.9, 1.0, 0.5)}
    assert line(chosen_on={"policy": "model", "evidence": earned}) == prefix + "its backtest had no later epoch to certify it)"
    # chosen on earlier epochs where it dismissed no more than the rule; the later ones (better) do not speak for it
    assert line(chosen_on={"policy": STEPPING_ASIDE_RULE, "evidence": {OWN_EVIDENCE: _evidence(1.0, 0.5, 1.0, 0.5)}},
                evidence={OWN_EVIDENCE: _evidence(1.0, 0.9, 1.0, 0.5)}) == \
        prefix + "it dismissed no more than the rule on its evidence)"
    # a single learner judged on every epoch: its own evidence, as before
    assert line(evidence={OWN_EVIDENCE: _evidence(0.9, 0.9, 1.0, 0.5, within=(0.9, 0.9))}) == \
        prefix + "it did worse than the rule on its evidence)"
