"""``selector demo``: the whole tool on the generated sample history.

Generates the sample C project (80 commits: the scripted kinds of change, then knob
turns that do or do not change what the benchmarks execute, then a season of tuning with
guards toggled at the kernels' entry), calibrates and collects it, backtests every model
(Method 4), writes the HTML report, trains the selecting model (the learner its own
backtest chooses, under the policy and the bound its evidence earns), selects for the
newest commit, says which model decides and what it saves against the rule, and logs the
backtest and the training as MLflow runs in the store.  Rerunning reuses what is there.
"""

from __future__ import annotations

import shlex
import shutil
from pathlib import Path

import pandas as pd

from perf_selector.collectors.build_config import configs_differ
from perf_selector.collectors.errors import UserError
from perf_selector.collectors.repository import Repository
from perf_selector.collectors.static_diff import diff_functions, diff_objects
from perf_selector.selector.collection.calibrate import calibrate
from perf_selector.selector.collection.collect_report import report_collection, run_collection
from perf_selector.selector.config import CONFIG_NAME, load_config
from perf_selector.selector.selection.function_names import readable
from perf_selector.selector.onboarding.sample_history import DEMO_STEPS, make_sample_history
from perf_selector.storage.store import Store
from perf_selector.selector.selection.selection_output import print_selection
from perf_selector.selector.tables import print_json, print_table, records, stderr, stdout


def run_demo(directory: Path, jobs: int = 2, output_format: str = "text") -> pd.DataFrame:
    """Generate (or reuse) the sample project under `directory`, collect it, show each commit's diff."""
    project, store_path = directory / "project", directory / "store"
    if not project.exists():
        if directory.exists() and any(directory.iterdir()):
            raise UserError(f"{directory} exists and is not a selector demo; choose another --out")
        stderr.print(f"Creating the sample C project and its history in {project}")
        make_sample_history(project, steps=DEMO_STEPS)
    elif not (project / CONFIG_NAME).is_file():
        raise UserError(f"{project} exists but holds no {CONFIG_NAME}; choose another --out")

    repository = Repository.open(project)
    config = load_config(project / CONFIG_NAME)
    store = Store(store_path)
    commits = repository.commits("HEAD")
    if not store.keys("calibration"):
        stderr.print("Calibrating the benchmarks on the first commit (A/A)")
        calibrate(project, config, store, commits[0].sha, rounds=3)
    summary = run_collection(project, config, store, commits, jobs=jobs)
    changes = commit_changes(store, [c.sha for c in commits])
    evaluation = _evaluate(project, config, store, directory)
    hints = try_commands(project, store, commits)
    if output_format == "json":
        print_json({"project": str(project), "store": str(store_path), "commits": records(changes), "try": hints,
                    **evaluation["json"]})
        return changes
    report_collection(summary, store, "text")
    print_table(changes.tail(12), title="what the last commits changed in the binary (static analysis)")
    print_table(evaluation["results"], title="backtest (Method 4, k=5), all benchmarks pooled: operating point for hit rate 0.95")
    print_selection(evaluation["selection"], "text")
    stdout.print(f"\nWhich model decides: {evaluation['decides']}")
    notebooks = (f"SELECTOR_PROJECT={project} jupyter lab notebooks/" if shutil.which("jupyter")
                 else "pip install jupyterlab, then: SELECTOR_PROJECT=... jupyter lab notebooks/ (in this package's checkout)")
    stdout.print(
        f"\nWhere to look:\n"
        f"  sample project   {project}   (git log shows the planted changes)\n"
        f"  store            {store_path}  (Parquet tables; docs/store.md)\n"
        f"  report           {evaluation['report']}\n"
        f"  model bundle     {evaluation['bundle']}\n"
        f"  MLflow runs      mlflow ui --backend-store-uri {evaluation['tracking']}\n"
        f"  notebooks        {notebooks}\n"
        + "".join(f"  {'try' if n == 0 else '':16} {hint}\n" for n, hint in enumerate(hints))
    )
    return changes


def try_commands(project: Path, store: Store, commits) -> list[str]:
    """Commands to try next, each whole (they run as printed from any directory): select an
    older commit, bisect a range that holds a change of the benchmark it names, the report."""
    where = f"--repo {shlex.quote(str(project))} --store {shlex.quote(str(store.root))}"
    hints = [f"selector select HEAD~3 {where}"]
    labels = store.read("labels")
    positive = [row for row in labels.select(["new", "benchmark", "label"]).to_pylist() if row["label"]] if labels.num_rows else []
    order = [commit.sha for commit in commits]
    if positive:
        newest = max(positive, key=lambda row: order.index(row["new"]) if row["new"] in order else -1)
        good = order[max(order.index(newest["new"]) - 6, 0)]
        hints.append(f"selector bisect {good[:10]} HEAD --benchmark {newest['benchmark']} {where}")
    hints.append(f"selector report --store {shlex.quote(str(store.root))}")
    return hints


def _evaluate(project: Path, config, store: Store, directory: Path) -> dict:
    """Backtest, report, train and select, as a user would run them after collecting."""
    from perf_selector.models.names import MODEL_NAMES
    from perf_selector.models.tracking import default_tracking
    from perf_selector.models.evaluation import results_table
    from perf_selector.selector.evaluation.backtest_run import backtest_store
    from perf_selector.selector.evaluation.store_backtest import track_training
    from perf_selector.selector.selection.selection import select
    from perf_selector.selector.evaluation.training import AUTO, default_bundle_path, train_bundle

    tracking_uri, artifacts = default_tracking(Path(store.root))
    with stderr.status("backtesting every model (Method 4, k=5)"):
        # The use case `selector backtest` runs: its results where `selector report --store` finds them.
        run = backtest_store(store, config, "method4", {"k": 5}, list(MODEL_NAMES), tracking=(tracking_uri, artifacts))
        result, report, backtest_run = run.result, run.report, run.mlflow_run
    with stderr.status("training the selecting model"):
        bundle_path = default_bundle_path(store)
        bundle, _ = train_bundle(store, config, AUTO, "pooled", 0.95, 0, bundle_path)
        train_run = track_training(bundle_path, bundle, tracking_uri, artifacts)
    selection = select(project, config, store, "HEAD")
    decides = (selection.model or {}).get("policy_summary") or "the executed-changed rule (no model)"
    results = results_table(result.predictions)
    overall = results[results["benchmark"] == "(all)"][["model", "scope", "auroc", "hit_rate", "dismiss_rate", "time_saved",
                                                       "missed"]].round(3)
    return {
        "results": overall, "selection": selection, "decides": decides, "report": report, "bundle": bundle_path,
        "tracking": tracking_uri,
        "json": {"decides": decides, "report": str(report), "bundle": str(bundle_path), "tracking_uri": tracking_uri,
                 "mlflow_runs": {"backtest": backtest_run, "train": train_run}, "results": records(overall),
                 "selection": selection.document()},
    }


def commit_changes(store: Store, shas: list[str]) -> pd.DataFrame:
    """For each commit after the first: its functions new / deleted / changed against its parent."""
    commits = {commit["sha"]: commit for commit in store.read("commits").to_pylist()}
    rows = []
    for previous, current in zip(shas, shas[1:]):
        row = {"commit": current[:10], "subject": commits[current]["subject"]}
        if commits[previous]["build_status"] != "ok" or commits[current]["build_status"] != "ok":
            rows.append({**row, "new": "", "deleted": "", "changed": "(build failed)", "data": "", "build config": ""})
            continue
        functions = diff_functions(store.read_one("functions", previous), store.read_one("functions", current))
        objects = diff_objects(store.read_one("objects", previous), store.read_one("objects", current))
        names = {status: ", ".join(readable(row["name"]) for row in functions if row["status"] == status)
                 for status in ("new", "deleted", "changed")}
        rows.append(
            {
                **row, **names,
                "data": ", ".join(row["name"] for row in objects),
                "build config": "changed" if configs_differ(commits[current]["build_config"], commits[previous]["build_config"])
                else "",
            }
        )
    return pd.DataFrame(rows)
