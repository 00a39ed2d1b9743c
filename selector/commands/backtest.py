"""`selector backtest`: the models evaluated on the stored history (Sousa 2019, Method 4 by default)."""

from __future__ import annotations

from pathlib import Path

import click

from perf_selector.models.names import MODEL_NAMES
from perf_selector.selector.commands.common import (FitsLog, comma_list, format_option, open_project, operating_point_option,
                                      repository_options, tracking_location, tracking_option)
from perf_selector.selector.extras import require
from perf_selector.selector.tables import caution_few_positives, logging_progress, print_json, print_table, records, stderr, stdout


@click.command("backtest")
@repository_options
@click.option("--models", callback=comma_list(MODEL_NAMES),
              help="Comma-separated models [default: all]: random-forest, svm, xgboost, logistic, perphecy, "
                   "always-run, reached-changed, executed-changed, history-only, predicted-effect.")
@click.option("--method", type=click.Choice(["method4", "method1", "method2", "method3", "kfold", "full"]), default="method4",
              show_default=True, help="Sampling protocol (Sousa 1.7; kfold and full are de Oliveira's 10-fold and "
                                      "train-on-everything); only method4 keeps the future out of training.")
@click.option("-k", "k", type=click.IntRange(min=1), default=5, show_default=True, help="Method 4: test commits per epoch.")
@click.option("--first", type=click.IntRange(min=1), help="Method 4: training commits of the first epoch [default: a fifth, at least 5].")
@click.option("--epoch-days", type=click.FloatRange(min=0, min_open=True),
              help="Method 4: epochs by commit date, one per this many days, instead of every k commits.")
@click.option("--folds", type=click.IntRange(min=2), default=10, show_default=True, help="kfold: number of folds.")
@click.option("--scope", "scopes", type=click.Choice(["per-benchmark", "pooled", "both"]), default="both", show_default=True,
              help="One model per benchmark, one pooled model (benchmark as a feature), or both.")
@click.option("--benchmarks", callback=comma_list(None), help="Comma-separated benchmarks [default: all measured].")
@click.option("--target-hit-rate", type=click.FloatRange(0, 1, min_open=True), default=0.95, show_default=True,
              help="The operating point keeps this share of training changes.")
@click.option("--search", is_flag=True, help="Grid-search hyperparameters on time-ordered folds of each training set.")
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--out", "out_dir", type=click.Path(file_okay=False, path_type=Path),
              help="Where results go [default: <store>/backtests/<time>-<method>/].")
@click.option("--report/--no-report", default=True, show_default=True, help="Write report.html beside the results.")
@click.option("--replay/--no-replay", default=True, show_default=True,
              help="Replay the history as `select` from day one would have lived it (replay.json beside the results: "
                   "the report's timeline).")
@operating_point_option
@tracking_option
@format_option
def backtest_command(repository, config_path, store_location, models, method, k, first, epoch_days, folds, scopes,
                     benchmarks, target_hit_rate, search, seed, out_dir, report, replay, operating_point, tracking_uri, no_tracking,
                     output_format):
    """Evaluate the models on the stored history the way Sousa (2019) does.

    Method 4 (default) cuts the history into epochs: each trains on every commit up to
    its boundary and tests the next k commits against the boundary; nothing newer
    than the boundary reaches training. Prints AUROC, and hit rate, dismiss rate and
    benchmark time saved at the operating point chosen on training data.
    """
    require("selector backtest", "train")
    if report:
        require("selector backtest's report", "report", otherwise="pass --no-report")
    if not no_tracking:
        require("selector backtest's MLflow run", "tracking", otherwise="pass --no-tracking")
    from rich.progress import Progress

    from perf_selector.models.evaluation import results_table
    from perf_selector.selector.evaluation.backtest_run import backtest_store

    _, config, store = open_project(repository, config_path, store_location)
    options = {"method4": {"k": k, "first": first, "epoch_days": epoch_days}, "kfold": {"folds": folds, "seed": seed},
               "method1": {"seed": seed}, "method2": {"seed": seed}, "method3": {}, "full": {}}[method]
    scope_list = ["per-benchmark", "pooled"] if scopes == "both" else [scopes]
    tracking = None if no_tracking else tracking_location(store, tracking_uri)
    log = FitsLog() if logging_progress() else None
    with Progress(console=stderr.console, transient=True) as progress:
        task = progress.add_task("building tuples and features", total=None)

        def on_fits(total: int) -> None:
            progress.update(task, total=total, completed=0)
            if log:
                log.start(total)

        def fitted(n: int) -> None:
            progress.advance(task, n)
            if log:
                log.advance(n)

        run = backtest_store(store, config, method, options, models, scope_list, benchmarks, target_hit_rate, seed, search,
                             operating_point, out_dir, report, tracking, replay=replay,
                             on_step=lambda step: progress.update(task, description=step), on_fits=on_fits, progress=fitted)
    out_dir, result, data, document, run_id = run.directory, run.result, run.data, run.document, run.mlflow_run
    if output_format == "json":
        print_json({"directory": str(out_dir), "mlflow_run": run_id, **document})
        return
    results = results_table(result.predictions)
    overall = results[results["benchmark"] == "(all)"].drop(columns=["benchmark", "run_share"])
    print_table(overall.round(3), title=f"{method}: {len(data.plan.splits)} splits, pooled over all benchmarks "
                                         f"(operating point for hit rate {target_hit_rate:g})")
    caution_few_positives(records(overall.drop_duplicates("positives")), lambda row: "the pooled figures")
    per_benchmark = results[results["benchmark"] != "(all)"].pivot_table(index=["model", "scope"], columns="benchmark",
                                                                        values="auroc", sort=False).round(3).reset_index()
    print_table(per_benchmark, title="AUROC per benchmark")
    for note in document["notes"]:
        stderr.print(f"note: {note}")
    if data.plan.leaks_future:
        stderr.print(f"[yellow]warning:[/] {method} lets newer commits train for older ones; its scores are optimistic")
    stdout.print(f"results in {out_dir}" + (f"; MLflow run {run_id}" if run_id else ""))
