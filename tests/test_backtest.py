"""Backtesting, training and bundles end to end on the collected demo history (real gcc,
git, valgrind; real scikit-learn, XGBoost, MLflow), through the real CLI."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pytest
import skops.io as sio

from perf_selector.features.builder import build_feature_table
from perf_selector.features.catalogue import FEATURE_NAMES
from perf_selector.storage.history import History
from perf_selector.models.bundle import MANIFEST, BundleError, load_bundle, seal_path
from perf_selector.models.perphecy import PerphecyPredictor
from perf_selector.selector.config import label_rules, load_config
from perf_selector.selector.evaluation.store_backtest import evaluation_data
from perf_selector.storage.store import Store
from tests.helpers import selector_command

pytestmark = pytest.mark.slow


def cli(*arguments: str, check: bool = True) -> subprocess.CompletedProcess:
    result = subprocess.run(selector_command(*arguments), capture_output=True, text=True)
    if check:
        assert result.returncode == 0, result.stderr
    return result


@pytest.fixture(scope="module")
def backtest_run(evolved_sample, tmp_path_factory):
    root, _ = evolved_sample
    out = tmp_path_factory.mktemp("backtest")
    result = cli("backtest", "--repo", str(root), "--models", "random-forest,xgboost,perphecy,reached-changed,executed-changed,always-run",
                 "--out", str(out), "--format", "json")
    return root, out, json.loads(result.stdout)


def _overall(document: dict, model: str, scope: str) -> dict:
    return next(r for r in document["results"] if r["model"] == model and r["scope"] == scope and r["benchmark"] == "(all)")


def test_classifiers_separate_the_planted_changes(backtest_run):
    _, _, document = backtest_run
    assert document["protocol"]["method"] == "method4" and not document["protocol"]["leaks_future"]
    assert document["tuples"]["positive"] >= 15
    for model in ("random-forest", "xgboost"):
        assert _overall(document, model, "pooled")["auroc"] > 0.75, model
    always = _overall(document, "always-run", "per-benchmark")
    assert always["auroc"] == 0.5 and always["hit_rate"] == 1.0 and always["dismiss_rate"] == 0.0
    # the learned models skip work the safe rule cannot: main's argument clamp is reached but costs nothing
    best = max(_overall(document, m, "pooled")["dismiss_rate"] for m in ("random-forest", "xgboost"))
    assert best > _overall(document, "reached-changed", "pooled")["dismiss_rate"] - 0.1


def test_results_report_and_mlflow_run(backtest_run):
    root, out, document = backtest_run
    predictions = pd.read_parquet(out / "predictions.parquet")
    assert set(predictions["model"]) == {"random-forest", "xgboost", "perphecy", "reached-changed", "executed-changed",
                                         "always-run"}
    assert predictions["epoch"].nunique() == document["protocol"]["splits"] >= 5
    report = (out / "report.html").read_text()
    assert report.count("<img") >= 4 and "AUROC" in report and "Feature importances" in report
    import mlflow

    mlflow.set_tracking_uri(f"sqlite:///{root / '.selector' / 'mlflow' / 'mlflow.db'}")
    run = mlflow.get_run(document["mlflow_run"])
    assert run.data.params["protocol.method"] == "method4"
    assert run.data.metrics["auroc/pooled/xgboost/all"] == pytest.approx(_overall(document, "xgboost", "pooled")["auroc"])
    artifacts = {item.path for item in mlflow.MlflowClient().list_artifacts(run.info.run_id)}
    assert {"results.json", "report.html", "predictions.parquet"} <= artifacts


def test_report_command_rewrites_the_report(backtest_run, tmp_path):
    _, out, _ = backtest_run
    cli("report", str(out), "--output", str(tmp_path / "again.html"))
    assert "<img" in (tmp_path / "again.html").read_text()


RENDER_CHECK = """<script>
window.addEventListener("load", () => {
  const images = [...document.images];
  const shown = images.filter(i => i.complete && i.naturalWidth > 0 && i.getBoundingClientRect().height > 0);
  const tables = [...document.querySelectorAll("table")];
  const check = document.createElement("pre");
  check.id = "render-check";
  check.textContent = JSON.stringify({images: images.length, shown: shown.length,
    widths: images.map(i => i.naturalWidth), shownAlts: shown.map(i => i.alt), tables: tables.length, rows: tables.map(t => t.rows.length - 1),
    firstScreen: [...document.querySelectorAll("h2, p, table")].filter(e => e.getBoundingClientRect().top < 700)
      .map(e => e.innerText).join(" | ")});
  document.body.appendChild(check);
});
</script>"""


def test_the_report_renders_in_a_browser(backtest_run, tmp_path):
    """Headless Chromium opens the report: every figure is drawn, every table has rows,
    and no figure is wider than a screen can show readably."""
    import os
    import re
    import shutil

    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser is None:
        if os.environ.get("SELECTOR_REQUIRE_CHROMIUM"):
            pytest.fail("headless Chromium is required here (SELECTOR_REQUIRE_CHROMIUM) but not on PATH")
        pytest.skip("headless Chromium is not installed")
    _, out, _ = backtest_run
    page = tmp_path / "report.html"
    page.write_text((out / "report.html").read_text().replace("</body>", RENDER_CHECK + "</body>"))
    dom = subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                          f"--user-data-dir={tmp_path / 'profile'}", "--virtual-time-budget=10000", "--dump-dom", page.as_uri()],
                         capture_output=True, text=True, timeout=180)
    found = re.search(r'<pre id="render-check">(.*?)</pre>', dom.stdout, re.S)
    assert found, dom.stderr[-2000:]
    check = json.loads(found.group(1).replace("&quot;", '"'))
    assert check["images"] >= 4 and check["shown"] == check["images"], check
    assert check["tables"] >= 3 and all(rows > 0 for rows in check["rows"]), check
    assert max(check["widths"]) <= 1600, check  # the importance panels were one 2435-pixel strip
    # the first screen says what the deciding policies save and miss, the rule among them
    first = check["firstScreen"]
    assert "What it would have saved" in first and "of benchmark time saved" in first and "changes missed" in first, first
    assert "executed-changed rule" in first, first
    # the replay's timeline is drawn, the deciding policy's
    decides = json.loads((out / "replay.json").read_text())["decides"]
    assert f"Replay timeline: {decides}" in check["shownAlts"], check


def test_every_roc_panel_has_a_legend_and_the_deciding_policies_stand_out(backtest_run):
    from perf_selector.models.evaluation import results_table
    from perf_selector.selector.evaluation.report import _deciding, _policy_summary, _roc_figure

    _, out, _ = backtest_run
    predictions = pd.read_parquet(out / "predictions.parquet")
    deciding = _deciding(_policy_summary(results_table(predictions)))
    assert deciding[0][0] == "executed-changed" and len(deciding) == 2
    figure = _roc_figure(predictions, set(deciding))
    panels = [axis for axis in figure.axes if axis.get_visible() and axis.axison]
    assert len(panels) == predictions["benchmark"].nunique() + 1
    for axis in panels:
        labels = [text.get_text() for text in axis.get_legend().get_texts()]
        assert {f"{model} ({scope})" for model, scope in deciding} <= set(labels), labels
        assert len(labels) <= len(deciding) + 1  # the other models under one faint entry


def _pruning_bundle(directory: Path, policy: str = "model-within-rule") -> Path:
    """The shipped bundle with `policy` in its settings, sealed as `selector train` seals one."""
    from perf_selector.selector.selection.shipped_model import SHIPPED_BUNDLE

    shutil.copytree(SHIPPED_BUNDLE, directory)
    manifest = json.loads((directory / "manifest.json").read_text())
    manifest["settings"] |= {"policy": policy, "policy_reason": "a test's bundle that prunes"}
    text = json.dumps(manifest, indent=1).encode()
    (directory / "manifest.json").write_bytes(text)
    seal_path(directory).write_text(hashlib.sha256(text).hexdigest() + "\n")
    return directory


def test_the_report_draws_the_replay_timeline_with_a_change_caught_late(backtest_run, tmp_path):
    """`selector backtest` replays the same store (replay.json) and the report draws it: commits by
    benchmark for the policy select applies, the others below; a change skipped at its commit and
    seen at a later run is drawn as late, with how many commits later."""
    from perf_selector.selector.evaluation.replay import AT_COMMIT, LATE, NEVER, OWN, SHIPPED, timeline_document
    from perf_selector.selector.evaluation.report import (CAUGHT_AT_COMMIT, CAUGHT_LATE, NEVER_CAUGHT, RAN, SKIPPED, _replay_policies,
                                 _timeline_figure)

    root, backtested, document = backtest_run
    replay = json.loads((backtested / "replay.json").read_text())
    assert {"always", "executed-changed", SHIPPED} <= {row["policy"] for row in replay["summary"]}
    # The shipped bundle may step aside for the rule, which catches every change here; the
    # timeline is drawn from a replay whose shipped bundle prunes within the rule (the
    # shipped one with that policy, sealed anew), as a bundle with the evidence would.
    out = tmp_path / "backtest"
    shutil.copytree(backtested, out)
    replay = timeline_document(backtested.name, Store(root / ".selector"), load_config(root / "selector.toml"),
                               bundle_path=_pruning_bundle(tmp_path / "pruning"))
    (out / "replay.json").write_text(json.dumps(replay))
    cli("report", str(out), "--output", str(out / "report.html"))
    policies = {row["policy"] for row in replay["summary"]}
    assert {"always", "executed-changed", SHIPPED} <= policies
    assert replay["decides"] == (OWN if OWN in policies else SHIPPED)  # the model select applies
    assert len(replay["commits"]) >= 30 and set(replay["commits"]) >= {s["commit"] for s in replay["steps"]}
    always = next(row for row in replay["summary"] if row["policy"] == "always")
    assert always["changes"] >= 10 and always["at_commit"] == always["changes"]  # running everything catches all
    steps = pd.DataFrame(replay["steps"])
    changes = pd.DataFrame(replay["changes"])
    late = changes[changes["caught"] == LATE]
    assert len(late), changes.groupby(["policy", "caught"]).size()
    order = replay["commits"]
    for change in late.itertuples(index=False):  # skipped at its commit, seen at a later run labelled changed
        mine = steps[(steps["policy"] == change.policy) & (steps["benchmark"] == change.benchmark)].set_index("commit")
        assert not mine.loc[change.commit, "run"] and mine.loc[change.at, "run"] and mine.loc[change.at, "label"] == True  # noqa: E712
        assert change.later == order.index(change.at) - order.index(change.commit) > 0

    report = (out / "report.html").read_text()
    assert report.index("What it would have saved") < report.index("The history replayed") < report.index("<h2>AUROC")
    assert f"alt='Replay timeline: {replay['decides']}'" in report
    shown = _replay_policies(replay)
    assert shown[0] == replay["decides"] and "always" not in shown
    shown_late = late[late["policy"].isin(shown)]
    assert len(shown_late), late
    example = shown_late.iloc[0]
    assert (f"<td class='text'>{example['commit'][:10]}</td><td class='text'>{example['benchmark']}</td>"
            f"<td class='text'>late</td><td class='text'>{example['at'][:10]}</td>") in report

    figure = _timeline_figure(replay, shown)
    panels = [axis for axis in figure.axes if axis.get_visible() and axis.axison]
    assert len(panels) == len(shown)
    for axis, policy in zip(panels, shown):
        title = axis.get_title(loc="left")
        assert title.startswith(f"Replay timeline: {policy}"), title
        assert [t.get_text() for t in axis.get_legend().get_texts()] == [RAN, SKIPPED, CAUGHT_AT_COMMIT, CAUGHT_LATE,
                                                                          NEVER_CAUGHT]
        mine = changes[changes["policy"] == policy]
        counts = {kind: int((mine["caught"] == kind).sum()) for kind in (AT_COMMIT, LATE, NEVER)}
        assert f"{counts[AT_COMMIT]} at their commit, {counts[LATE]} late, {counts[NEVER]} never" in title, title
        # every late change is annotated with how many commits later it was seen
        assert sorted(t.get_text() for t in axis.texts) == sorted(
            f"+{int(n)}" for n in mine.loc[mine["caught"] == LATE, "later"])


def test_training_sees_nothing_newer_than_its_epoch(evolved_sample):
    """Features of an epoch's training tuples are the same when every commit after the
    boundary is removed from the history: no information from the future."""
    root, _ = evolved_sample
    store = Store(root / ".selector")
    data = evaluation_data(store, load_config(root / "selector.toml"), "method4", {"k": 5})
    history = data.history
    time = history.commits.to_pandas().set_index("sha")["author_time"]

    def only(table, column, commits):  # the rows of the known commits
        return table.filter(pc.is_in(table[column], value_set=pa.array(sorted(commits), table[column].type)))

    for split in data.plan.splits[::3]:
        known = set(time[time <= split.boundary_time].index)
        past = History(
            commits=only(history.commits, "sha", known),
            functions=only(history.functions, "commit", known),
            objects=only(history.objects, "commit", known),
            profiles=only(history.profiles, "commit", known),
            measurements=only(history.measurements, "commit", known),
            labels=only(history.labels, "new", known),
            binaries=history.binaries,  # a commit's own binary: nothing of the future
        )
        train = data.plan.tuples.iloc[split.train]
        assert set(train["new"]) | set(train["old"]) <= known
        again = build_feature_table(past, train.reset_index(drop=True))
        pd.testing.assert_frame_equal(again[FEATURE_NAMES], data.table.iloc[split.train][FEATURE_NAMES].reset_index(drop=True))


def test_each_tuple_carries_its_measured_effect_for_the_effect_model(evolved_sample):
    """The effect model learns the measured relative change of each tuple, computed like its label:
    on closest pairs it is the stored label's effect, and it is missing exactly where the label is."""
    root, _ = evolved_sample
    store = Store(root / ".selector")
    table = evaluation_data(store, load_config(root / "selector.toml"), "method4", {"k": 5}).table
    assert (table["effect"].isna() == table["label"].isna()).all()
    stored = store.read("labels").to_pandas().dropna(subset=["label"])[["new", "old", "benchmark", "effect"]]
    merged = table.merge(stored, on=["new", "old", "benchmark"], suffixes=("", "_stored"))
    assert len(merged) > 10 and np.allclose(merged["effect"], merged["effect_stored"])
    assert (merged["label"].astype(bool) == (merged["effect"].abs() >= 0.01)).mean() > 0.9  # the labels follow the effects


def test_the_backtest_judges_effect_rules_at_the_projects_min_effect(evolved_sample, monkeypatch):
    """`backtest` decides the effect model and the predicted-effect rule at the project's
    [labels] min_effect, as `train` does, not at their 1% default."""
    import dataclasses
    import importlib

    from perf_selector.selector.evaluation.store_backtest import run_backtest

    backtest_module = importlib.import_module("perf_selector.models.backtest")  # models.backtest is also the package's function

    root, _ = evolved_sample
    data = evaluation_data(Store(root / ".selector"), load_config(root / "selector.toml"), "method4", {"k": 5})
    assert data.min_effect == load_config(root / "selector.toml").labels.min_effect
    data = dataclasses.replace(data, min_effect=0.037)
    seen = []
    train_one = backtest_module.train_one

    def recording(*arguments, **options):
        fitted = train_one(*arguments, **options)
        seen.append(fitted.estimator.get_params())
        return fitted

    monkeypatch.setattr(backtest_module, "train_one", recording)
    run_backtest(data, ["effect", "predicted-effect"], ["pooled"], 0.95, 0)
    assert seen and all(params.get("min_effect", 0.037) == 0.037 for params in seen)
    assert all(params.get("min_effect_percent", 3.7) == pytest.approx(3.7) for params in seen)


def test_perphecy_hits_every_change_of_its_training_data(evolved_sample):
    root, _ = evolved_sample
    data = evaluation_data(Store(root / ".selector"), load_config(root / "selector.toml"), "method4", {"k": 5})
    last = data.plan.splits[-1]
    train = data.table.iloc[last.train]
    train = train[train["label"].notna()]
    for benchmark, part in train.groupby("benchmark"):
        labels = part["label"].to_numpy(bool)
        model = PerphecyPredictor().fit(part[FEATURE_NAMES], labels)
        assert model.predict(part[FEATURE_NAMES])[labels].all(), benchmark


def test_other_protocols_run_and_say_they_leak(evolved_sample, tmp_path):
    root, _ = evolved_sample
    for method in ("method1", "method3", "kfold", "full"):
        result = cli("backtest", "--repo", str(root), "--method", method, "--models", "logistic,perphecy", "--scope", "pooled",
                     "--no-tracking", "--no-report", "--no-replay", "--out", str(tmp_path / method), "--format", "json")
        document = json.loads(result.stdout)
        assert document["protocol"]["leaks_future"] == (method != "method3")
        assert _overall(document, "logistic", "pooled")["tuples"] > 0


def test_train_writes_a_bundle_that_refuses_tampering(evolved_sample, tmp_path):
    root, _ = evolved_sample
    bundle_dir = tmp_path / "bundle"
    result = cli("train", "--repo", str(root), "--model", "random-forest", "--scope", "per-benchmark",
                 "--bundle", str(bundle_dir), "--format", "json")
    document = json.loads(result.stdout)
    assert {m["benchmark"] for m in document["models"]} == {"checksum", "fib", "sort", "weights"}
    bundle = load_bundle(bundle_dir)
    assert len(bundle.estimators) == 4 and bundle.trained_on["commits"] == 39

    entry = bundle.entries[0]
    model_file = bundle_dir / entry.file
    original = model_file.read_bytes()
    model_file.write_bytes(original[:-10] + bytes(10))
    with pytest.raises(BundleError, match="SHA-256"):
        load_bundle(bundle_dir)

    # a file carrying a callable the tool never writes, with the manifest "fixed" to match: refused
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import FunctionTransformer
    import hashlib
    import os

    sio.dump(Pipeline([("evil", FunctionTransformer(os.system))]), model_file)
    pristine = json.loads((bundle_dir / MANIFEST).read_text())
    manifest = json.loads(json.dumps(pristine))
    manifest["entries"][0]["sha256"] = hashlib.sha256(model_file.read_bytes()).hexdigest()
    (bundle_dir / MANIFEST).write_text(json.dumps(manifest))
    with pytest.raises(BundleError, match="does not match its seal"):
        load_bundle(bundle_dir)  # the manifest itself is sealed
    reseal(bundle_dir)
    with pytest.raises(BundleError, match="never writes"):
        load_bundle(bundle_dir)  # and a resealed one still holds no foreign objects

    model_file.write_bytes(original)
    for edit, refusal in (
        (lambda m: m["entries"][0].update(threshold=1.947), "outside \\[0, 1\\]"),
        (lambda m: m["entries"][0].update(threshold=float("nan")), "outside \\[0, 1\\]"),
        (lambda m: m["entries"][0]["columns"].insert(0, m["entries"][0]["columns"].pop(1)), "not the manifest's features"),
        (lambda m: m["entries"][0]["columns"].append("benchmark=fib"), "not the manifest's features"),
    ):
        manifest = json.loads(json.dumps(pristine))
        edit(manifest)
        (bundle_dir / MANIFEST).write_text(json.dumps(manifest))
        with pytest.raises(BundleError, match="does not match its seal"):
            load_bundle(bundle_dir)
        reseal(bundle_dir)
        with pytest.raises(BundleError, match=refusal):
            load_bundle(bundle_dir)
    (bundle_dir / MANIFEST).write_text(json.dumps(pristine))
    reseal(bundle_dir)
    assert len(load_bundle(bundle_dir).estimators) == 4
    seal_path(bundle_dir).unlink()
    with pytest.raises(BundleError, match="seal is missing"):
        load_bundle(bundle_dir)


def reseal(bundle_dir: Path) -> None:
    """What someone who edits a manifest would also have to do."""
    import hashlib

    seal_path(bundle_dir).write_text(hashlib.sha256((bundle_dir / MANIFEST).read_bytes()).hexdigest())


def test_bad_backtest_settings_give_one_line_errors(evolved_sample):
    root, _ = evolved_sample
    result = cli("backtest", "--repo", str(root), "--first", "500", "--no-tracking", check=False)
    assert result.returncode == 2 and "too short" in result.stderr and "Traceback" not in result.stderr
    result = cli("backtest", "--repo", str(root), "--models", "random-forest,gpt", check=False)
    assert result.returncode == 2 and "unknown: gpt" in result.stderr
    result = cli("backtest", "--repo", str(root), "--benchmarks", "nosuch", "--no-tracking", check=False)
    assert result.returncode == 2 and "nosuch" in result.stderr and "Traceback" not in result.stderr


def test_trained_models_score_the_same_from_their_onnx_form(evolved_sample, tmp_path):
    """`select` scores with the ONNX files (no scikit-learn, XGBoost or skops import): same
    probabilities as the skops models to float32 rounding, decisions exactly theirs."""
    from perf_selector.models.portable import BORDERLINE, PortableModel
    from perf_selector.selector.evaluation.store_backtest import labelled_feature_table
    from perf_selector.storage.history import load_history
    from perf_selector.features.tuples import closest_tuples
    from perf_selector.features.catalogue import FEATURE_NAMES
    from perf_selector.models.design import design_matrix

    root, _ = evolved_sample
    store, config = Store(root / ".selector"), load_config(root / "selector.toml")
    history = load_history(store)
    benchmarks = ["checksum", "fib", "sort", "weights"]
    table = labelled_feature_table(store, config, history, closest_tuples(history, benchmarks))
    for model, scope in (("xgboost", "pooled"), ("random-forest", "per-benchmark"), ("svm", "pooled"),
                         ("perphecy", "per-benchmark")):
        bundle_dir = tmp_path / f"{model}-{scope}"
        cli("train", "--repo", str(root), "--model", model, "--scope", scope, "--bundle", str(bundle_dir), "--format", "json")
        exact, portable = load_bundle(bundle_dir), load_bundle(bundle_dir, portable=True)
        if model == "svm":  # no converter for the Platt-scaled SVM: skops serves both
            assert all(e.portable_file is None for e in exact.entries)
            assert not any(isinstance(m, PortableModel) for m in portable.estimators.values())
            continue
        assert all(isinstance(portable.estimators[e.file], PortableModel) for e in portable.entries)
        if model == "random-forest":
            forest = (exact, portable, bundle_dir)
        for entry in exact.entries:
            rows = table if entry.benchmark is None else table[table["benchmark"] == entry.benchmark]
            X = design_matrix(rows, FEATURE_NAMES, entry.scope, benchmarks).reindex(columns=entry.columns, fill_value=0.0)
            ours, theirs = portable.positive_scores(entry, X), exact.positive_scores(entry, X)
            assert np.abs(ours - theirs).max() < 1e-5, (model, entry.benchmark)
            assert ((ours >= entry.threshold) == (theirs >= entry.threshold)).all()

    # a probability at the operating point is scored again by the skops model
    exact, portable, bundle_dir = forest
    entry = portable.entries[0]
    rows = table[table["benchmark"] == entry.benchmark]
    X = design_matrix(rows, FEATURE_NAMES, entry.scope, benchmarks).reindex(columns=entry.columns, fill_value=0.0)
    entry.threshold = float(portable.positive_scores(entry, X)[0]) + BORDERLINE / 2
    scores = portable.positive_scores(entry, X)
    assert not isinstance(portable.estimators[entry.file], PortableModel)
    assert np.array_equal(scores, exact.positive_scores(entry, X))

    # a modified ONNX file is refused like a modified skops file
    onnx_file = bundle_dir / exact.entries[0].portable_file
    assert onnx_file.exists()
    onnx_file.write_bytes(onnx_file.read_bytes()[:-4] + bytes(4))
    with pytest.raises(BundleError, match="SHA-256"):
        load_bundle(onnx_file.parent, portable=True)


def test_a_copied_store_trains_and_backtests_without_touching_the_original(evolved_sample, tmp_path):
    import shutil

    source, _ = evolved_sample
    original, copy = tmp_path / "original", tmp_path / "copy"
    shutil.copytree(source, original, symlinks=True)
    assert cli("train", "--repo", str(original), "--model", "logistic").returncode == 0  # MLflow runs in the original
    shutil.copytree(original, copy, symlinks=True)
    before = {path: (path.stat().st_size, path.stat().st_mtime_ns) for path in original.rglob("*") if path.is_file()}
    for arguments in (["train", "--model", "logistic"], ["backtest", "--models", "perphecy", "--scope", "pooled"]):
        result = cli(*arguments, "--repo", str(copy))
        assert result.returncode == 0, result.stderr
    after = {path: (path.stat().st_size, path.stat().st_mtime_ns) for path in original.rglob("*") if path.is_file()}
    assert after == before
    artifacts = list((copy / ".selector" / "mlflow" / "artifacts").rglob("*"))
    assert len(artifacts) > len(list((original / ".selector" / "mlflow" / "artifacts").rglob("*")))


def test_labels_are_a_function_of_the_history_tables(evolved_sample):
    """history_labels, given the store's tables (and no store), gives exactly the labels the
    collection stored, commit by commit."""
    from perf_selector.storage.labels import history_labels

    root, _ = evolved_sample
    store, config = Store(root / ".selector"), load_config(root / "selector.toml")
    by_commit = history_labels(store.read("commits"), store.read("measurements"), store.read("profiles"),
                               store.read("calibration"), label_rules(config), store.read("confirmations"),
                               store.read("perturbed"))
    assert sorted(by_commit) == sorted(store.keys("labels")) and len(by_commit) > 30
    for sha, table in by_commit.items():
        stored = store.read_one("labels", sha).to_pandas()
        pd.testing.assert_frame_equal(table.to_pandas(), stored, check_dtype=False)
