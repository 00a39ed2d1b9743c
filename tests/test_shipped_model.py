"""The cross-project model shipped with the package: a sealed bundle without pickle, refused
when altered, and what `select` uses on a store that has no model of its own (saying so)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from perf_selector.models.bundle import MANIFEST, BundleError, load_bundle, seal_path
from perf_selector.models.decision import policy_summary, steps_aside
from perf_selector.selector.selection.shipped_model import SHIPPED_BUNDLE, shipped_bundle_path
from tests.helpers import selector_command


def test_the_package_ships_a_sealed_cross_project_bundle():
    assert shipped_bundle_path() == SHIPPED_BUNDLE, "the package must carry selector/data/cross-project"
    bundle = load_bundle(SHIPPED_BUNDLE)  # skops with the tool's own types only: no pickle is run
    assert len(bundle.entries) == 1 and bundle.entries[0].benchmark is None
    entry = bundle.entries[0]
    assert entry.scope == "cross-project" and entry.portable_file, "select scores it from ONNX"
    assert not any(column.startswith("benchmark=") for column in entry.columns), "benchmark identity is not an input"
    assert len(bundle.trained_on["projects"]) >= 2 and entry.training_positives > 0
    assert not any(path.suffix in (".pkl", ".pickle", ".joblib") for path in SHIPPED_BUNDLE.iterdir())


def test_the_shipped_bundle_records_its_policy_with_its_evidence_and_doctor_says_it(tmp_path):
    """The bundle carries the policy its evidence earned (conformal risk control over the
    projects held out in turn), and where that is the rule, `doctor` says so with the reason."""

    from perf_selector.selector.onboarding.doctor import _model

    bundle = load_bundle(SHIPPED_BUNDLE, load_models=False)
    control = bundle.settings["risk_control"]
    # the units are the training projects with a labelled change (a project with none has no miss rate)
    assert 0 < control["projects"] <= len(bundle.trained_on["projects"])
    assert control["least_certifiable"] == pytest.approx(1 / (control["projects"] + 1))
    assert set(control["realized"]) <= set(bundle.trained_on["projects"])
    if not control["controlled"]:
        assert steps_aside(bundle), bundle.settings["policy_reason"]  # no certified threshold: the rule decides
    elif not steps_aside(bundle):  # it prunes: at the threshold the bound certified, the one its evidence was judged at
        assert [entry.threshold for entry in bundle.entries] == [control["threshold"]]
        evidence, policy = bundle.settings["evidence"], bundle.settings["policy"]
        for project, realized in control["realized"].items():  # each project's hit rate is 1 - its realized miss rate
            assert evidence[project][policy]["hit_rate"] == pytest.approx(1 - realized), project
    found = _model(None).found
    assert ("steps aside for the executed-changed rule: " + bundle.settings["policy_reason"] in found) == steps_aside(bundle)
    assert policy_summary(bundle, shipped=True) in found  # which model decides, in one line


def test_the_shipped_bundle_applies_to_this_catalogue():
    """Features added since it was trained leave it current (it reads its own columns by name);
    one it was trained on that this catalogue lost would not."""
    from perf_selector.features.catalogue import FEATURE_NAMES

    bundle = load_bundle(SHIPPED_BUNDLE, load_models=False)
    assert bundle.missing_features(FEATURE_NAMES) == []
    assert bundle.stale_reason("any benchmark", "any harness", FEATURE_NAMES) is None


def test_an_altered_shipped_bundle_is_refused(tmp_path):
    copy = tmp_path / "cross-project"
    shutil.copytree(SHIPPED_BUNDLE, copy)
    shutil.copyfile(seal_path(SHIPPED_BUNDLE), seal_path(copy))
    assert load_bundle(copy, portable=True).entries
    entry = json.loads((copy / MANIFEST).read_text())["entries"][0]
    onnx = copy / entry["portable_file"]
    data = bytearray(onnx.read_bytes())
    data[len(data) // 2] ^= 0xFF
    onnx.write_bytes(bytes(data))
    with pytest.raises(BundleError, match="SHA-256"):
        load_bundle(copy, portable=True)


@pytest.mark.slow
def test_select_on_a_store_without_a_model_uses_the_shipped_one_and_says_so(collected_sample, tmp_path):
    source, commits, _, _ = collected_sample
    root = tmp_path / "project"
    shutil.copytree(source, root, symlinks=True)
    shutil.rmtree(root / ".selector" / "models", ignore_errors=True)
    by_kind = {commit.step.kind: commit.sha for commit in commits}

    def select(sha: str, *extra: str) -> subprocess.CompletedProcess:
        return subprocess.run(selector_command("select", sha, "--repo", str(root), *extra), capture_output=True, text=True)

    result = select(by_kind["hot"], "--format", "json")  # the commit that changes checksum's hot function
    assert result.returncode in (0, 1), result.stderr
    document = json.loads(result.stdout)
    assert document["model"]["shipped"] is True
    assert any("shipped cross-project model" in note for note in document["notes"])
    decisions = {b["name"]: b for b in document["benchmarks"]}
    shipped = load_bundle(SHIPPED_BUNDLE, load_models=False)
    if steps_aside(shipped):  # the rule decides every benchmark, and no model's score is shown
        assert all(b["probability"] is None for b in decisions.values()), decisions
        assert any(note.startswith("the executed-changed rule decides: the shipped") for note in document["notes"])
    else:
        assert all(b["probability"] is not None for b in decisions.values()), "the shipped model decided every benchmark"
    assert decisions["checksum"]["decision"] == "run"
    neutral = json.loads(select(by_kind["neutral"], "--format", "json").stdout)  # a comment-only commit
    assert neutral["run"] == [], neutral["benchmarks"]
    text = select(by_kind["hot"])
    assert "shipped cross-project model" in text.stdout + text.stderr


def test_the_shipped_operating_point_adapts_to_the_projects_own_changes(collected_sample, tmp_path):
    """A project whose own model learnt from too few changes: `train` records the shipped model's
    threshold lowered to keep the project's labelled changes, and `select` applies it."""
    from perf_selector.features.catalogue import FEATURE_NAMES
    from perf_selector.models.bundle import load_bundle
    from perf_selector.selector.config import load_config
    from perf_selector.models.decision import executed_rule_scores, steps_aside, within_rule
    from perf_selector.selector.selection.shipped_model import shipped_bundle_path
    from perf_selector.selector.evaluation.store_backtest import labelled_feature_table
    from perf_selector.features.tuples import closest_tuples
    from perf_selector.selector.evaluation.feature_table import benchmarks_of
    from perf_selector.storage.history import load_history
    from perf_selector.storage.store import Store

    source, commits, _, _ = collected_sample
    root = tmp_path / "project"
    shutil.copytree(source, root, symlinks=True)
    trained = subprocess.run(selector_command("train", "--repo", str(root), "--model", "perphecy", "--format", "json"),
                             capture_output=True, text=True)
    assert trained.returncode == 0, trained.stderr
    settings = json.loads(trained.stdout)["settings"]
    shipped = load_bundle(shipped_bundle_path(), portable=True)
    adapted = settings["shipped_threshold"]
    entry = shipped.entry_for("")
    if steps_aside(shipped):  # the shipped policy is the rule: it has no threshold to adapt
        assert adapted is None
        return
    assert adapted is not None and adapted <= entry.threshold
    # every labelled change the shipped policy can run scores at least the adapted threshold
    store = Store(root / ".selector", create=False)
    history = load_history(store)
    table = labelled_feature_table(store, load_config(root / "selector.toml"), history,
                                   closest_tuples(history, benchmarks_of(history)))
    table = table[table["label"] == True]  # noqa: E712
    features = table[FEATURE_NAMES].to_numpy(float)
    if within_rule(shipped):
        features = features[executed_rule_scores(features) > 0]
    scores = shipped.score_rows(entry, features, ["b"] * len(features), list(FEATURE_NAMES))
    assert len(scores) and (scores >= adapted).all()
    by_kind = {commit.step.kind: commit.sha for commit in commits}
    selected = subprocess.run(selector_command("select", by_kind["hot"], "--repo", str(root), "--format", "json"),
                              capture_output=True, text=True)
    document = json.loads(selected.stdout)
    assert any("adapted to this project's labelled changes" in note for note in document["notes"]), document["notes"]
    thin = [note for note in document["notes"] if "the project's own model learnt from" in note]
    assert len(thin) == 1 and all(b["name"] in thin[0] for b in document["benchmarks"][:5]), document["notes"]
    told = subprocess.run(selector_command("train", "--repo", str(root), "--model", "perphecy", "--no-tracking"),
                          capture_output=True, text=True)
    assert "note: select keeps using the shipped cross-project model for (all, pooled)" in told.stderr, told.stderr


def test_a_cross_project_bundle_trained_on_one_project_lets_the_rule_decide(tmp_path):
    """No project to hold out judges a bundle trained on one: nothing certifies its pruning, so
    the executed-changed rule decides and the bundle says why (before, its model decided alone)."""
    from perf_selector.selector.evaluation.project_evaluation import load_projects, train_cross_project_bundle

    pack = Path(__file__).resolve().parent.parent / "corpus" / "lz4" / "pack"
    (lz4,) = load_projects([(pack, None)], {"k": 5, "first": None, "epoch_days": None})
    train_cross_project_bundle([lz4], tmp_path / "bundle", model="logistic")
    bundle = load_bundle(tmp_path / "bundle", portable=True, load_models=False)
    assert steps_aside(bundle) and bundle.settings["model"] == "logistic"
    assert bundle.settings["policy_reason"] == ("trained on one project: no project held out to judge it, so no miss "
                                                "rate is certified and the rule decides")
    assert policy_summary(bundle, shipped=True) == ("the executed-changed rule decides: the shipped logistic steps aside "
                                                    "(no backtest judged it, so no miss rate is certified)")
