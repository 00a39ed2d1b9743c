"""The estimators, the operating point and the sampling protocols, on small known inputs."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from sklearn.base import clone

from perf_selector.features.catalogue import FEATURE_NAMES
from perf_selector.storage.history import History
from perf_selector.models.baselines import AlwaysRun, HistoryOnly, PredictedEffect, ReachedChanged
from perf_selector.models.effect import EffectBound
from perf_selector.models.evaluation import RUN_EVERYTHING, operating_threshold, score_predictions
from perf_selector.models.perphecy import PerphecyPredictor, greedy_thresholds
from perf_selector.models.registry import MODELS, fit_model, positive_scores
from perf_selector.models.sampling import full, kfold, method1, method2, method3, method4


def _features(rows: list[dict]) -> pd.DataFrame:
    frame = pd.DataFrame(0.0, index=range(len(rows)), columns=FEATURE_NAMES)
    for index, row in enumerate(rows):
        for name, value in row.items():
            frame.loc[index, name] = value
    return frame


# ------------------------------------------------------------------ Perphecy
def test_greedy_thresholds_follow_algorithm_1():
    # two indicators; hits 0 and 1 are cheapest on indicator 0, hit 2 only on indicator 1
    hits = np.array([[90.0, 0.0], [80.0, 5.0], [0.0, 50.0]])
    negatives = np.array([[85.0, 0.0], [10.0, 0.0], [0.0, 10.0], [70.0, 1.0]])
    chosen = greedy_thresholds(hits, negatives)
    # prices: hit0 s0 -> negatives >= 90: 0; hit1 s0 -> >= 80: 1 (85), s1 -> >= 5: 1 (10) -> first (s0);
    # hit2 s1 -> >= 50: 0.  The highest-priced hit (hit1, 1 FP) goes first: s0 >= 80 covers hits 0 and 1.
    assert chosen[0] == (0, 80.0)
    assert chosen[1] == (1, 50.0)
    assert len(chosen) == 2


def test_zero_price_hits_are_covered_and_the_loop_ends():
    hits = np.array([[5.0], [7.0]])
    negatives = np.array([[1.0], [2.0]])
    assert greedy_thresholds(hits, negatives) == [(0, 5.0)]


@pytest.mark.parametrize("seed", range(5))
def test_perphecy_hit_rate_is_one_on_its_training_data(seed):
    rng = np.random.default_rng(seed)
    X = pd.DataFrame(rng.integers(0, 100, size=(300, len(FEATURE_NAMES))).astype(float), columns=FEATURE_NAMES)
    y = rng.random(300) < 0.15
    model = PerphecyPredictor().fit(X, y)
    predicted = model.predict(X)
    assert predicted[y].all()  # every training hit is covered
    assert {name for name, _ in model.thresholds_} <= set(model._names())
    proba = model.predict_proba(X)[:, 1]
    assert ((proba >= 0.5) == predicted).all()


def test_perphecy_without_hits_dismisses_everything():
    X = _features([{"top_changed_rank_by_instructions": 100}, {"new_functions": 3}])
    model = PerphecyPredictor().fit(X, np.array([False, False]))
    assert model.thresholds_ == []
    assert not model.predict(X).any()


def test_perphecy_uses_only_its_indicators():
    X = _features([{"changed_data_reached": 1}, {}, {"top_changed_rank_by_calls": 40}, {}])
    y = np.array([True, False, True, False])
    model = PerphecyPredictor().fit(X, y)
    # the data-only hit has every Perphecy indicator at 0: covering it needs a threshold of 0 (always true)
    assert model.predict(X).all()
    assert any(threshold == 0 for _, threshold in model.thresholds_)


# ----------------------------------------------------------------- baselines
def test_baselines():
    X = _features([{"top_changed_rank_by_instructions": 50}, {"changed_data_reached": 1}, {"new_functions": 4},
                   {"build_config_changed": 1}])
    y = np.array([True, True, False, True])
    assert (AlwaysRun().fit(X, y).predict_proba(X)[:, 1] == 1).all()
    assert ReachedChanged().fit(X, y).predict(X).tolist() == [True, True, False, True]
    history = HistoryOnly().fit(X, np.array([False, False, False, False]))  # one class: its prior
    assert (positive_scores(history, X) == 0).all()


@pytest.mark.parametrize("name", list(MODELS))
def test_every_model_fits_scores_and_clones(name):
    rng = np.random.default_rng(1)
    X = pd.DataFrame(rng.random((120, len(FEATURE_NAMES))) * 100, columns=FEATURE_NAMES)
    y = (X["top_changed_rank_by_instructions"] > 75).to_numpy()
    spec = MODELS[name]
    effect = np.where(y, 0.03, 0.001) * rng.choice([-1, 1], len(y))  # the measured changes behind the labels
    model = fit_model(clone(spec.build(0)), X, y, np.ones(len(y)) if spec.weighted else None, effect)
    scores = positive_scores(model, X)
    assert scores.shape == (len(X),) and ((scores >= 0) & (scores <= 1)).all()
    if spec.kind in ("ml", "effect"):
        assert scores[y].mean() > scores[~y].mean()  # learned the planted rule


def test_the_monotone_model_never_scores_more_executed_change_lower():
    """Planted: changes where the executed changed share lies between 50 and 80 only (a
    project's accident above 80).  The free XGBoost learns the dip; the monotone one cannot,
    and still separates; a constrained feature's score never falls as it rises."""
    from perf_selector.models.registry import INCREASING_FEATURES

    rng = np.random.default_rng(3)
    X = pd.DataFrame(rng.random((400, len(FEATURE_NAMES))) * 100, columns=FEATURE_NAMES)
    share = X["executed_changed_share"]
    y = ((share > 50) & (share < 80)).to_numpy()
    sweep = X.iloc[[0] * 21].copy()
    sweep["executed_changed_share"] = np.linspace(0, 100, 21)
    monotone = fit_model(clone(MODELS["xgboost-monotone"].build(0)), X, y, np.ones(len(y)))
    free = fit_model(clone(MODELS["xgboost"].build(0)), X, y, np.ones(len(y)))
    assert (np.diff(positive_scores(monotone, sweep)) >= 0).all()
    assert (np.diff(positive_scores(free, sweep)) < -0.1).any()  # the dip above 80
    scores = positive_scores(monotone, X)
    assert scores[y].mean() > scores[~y & (share < 50)].mean() + 0.5
    constraints = monotone.steps[-1][1].get_params()["monotone_constraints"]
    assert [name for name, c in zip(X.columns, constraints) if c] == [n for n in FEATURE_NAMES if n in INCREASING_FEATURES]
    assert monotone.steps[-1][1].constrained_ == [n for n in FEATURE_NAMES if n in INCREASING_FEATURES]
    with pytest.warns(UserWarning, match="no feature is held monotone"):  # an array has no names to constrain
        assert MODELS["xgboost-monotone"].build(0).steps[-1][1].fit(X.to_numpy(), y).constrained_ == []


def test_effect_bound_decides_at_min_effect_and_follows_a_new_min_effect_without_refitting():
    rng = np.random.default_rng(4)
    X = pd.DataFrame(0.0, index=range(400), columns=FEATURE_NAMES)
    X["executed_changed_share"] = rng.random(400)
    effect = 0.04 * X["executed_changed_share"].to_numpy() * rng.choice([-1, 1], 400)  # up to 4% where much changed
    model = EffectBound(random_state=0).fit(X, np.abs(effect) >= 0.01, effect=effect)
    bound = model.bound(X)
    assert np.corrcoef(bound, np.abs(effect))[0, 1] > 0.9
    assert np.mean(bound >= np.abs(effect) - 1e-3) > 0.9  # an upper bound, mostly
    runs = model.predict(X)
    assert (runs == (bound >= 0.01)).all()  # p >= 0.5 exactly where the bound reaches min_effect
    model.set_params(min_effect=0.03)  # a team that raises its minimum effect: no refit
    assert (model.predict(X) == (bound >= 0.03)).all() and model.predict(X).sum() < runs.sum()
    with pytest.raises(ValueError, match="effect"):
        EffectBound().fit(X, runs)

    # its ONNX form (what select scores on the core install) gives the same probabilities, NaN included
    from perf_selector.models.portable import PortableModel, export_onnx

    model.set_params(min_effect=0.01)
    portable = PortableModel(export_onnx(model, X))
    rows = X.to_numpy(copy=True)
    rows[:5, FEATURE_NAMES.index("executed_changed_share")] = np.nan
    expected = model.predict_proba(pd.DataFrame(rows, columns=FEATURE_NAMES))[:, 1]
    assert np.abs(portable.positive_scores(rows) - expected).max() < 1e-6


def test_block_level_baselines():
    X = _features([{"executed_changed_share": 0.2, "executed_steering_share": 0.1, "top_changed_rank_by_instructions": 90},
                   {"top_changed_rank_by_instructions": 90},  # a hot function changed, no changed block ran
                   {"predicted_effect_size": 1.5, "predicted_effect": 1.5, "executed_changed_share": 0.5,
                    "executed_steering_share": 0.0},  # straight-line work, but priced above min_effect
                   {"changed_data_reached": 1},
                   # straight-line work priced far below min_effect: the rule skips it
                   {"executed_changed_share": 0.2, "executed_steering_share": 0.0, "predicted_effect": 0.01,
                    "top_changed_rank_by_instructions": 90}])
    y = np.array([True, False, True, True, False])
    assert MODELS["executed-changed"].build(0).fit(X, y).predict(X).tolist() == [True, False, True, True, False]
    assert ReachedChanged().fit(X, y).predict(X).tolist() == [True, True, False, True, True]
    predicted = PredictedEffect().fit(X, y)
    assert predicted.predict(X).tolist() == [False, False, True, False, False]
    assert predicted.predict_proba(_features([{"predicted_effect_size": 1.0}]))[0, 1] == pytest.approx(0.5)


# ------------------------------------------------------------ operating point
@pytest.mark.parametrize("training_positives", [19, 20, 40, 99])
def test_the_conformal_operating_point_keeps_its_miss_rate_on_a_stream_of_new_changes(training_positives):
    """A stream of epochs: each places its threshold on the scores of the changes seen so far
    (here: n exchangeable ones) and is judged on the next changes.  The conformal point's
    realized miss rate stays within 1 - target; the quantile point's does not for small n."""
    rng = np.random.default_rng(7)
    target, epochs, future = 0.95, 4000, 25
    missed = {"conformal": 0, "quantile": 0}
    for _ in range(epochs):
        seen = rng.beta(5, 2, training_positives)  # scores of the changes training saw
        upcoming = rng.beta(5, 2, future)  # the next changes, from the same stream
        for method in missed:
            threshold = operating_threshold(seen, np.ones(training_positives, bool), target, method)
            missed[method] += int((upcoming < threshold).sum())
    realized = {method: count / (epochs * future) for method, count in missed.items()}
    bound = 1 - target
    allowed = np.floor(bound * (training_positives + 1)) / (training_positives + 1)  # its exact expected miss rate
    assert realized["conformal"] == pytest.approx(allowed, abs=0.006) and realized["conformal"] <= bound + 0.004
    if training_positives in (20, 40):  # where the quantile rule keeps one change fewer than the bound needs
        assert realized["quantile"] > bound + 0.01


def test_the_conformal_operating_point_runs_everything_on_too_few_changes():
    scores = np.linspace(0.1, 0.9, 18)
    assert operating_threshold(scores, np.ones(18, bool), 0.95, "conformal") == RUN_EVERYTHING
    assert operating_threshold(np.linspace(0.1, 0.9, 19), np.ones(19, bool), 0.95, "conformal") == pytest.approx(0.1)
    with pytest.raises(ValueError, match="operating point"):
        operating_threshold(scores, np.ones(18, bool), 0.95, "median")


def test_perphecy_scores_the_same_from_its_onnx_form():
    """The ONNX graph of Perphecy's predictor (so `select` on the core install can use it):
    the same probabilities, NaN read as 0, a threshold of 0 (a hit whose indicator is 0)
    infinite where reached, and the empty predictor of a history without changes."""
    from perf_selector.models.portable import PortableModel, export_onnx

    rng = np.random.default_rng(3)
    X = pd.DataFrame(rng.exponential(1.0, (300, len(FEATURE_NAMES))), columns=FEATURE_NAMES)
    X.iloc[::7, 0] = np.nan
    X.iloc[::5, 1] = 0.0
    positives = (X["changed_in_top_instructions"] > 2.5).to_numpy().copy()
    zero_hit = np.flatnonzero(~positives)[0]
    X.loc[zero_hit, list(PerphecyPredictor().fit(X, positives)._names())] = 0.0  # a hit no indicator shows
    positives[zero_hit] = True
    for labels in (positives, np.arange(300) == 4):
        predictor = PerphecyPredictor().fit(X, labels)
        portable = PortableModel(export_onnx(predictor, X))
        ours, theirs = portable.positive_scores(X.to_numpy()), predictor.predict_proba(X)[:, 1]
        assert np.abs(ours - theirs).max() < 1e-6
        assert np.array_equal(ours >= 0.5, theirs >= 0.5)
    assert any(threshold <= 0 for _, threshold in PerphecyPredictor().fit(X, positives).thresholds_)


def test_operating_threshold_keeps_the_target_share_of_positives():
    scores = np.array([0.9, 0.8, 0.7, 0.6, 0.2, 0.1])
    labels = np.array([True, True, True, True, False, False])
    assert operating_threshold(scores, labels, 1.0) == 0.6
    assert operating_threshold(scores, labels, 0.75) == 0.7
    assert operating_threshold(scores, labels, 0.95) == 0.6  # ceil(0.95 * 4) = 4 positives kept
    assert operating_threshold(scores, np.zeros(6, dtype=bool)) == RUN_EVERYTHING


def test_scores_weight_time_saved_by_cost():
    frame = pd.DataFrame({"label": [True, False, False], "score": [0.9, 0.1, 0.6], "run": [True, False, True],
                          "cost": [1.0, 3.0, 1.0]})
    scores = score_predictions(frame)
    assert scores.hit_rate == 1.0 and scores.dismiss_rate == 0.5
    assert scores.time_saved == pytest.approx(3.0 / 5.0)
    assert scores.auroc == 1.0


# ------------------------------------------------------------------ sampling
def _graph_history() -> History:
    """c0 - c1 - c2 - c3 - m5 - c6 - ... with a side branch c4 (from c2) merged at m5; c3 failed to build."""
    shas = [f"c{i}" for i in range(12)]
    parents = {"c0": [], "c1": ["c0"], "c2": ["c1"], "c3": ["c2"], "c4": ["c2"], "c5": ["c3", "c4"]}
    for i in range(6, 12):
        parents[f"c{i}"] = [f"c{i - 1}"]
    times = pd.date_range("2024-01-01", periods=12, freq="D", tz="UTC")
    commits = pd.DataFrame({"sha": shas, "parents": [parents[s] for s in shas], "author_time": times,
                            "build_status": ["failed" if s == "c3" else "ok" for s in shas]})
    built = [s for s in shas if s != "c3"]
    functions = pd.DataFrame({"commit": built, "name": "f", "fingerprint": "x", "instructions": 1})
    measurements = pd.DataFrame([{"commit": s, "benchmark": b, "repetition": 0, "status": "ok", "value": 1.0}
                                 for s in built for b in ("b1", "b2")])
    profiles = pd.DataFrame([{"commit": s, "benchmark": b, "function": "f"} for s in built for b in ("b1", "b2")])
    arrow = lambda frame: pa.Table.from_pandas(frame, preserve_index=False)  # noqa: E731
    # the times as Arrow timestamps directly: pyarrow reads a tz-aware pandas column through a deprecated path
    commits = arrow(commits.drop(columns=["author_time"])).append_column(
        "author_time", pa.array(times.to_pydatetime(), pa.timestamp("us", tz="UTC")))
    return History(commits, arrow(functions), profiles=arrow(profiles), measurements=arrow(measurements))


def test_method4_keeps_the_future_out_of_training():
    history = _graph_history()
    time = history.commits.to_pandas().set_index("sha")["author_time"]
    plan = method4(history, ["b1", "b2"], k=2, first=3)
    assert len(plan.splits) >= 3
    for split in plan.splits:
        train, test = plan.tuples.iloc[split.train], plan.tuples.iloc[split.test]
        # nothing authored after the boundary in training, on either side of a tuple
        assert time[train["new"]].max() <= split.boundary_time and time[train["old"]].max() <= split.boundary_time
        assert (time[test["new"]] > split.boundary_time).all()
        assert (time[test["old"]] <= split.boundary_time).all()
    merge_epoch = next(s for s in plan.splits if "c5" in set(plan.tuples.iloc[s.test]["new"]))
    merged = plan.tuples.iloc[merge_epoch.test]
    assert merged[merged["new"] == "c5"]["old"].iloc[0] == merge_epoch.boundary  # closest known ancestor, via the branch


def test_method4_by_date():
    history = _graph_history()
    plan = method4(history, ["b1"], k=1, first=2, epoch_days=3)
    # daily commits (c3 failed to build): the last commit of each 3-day period from c1 on
    assert [s.boundary for s in plan.splits] == ["c1", "c4", "c7", "c10"]
    assert [list(plan.tuples.iloc[s.test]["new"]) for s in plan.splits] == [["c2"], ["c5"], ["c8"], ["c11"]]


def test_methods_1_to_3_and_kfold():
    history = _graph_history()
    one = method1(history, ["b1"], seed=1)
    assert one.leaks_future and len(one.splits[0].train) + len(one.splits[0].test) == len(one.tuples)
    two = method2(history, ["b1"], seed=1)
    train_commits = set(two.tuples.iloc[two.splits[0].train][["new", "old"]].to_numpy().ravel())
    test_commits = set(two.tuples.iloc[two.splits[0].test][["new", "old"]].to_numpy().ravel())
    assert not train_commits & test_commits  # Method 2: no commit on both sides
    three = method3(history, ["b1"])
    assert set(three.tuples.iloc[three.splits[0].test]["old"]) == {three.splits[0].boundary}
    folds = kfold(history, ["b1", "b2"], folds=4)
    tested = np.concatenate([s.test for s in folds.splits])
    assert sorted(tested) == list(range(len(folds.tuples)))  # every tuple tested exactly once
    everything = full(history, ["b1", "b2"])
    assert everything.leaks_future and len(everything.splits) == 1
    assert list(everything.splits[0].train) == list(everything.splits[0].test) == list(range(len(folds.tuples)))
    assert everything.tuples.equals(folds.tuples)  # the same closest-ancestor tuples as the folds


def test_time_ordered_search_picks_from_the_grid():
    from perf_selector.models.backtest import train_one

    rng = np.random.default_rng(3)
    X = pd.DataFrame(rng.random((150, len(FEATURE_NAMES))) * 100, columns=FEATURE_NAMES)
    y = (X["top_changed_rank_by_instructions"] > 70).to_numpy()
    fitted = train_one(MODELS["logistic"], X, y, np.ones(len(y), dtype=int), "pooled", None, 0.95, seed=0, search=True)
    chosen = fitted.estimator.get_params()["classifier__C"]
    assert chosen in MODELS["logistic"].search["classifier__C"]
    assert fitted.training_positives == int(y.sum()) and np.isfinite(fitted.threshold)


def test_rerooting_moves_only_the_locations_under_the_old_store(tmp_path):
    """A store copied from `st_ore` re-roots what lay under it, and nothing that merely
    matches it with `_` read as a wildcard (`stXore`)."""
    import shutil
    import sqlite3

    from perf_selector.models.tracking import default_tracking, log_run

    uri, artifacts = default_tracking(tmp_path / "st_ore")
    log_run("first", uri, {"a": 1}, {"m": 0.5}, artifact_root=artifacts)
    shutil.copytree(tmp_path / "st_ore", tmp_path / "copy")
    database = tmp_path / "copy" / "mlflow" / "mlflow.db"
    elsewhere = (tmp_path / "stXore" / "mlflow" / "artifacts").as_uri() + "/run"
    with sqlite3.connect(database) as connection:
        connection.execute("INSERT INTO experiments (name, artifact_location, lifecycle_stage) VALUES ('other', ?, 'active')",
                           (elsewhere,))
    default_tracking(tmp_path / "copy")
    with sqlite3.connect(database) as connection:
        locations = dict(connection.execute("SELECT name, artifact_location FROM experiments"))
        runs = [uri for (uri,) in connection.execute("SELECT artifact_uri FROM runs")]
    root = (tmp_path / "copy" / "mlflow" / "artifacts").as_uri()
    assert locations["perf-selector"] == root and locations["other"] == elsewhere
    assert runs and all(uri.startswith(root + "/") for uri in runs)


# ------------------------------------------------------------------- bundles
@pytest.mark.parametrize("model", ["random-forest", "perphecy", "xgboost-monotone"])
def test_a_bundle_stays_current_when_the_catalogue_gains_features(tmp_path, model):
    """A bundle trained before features were added (here every 5th feature is "new", and the
    catalogue lists them in another order) scores rows of the new catalogue exactly as rows of
    its own: its model reads its own columns, by name, in its own order; from skops and ONNX
    alike.  A bundle naming a feature the catalogue no longer has is stale."""
    from perf_selector.models.backtest import FittedModel
    from perf_selector.models.bundle import load_bundle, save_bundle
    from perf_selector.models.design import design_matrix

    rng = np.random.default_rng(11)
    added = set(FEATURE_NAMES[::5])
    trained_on = [name for name in FEATURE_NAMES if name not in added]
    catalogue = list(rng.permutation(FEATURE_NAMES))  # the new catalogue: more features, another order
    table = pd.DataFrame(rng.exponential(1.0, (200, len(FEATURE_NAMES))), columns=FEATURE_NAMES)
    table["benchmark"] = np.where(np.arange(200) % 2, "b1", "b2")
    labels = (table["changed_in_top_instructions"] + table[trained_on[0]] > 2.5).to_numpy()
    X = design_matrix(table, trained_on, "pooled", ["b1", "b2"])
    estimator = fit_model(MODELS[model].build(0), X, labels)
    fitted = FittedModel(model, "pooled", None, estimator, 0.5, list(X.columns), len(X), int(labels.sum()), False)
    save_bundle(tmp_path / "bundle", [fitted], trained_on, {}, {}, training_inputs={None: X})
    expected = positive_scores(estimator, X)
    benchmarks = table["benchmark"].tolist()
    for portable in (False, True):
        bundle = load_bundle(tmp_path / "bundle", portable=portable)
        entry = bundle.entry_for("b1")
        assert bundle.stale_reason("b1", "harness", catalogue) is None
        own = bundle.score_rows(entry, table[trained_on].to_numpy(), benchmarks, trained_on)
        new = bundle.score_rows(entry, table[catalogue].to_numpy(), benchmarks, catalogue)
        assert np.array_equal(new, own)
        assert np.abs(new - expected).max() < (1e-5 if portable else 1e-15)
        lost = [name for name in catalogue if name != trained_on[3]]
        assert trained_on[3] in bundle.stale_reason("b1", "harness", lost)
        with pytest.raises(ValueError, match=trained_on[3]):
            bundle.score_rows(entry, table[lost].to_numpy(), benchmarks, lost)


def test_hit_and_dismiss_rates_count_runs_against_labels_and_are_nan_with_nothing_to_count():
    from perf_selector.models.rates import dismiss_rate, hit_rate

    run = np.array([True, False, True, False])
    labels = np.array([True, True, False, False])
    assert hit_rate(run, labels) == 0.5 and dismiss_rate(run, labels) == 0.5
    assert math.isnan(hit_rate(run, np.zeros(4, bool))) and math.isnan(dismiss_rate(run, np.ones(4, bool)))


@pytest.mark.parametrize("model", ["svm", "logistic", "random-forest", "xgboost", "xgboost-monotone"])
def test_every_learner_trains_on_a_pack_the_catalogue_has_outgrown(tmp_path, model):
    """A pack made before the catalogue gained a feature holds it as unknown (NaN) on every tuple: each
    learner trains on it and keeps it as a column (cJSON's committed pack, one feature taken out)."""
    import shutil
    from pathlib import Path

    from perf_selector.models.design import design_matrix
    from perf_selector.selector.evaluation.evaluation_pack import METHOD4_DEFAULTS
    from perf_selector.selector.evaluation.project_evaluation import load_projects

    pack = tmp_path / "cjson" / "pack"
    shutil.copytree(Path(__file__).resolve().parents[1] / "corpus" / "cjson" / "pack", pack)
    features = pd.read_parquet(pack / "features.parquet")
    features.drop(columns=["executed_steering_share"]).to_parquet(pack / "features.parquet")
    (project,) = load_projects([(pack, None)], METHOD4_DEFAULTS)
    table = project.data.table[project.data.table["label"].notna()]
    assert table["executed_steering_share"].isna().all()
    X = design_matrix(table, FEATURE_NAMES, "cross-project", [])
    fitted = fit_model(MODELS[model].build(0), X, table["label"].to_numpy(bool))
    scores = fitted.predict_proba(X)[:, 1]
    assert np.isfinite(scores).all() and scores.std() > 0
    assert fitted.n_features_in_ == len(FEATURE_NAMES)
