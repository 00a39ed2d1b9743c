"""`selector train`: the selecting model, trained on the whole stored history."""

from __future__ import annotations

from pathlib import Path

import click

from perf_selector.models.names import MODEL_NAMES
from perf_selector.selector.commands.common import (comma_list, format_option, open_project, operating_point_option,
                                      repository_options, tracking_location, tracking_option)
from perf_selector.selector.extras import require
from perf_selector.selector.tables import print_json, print_table, records, stderr, stdout


@click.command("train")
@repository_options
@click.option("--model", type=click.Choice(("auto", *MODEL_NAMES)), default="auto", show_default=True,
              help="Which model selects. auto: the learner this history's own backtest chooses (the one that prunes "
                   "the most among those that kept every change the executed-changed rule keeps, within the conformal "
                   "bound of their changes); the bundle records which and why.")
@click.option("--scope", type=click.Choice(["per-benchmark", "pooled"]), default="pooled", show_default=True)
@click.option("--benchmarks", callback=comma_list(None), help="Comma-separated benchmarks [default: all measured].")
@click.option("--target-hit-rate", type=click.FloatRange(0, 1, min_open=True), default=0.95, show_default=True)
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--bundle", "bundle_path", type=click.Path(file_okay=False, path_type=Path),
              help="Where the model bundle goes [default: <store>/models, where `selector select` looks].")
@click.option("--if-ready", is_flag=True,
              help="When the history is too short to learn from yet, say so and exit 0 (CI, recording from nothing).")
@operating_point_option
@tracking_option
@format_option
def train_command(repository, config_path, store_location, model, scope, benchmarks, target_hit_rate, seed, bundle_path,
                  if_ready, operating_point, tracking_uri, no_tracking, output_format):
    """Train the selecting model on the whole stored history and choose its operating
    point (on out-of-fold training scores, for the target hit rate).

    Once the model has learnt from 19 changes (and `select` follows it), it is also
    backtested on this history (Method 4) beside the executed-changed rule on the same
    tuples, and the bundle records what `select` then does: follow the model, let it
    decide only among what the rule runs, or let the rule decide where the model did
    not dismiss more at as high a hit rate.

    The bundle holds no pickle: it loads without running code from the file, and a
    modified file is refused.
    """
    require("selector train", "train")
    if not no_tracking:
        require("selector train's MLflow run", "tracking", otherwise="pass --no-tracking")
    from perf_selector.selector.evaluation.training import NothingToLearnYet, default_bundle_path, train_bundle

    _, config, store = open_project(repository, config_path, store_location)
    bundle_path = bundle_path or default_bundle_path(store)
    try:
        doing = "backtesting every learner on this history to choose one, then training it" if model == "auto" else \
            f"training {model} (and, once it has learnt from enough changes, backtesting it against the executed-changed rule)"
        with stderr.status(doing):
            bundle, summary = train_bundle(store, config, model, scope, target_hit_rate, seed, bundle_path, benchmarks,
                                           operating_point)
    except NothingToLearnYet as error:
        if not if_ready:
            raise
        if output_format == "json":
            print_json({"bundle": None, "not_trained": str(error)})
        stderr.print(f"note: not trained yet: {error}", markup=False, highlight=False)
        return
    run_id = None
    if not no_tracking:
        from perf_selector.selector.evaluation.store_backtest import track_training

        run_id = track_training(bundle_path, bundle, *tracking_location(store, tracking_uri))
    if output_format == "json":
        print_json({"bundle": str(bundle_path), "mlflow_run": run_id, "trained_on": bundle.trained_on,
                    "settings": bundle.settings, "models": records(summary)})
        return
    trained = bundle.settings.get("model", model)
    print_table(summary, title=f"{trained} ({scope}) trained on {bundle.trained_on['tuples']} tuples")
    if bundle.settings.get("model_choice"):
        stderr.print(f"note: {trained}: {bundle.settings['model_choice']['reason']}", markup=False, highlight=False)
    _say_what_decides(summary)
    if "evidence" in bundle.settings or bundle.settings.get("policy_reason"):
        stderr.print(f"note: {_policy_words(bundle.settings.get('policy'))}: {bundle.settings.get('policy_reason', '')}",
                     markup=False, highlight=False)
    if bundle.settings.get("shipped_threshold") is not None:
        stderr.print(f"note: the shipped model's operating point, adapted to this project's labelled changes, is "
                     f"{bundle.settings['shipped_threshold']:.4g}; select uses it while the shipped model decides")
    stdout.print(f"bundle in {bundle_path}" + (f"; MLflow run {run_id}" if run_id else ""))



def _policy_words(policy: str | None) -> str:
    from perf_selector.models.names import STEPPING_ASIDE_RULE, WITHIN_RULE

    return {STEPPING_ASIDE_RULE: "select lets the executed-changed rule decide instead of this model",
            WITHIN_RULE: "select lets this model decide only among what the executed-changed rule runs"}.get(
        policy, "select follows this model")



def _say_what_decides(summary) -> None:
    """After training: which benchmarks the new bundle decides, and for which the shipped model
    keeps deciding (its own model learnt from too few changes)."""
    from perf_selector.selector.selection.shipped_model import OWN_POSITIVES_NEEDED, shipped_bundle_path

    thin = summary[summary["positives"] < OWN_POSITIVES_NEEDED]
    if thin.empty or shipped_bundle_path() is None:
        return
    names = ", ".join(map(str, thin["benchmark"].head(5))) + (f" and {len(thin) - 5} more" if len(thin) > 5 else "")
    stderr.print(f"note: select keeps using the shipped cross-project model for {names}: "
                 f"{'its model' if len(thin) == 1 else 'their models'} learnt from fewer than {OWN_POSITIVES_NEEDED} "
                 f"changes ({', '.join(map(str, sorted(set(thin['positives']))))}); train again once the store holds more")
