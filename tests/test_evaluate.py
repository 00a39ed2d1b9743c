"""`selector evaluate` on two small real stores (the sample and the demo histories, built
with gcc, measured under valgrind): each project's own figures are `selector backtest`'s,
and leave-one-project-out scores exactly the held-out project's Method 4 test tuples."""

from __future__ import annotations

import json
import math
import subprocess
from pathlib import Path

import pandas as pd
import pytest

from perf_selector.models.bundle import load_bundle
from perf_selector.selector.evaluation.project_evaluation import BEGIN, CROSS_PROJECT, END, OWN_OR_SHIPPED
from perf_selector.selector.selection.shipped_model import SHIPPED_BUNDLE
from tests.helpers import selector_command

pytestmark = pytest.mark.slow
MODELS = "xgboost,perphecy,effect,reached-changed"


def cli(*arguments: str) -> dict:
    return cli_and_log(*arguments)[0]


def cli_and_log(*arguments: str) -> tuple[dict, str]:
    """The command's JSON document and what it wrote to stderr (a log, not a terminal)."""
    result = subprocess.run(selector_command(*arguments, "--format", "json"), capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout), result.stderr


def test_evaluate_gives_each_store_the_figures_backtest_gives_it(collected_sample, evolved_sample, tmp_path):
    roots = [collected_sample[0], evolved_sample[0]]
    markdown = tmp_path / "evaluation.md"
    markdown.write_text(f"# Evaluation\n\nprose before\n\n{BEGIN}\nold tables\n{END}\n\nprose after\n")
    command = ["evaluate", *(str(root / ".selector") for root in roots), "--models", MODELS, "--no-report",
               "--out", str(tmp_path / "evaluation"), "--markdown", str(markdown)]
    evaluated, log = cli_and_log(*command)
    names = [project["name"] for project in evaluated["projects"]]
    assert len(names) == 2 and len(set(names)) == 2
    assert all(f"building tuples and features: {name}" in log for name in names) and "taken from an earlier" not in log
    # run again, it takes each project's backtest and each model held out in turn from the parts it kept
    again, log = cli_and_log(*command)
    assert f"{2 + len(MODELS.split(','))} of the evaluation's parts taken from an earlier run" in log
    assert again["results"] == evaluated["results"]
    results = pd.DataFrame(evaluated["results"])
    for root, name in zip(roots, names):
        backtest = cli("backtest", "--repo", str(root), "--models", MODELS, "--no-report", "--no-tracking",
                       "--out", str(tmp_path / f"backtest-{name}"))
        expected = pd.DataFrame(backtest["results"])
        expected = expected[expected["benchmark"] == "(all)"]
        own = results[(results["project"] == name) & results["scope"].isin(["pooled", "per-benchmark"])]
        assert len(own) == len(expected) == 2 * len(MODELS.split(","))
        for row in expected.itertuples(index=False):
            match = own[(own["model"] == row.model) & (own["scope"] == row.scope)].iloc[0]
            for column in ("tuples", "positives", "auroc", "hit_rate", "dismiss_rate", "time_saved"):
                assert _same(getattr(row, column), match[column]), (name, row.model, row.scope, column)
        # leave-one-project-out scores the same test tuples as the project's own models
        predictions = pd.read_parquet(tmp_path / "evaluation" / "predictions.parquet")
        mine = predictions[predictions["project"] == name]
        key = ["new", "old", "benchmark"]
        pooled = mine[(mine["scope"] == "pooled") & (mine["model"] == "xgboost")][key]
        crossed = mine[(mine["scope"] == CROSS_PROJECT) & (mine["model"] == "xgboost")][key]
        switched = mine[(mine["scope"] == OWN_OR_SHIPPED) & (mine["model"] == "xgboost")][key]
        for other in (crossed, switched):
            assert len(other) and sorted(map(tuple, pooled.to_numpy())) == sorted(map(tuple, other.to_numpy()))
        # realized against target hit rate, epoch by epoch, as the predictions give it
        epochs = pd.DataFrame(evaluated["epochs"])
        row = epochs[(epochs["project"] == name) & (epochs["model"] == "xgboost") & (epochs["scope"] == CROSS_PROJECT)].iloc[0]
        changed = mine[(mine["scope"] == CROSS_PROJECT) & (mine["model"] == "xgboost") & mine["label"].astype(bool)]
        per_epoch = changed.groupby("epoch")["run"].mean()
        assert (row["epochs_with_changes"], row["epochs_at_target"]) == (len(per_epoch), int((per_epoch >= 0.95).sum()))
        assert row["lowest_epoch_hit_rate"] == pytest.approx(per_epoch.min())
    text = markdown.read_text()
    assert "epoch by epoch" in text
    assert text.startswith("# Evaluation\n\nprose before") and text.rstrip().endswith("prose after")
    assert "old tables" not in text and "Leave one project out" in text and all(name in text for name in names)
    assert (tmp_path / "evaluation" / names[0] / "results.json").is_file()


def _same(a, b) -> bool:
    missing = [value is None or (isinstance(value, float) and math.isnan(value)) for value in (a, b)]
    return all(missing) or (not any(missing) and a == pytest.approx(b))


def test_evaluate_needs_the_configuration_beside_the_store(tmp_path):
    (tmp_path / "store").mkdir()
    result = subprocess.run(selector_command("evaluate", str(tmp_path / "store")), capture_output=True, text=True)
    assert result.returncode == 2 and "no configuration" in result.stderr and "Traceback" not in result.stderr


def test_a_project_is_named_after_the_folder_of_its_configuration(tmp_path):
    """A store kept outside the repository (`--store`, a CI cache) is still the repository's."""
    from perf_selector.selector.evaluation.project_evaluation import open_project
    from perf_selector.storage.store import Store
    from tests.helpers import gcc_config

    repository, store = tmp_path / "libfoo", tmp_path / "cache" / "store"
    repository.mkdir()
    (repository / "selector.toml").write_text(gcc_config('[[benchmark]]\nname = "b"\ncommand = "{binary}"\n'))
    Store(store)
    name, _, config = open_project(store, repository / "selector.toml")
    assert name == "libfoo" and config.benchmark[0].name == "b"


def test_evaluate_shipped_decides_every_labelled_pair_as_select_does(collected_sample, evolved_sample, tmp_path):
    """Day one: the shipped bundle, untrained on the project, on every labelled closest pair;
    each decision is the one `selector select --against` makes for that pair."""
    roots = [collected_sample[0], evolved_sample[0]]
    stores = [str(root / ".selector") for root in roots]
    markdown = tmp_path / "evaluation.md"
    markdown.write_text("# Evaluation\n\nprose\n")
    document = cli("evaluate", "--shipped", *stores, "--out", str(tmp_path / "day-one"), "--markdown", str(markdown))
    results = pd.DataFrame(document["results"])
    assert set(results["model"]) == {"shipped", "executed-changed", "reached-changed"}
    predictions = pd.read_parquet(tmp_path / "day-one" / "day-one.parquet")
    for root, name in zip(roots, [p["name"] for p in document["projects"]]):
        mine = predictions[(predictions["project"] == name) & (predictions["model"] == "shipped")]
        row = results[(results["project"] == name) & (results["model"] == "shipped")].iloc[0]
        assert row["tuples"] == len(mine) > 0 and row["positives"] == int(mine["label"].sum())
        assert row["hit_rate"] == pytest.approx(mine.loc[mine["label"], "run"].mean()) if mine["label"].any() else True
        # the same decision as select's, pair by pair (a few pairs of each project, each kind)
        chosen = pd.concat([mine[mine["run"]].head(2), mine[~mine["run"]].head(2)])
        for pair in chosen.itertuples(index=False):
            result = subprocess.run(selector_command("select", pair.new, "--against", pair.old, "--repo", str(root),
                                                     "--format", "json"), capture_output=True, text=True)
            assert result.returncode in (0, 1), result.stderr  # 1: something runs
            selection = json.loads(result.stdout)
            decided = {b["name"]: b["decision"] for b in selection["benchmarks"]}
            assert decided[pair.benchmark] == ("run" if pair.run else "skip"), (name, pair.new, pair.benchmark)
            assert selection["model"]["shipped"]
    text = markdown.read_text()
    assert text.startswith("# Evaluation\n\nprose") and "selector evaluate --shipped: begin" in text
    # each project's deciding bundle says which policy it earned, and why: the shipped one here
    shipped_policy = load_bundle(SHIPPED_BUNDLE, load_models=False).settings["policy"]
    assert [(p["project"], p["policy"]) for p in document["policies"]] == [(p["name"], shipped_policy)
                                                                           for p in document["projects"]]
    for policy in document["policies"]:
        assert f"| {policy['project']} | {shipped_policy} | {policy['reason'][:40]}" in text
    # the text says which figures rest on fewer than 10 positives, and only those
    text_run = subprocess.run(selector_command("evaluate", "--shipped", *stores, "--out", str(tmp_path / "day-one-text")),
                              capture_output=True, text=True)
    few = sorted({row["project"] for row in document["results"] if row["positives"] < 10})
    caution = [line for line in text_run.stderr.splitlines() if line.startswith("caution:")]
    assert [all(f"{project} (" in line for project in few) for line in caution] == ([True] if few else [])
    held_out = cli("evaluate", "--shipped", "--held-out", *stores, "--out", str(tmp_path / "held-out"))
    assert held_out["held_out"] and {r["model"] for r in held_out["results"]} == {"shipped", "executed-changed", "reached-changed"}
    from perf_selector.selector.evaluation.project_evaluation import load_projects

    method4 = {p.name: p for p in load_projects([(Path(store), None) for store in stores],
                                                {"k": 5, "first": None, "epoch_days": None})}
    for policy in held_out["policies"]:  # each decided by its own held-out bundle, whose policy is reported
        bundle = load_bundle(tmp_path / "held-out" / "held-out" / policy["project"], load_models=False)
        assert (policy["policy"], policy["reason"]) == (bundle.settings["policy"], bundle.settings["policy_reason"])
        # trained as the shipped bundle is: on the other project's Method 4 tuples, not only its closest pairs
        (other,) = [p for name, p in method4.items() if name != policy["project"]]
        assert bundle.trained_on["projects"] == [other.name]
        assert bundle.trained_on["tuples"] == int(other.data.table["label"].notna().sum())
    # the rules are the same policy whichever bundle decides
    rules = lambda d: sorted((r["project"], r["model"], r["hit_rate"], r["dismiss_rate"])  # noqa: E731
                             for r in d["results"] if r["model"] != "shipped")
    assert rules(held_out) == rules(document)


def test_evaluate_shipped_held_out_needs_two_stores(collected_sample, tmp_path):
    store = str(collected_sample[0] / ".selector")
    result = subprocess.run(selector_command("evaluate", "--shipped", "--held-out", store, "--out", str(tmp_path / "out")),
                            capture_output=True, text=True)
    assert result.returncode == 2 and "at least two" in result.stderr and "Traceback" not in result.stderr
    result = subprocess.run(selector_command("evaluate", "--held-out", store), capture_output=True, text=True)
    assert result.returncode == 2 and "--shipped" in result.stderr and "Traceback" not in result.stderr


def test_evaluate_replay_held_out_decides_each_project_by_a_bundle_trained_without_it(collected_sample, evolved_sample,
                                                                                     tmp_path):
    """The replay's shipped policy, honest for corpus projects: each store walked with a bundle
    trained as the shipped one on the other stores only; its table written between markers."""
    from perf_selector.selector.evaluation.replay import BEGIN as REPLAY_BEGIN, END as REPLAY_END

    stores = [str(collected_sample[0] / ".selector"), str(evolved_sample[0] / ".selector")]
    markdown = tmp_path / "evaluation.md"
    markdown.write_text("# Evaluation\n\nprose before\n")
    out = tmp_path / "replay"
    document = cli("evaluate", "--replay", "--held-out", *stores, "--out", str(out), "--markdown", str(markdown))
    assert document["held_out"]
    assert json.loads((out / "replay.json").read_text())["projects"] == document["projects"]  # --out holds it
    names = [project["name"] for project in document["projects"]]
    assert len(set(names)) == 2
    for project in document["projects"]:
        shipped = project["bundles"]["shipped"]
        assert shipped["bundle"] == str(out / "held-out" / project["name"])
        other = next(name for name in names if name != project["name"])
        assert shipped["trained_on"].endswith(f"1 projects: {other})"), shipped  # never on itself
    # the rules need no bundle: the same walk as the plain replay's
    plain = cli("evaluate", "--replay", *stores, "--out", str(tmp_path / "plain"), "--retrain-every", "0")
    rules = lambda d: sorted((p["name"], r["policy"], r["runs"], r["at_commit"], r["never"])  # noqa: E731
                             for p in d["projects"] for r in p["summary"] if r["policy"] not in ("shipped", "own"))
    assert rules(document) == rules(plain) and rules(plain)
    text = markdown.read_text()
    assert text.startswith("# Evaluation\n\nprose before\n") and REPLAY_BEGIN in text and REPLAY_END in text
    for name in names:
        assert f"| {name} | shipped |" in text and f"| {name} | executed-changed |" in text
    # written again in place, the prose kept
    markdown.write_text(text + "\nprose after\n")
    cli("evaluate", "--replay", *stores, "--markdown", str(markdown), "--out", str(tmp_path / "again"), "--retrain-every", "0")
    again = markdown.read_text()
    assert again.count(REPLAY_BEGIN) == 1 and again.endswith("\nprose after\n") and "(`--held-out`)" not in again


def test_evaluate_side_by_side_gives_the_figures_it_gives_alone(collected_sample, evolved_sample):
    """`--jobs 2` evaluates the projects in two processes: every prediction, own and left out
    in turn, is the one a single process makes."""
    from perf_selector.selector.evaluation.project_evaluation import evaluate, load_projects

    stores = [(root / ".selector", None) for root in (collected_sample[0], evolved_sample[0])]
    projects = load_projects(stores, {"k": 5, "first": None, "epoch_days": None})
    models = ["xgboost", "perphecy", "executed-changed"]
    advanced = []
    alone = evaluate(projects, models, 0.95, 0)
    side_by_side = evaluate(projects, models, 0.95, 0, progress=advanced.append, jobs=2)
    assert len(side_by_side.predictions) and {CROSS_PROJECT, OWN_OR_SHIPPED} <= set(side_by_side.predictions["scope"])
    pd.testing.assert_frame_equal(alone.predictions, side_by_side.predictions)
    assert side_by_side.notes == alone.notes
    # the progress bar reaches its total: every fit of every project, and each held-out project's models
    from perf_selector.models.backtest import count_fits
    from perf_selector.selector.evaluation.project_evaluation import SCOPES
    assert sum(advanced) == sum(count_fits(p.data.plan, p.data.table, models, SCOPES) for p in projects) + 2 * len(models)


def test_evaluate_cut_off_half_way_resumes_from_the_parts_it_kept(collected_sample, evolved_sample, tmp_path,
                                                                   monkeypatch):
    """Each project's backtest and each model held out in turn is kept under the output's parts/ as
    it finishes: a run stopped half way leaves what it finished, the next run takes those and
    computes the rest, with the figures of an uninterrupted run; other inputs take nothing."""
    import dataclasses

    from perf_selector.selector.evaluation import project_evaluation
    from perf_selector.selector.evaluation.evaluation_parts import Parts, project_digest
    from perf_selector.selector.evaluation.project_evaluation import evaluate, load_projects

    stores = [(root / ".selector", None) for root in (collected_sample[0], evolved_sample[0])]
    projects = load_projects(stores, {"k": 5, "first": None, "epoch_days": None})
    models = ["xgboost", "perphecy", "executed-changed"]
    whole = evaluate(projects, models, 0.95, 0)
    folder = tmp_path / "parts"

    held_out_predictions = project_evaluation._held_out_predictions

    handed_out = []

    def stopped_at_the_second(projects, model, *arguments, **keywords):
        handed_out.append(model)
        if len(handed_out) == 2:
            raise KeyboardInterrupt  # Ctrl-C, or the session's end
        return held_out_predictions(projects, model, *arguments, **keywords)

    monkeypatch.setattr(project_evaluation, "_held_out_predictions", stopped_at_the_second)
    with pytest.raises(KeyboardInterrupt):
        evaluate(projects, models, 0.95, 0, parts=Parts(folder))
    kept = sorted(path.name.rsplit("-", 1)[0] for path in folder.iterdir())
    assert kept == ["held-out", "own", "own"]  # both backtests and the first model held out in turn; nothing half written
    monkeypatch.undo()

    advanced = []
    resumed_parts = Parts(folder)
    resumed = evaluate(projects, models, 0.95, 0, progress=advanced.append, parts=resumed_parts)
    assert resumed_parts.taken == 3
    pd.testing.assert_frame_equal(whole.predictions, resumed.predictions)
    assert resumed.notes == whole.notes
    from perf_selector.models.backtest import count_fits
    from perf_selector.selector.evaluation.project_evaluation import SCOPES
    assert sum(advanced) == sum(count_fits(p.data.plan, p.data.table, models, SCOPES) for p in projects) + 2 * len(models)
    assert len(list(folder.iterdir())) == 2 + len(models)

    # another model set shares no backtest, and the folder keeps only the parts of the last run
    other_parts = Parts(folder)
    evaluate(projects, ["perphecy"], 0.95, 0, parts=other_parts)
    assert other_parts.taken == 1 and len(list(folder.iterdir())) == 3  # perphecy held out in turn is the same work
    # one label changed is another project
    flipped = projects[0].data.table.copy()
    position = flipped.index[flipped["label"].notna()][0]
    flipped.loc[position, "label"] = not flipped.loc[position, "label"]
    changed = dataclasses.replace(projects[0], data=dataclasses.replace(projects[0].data, table=flipped))
    assert project_digest(changed) != project_digest(projects[0])
    assert project_digest(projects[0]) == project_digest(load_projects(stores[:1], {"k": 5, "first": None,
                                                                                    "epoch_days": None})[0])
