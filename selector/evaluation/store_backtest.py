"""`selector backtest`: the store's history evaluated under a sampling protocol.

The store gives the history; :mod:`models.sampling` says which tuples train and test
in each split; the feature builder computes every tuple's features once; each tuple
is labelled from the stored measurements with the project's statistics (the same
test as `selector collect` uses, for pairs further apart too); and each test tuple
carries the cost of running its benchmark on its new commit, so the time saved can
be weighted by what the benchmarks really cost.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable, Sequence

import pandas as pd
import pyarrow as pa

from perf_selector.collectors.errors import UserError
from perf_selector.features.builder import build_feature_table
from perf_selector.features.catalogue import FEATURE_NAMES
from perf_selector.storage.history import History
from perf_selector.models.backtest import BacktestResult, backtest
from perf_selector.models.evaluation import epoch_table, results_table
from perf_selector.models.sampling import Plan, make_plan
from perf_selector.selector.config import Config, label_rules
from perf_selector.selector.evaluation.feature_table import benchmarks_of
from perf_selector.storage.history import load_history
from perf_selector.storage.labels import PairLabeller, binary_digests
from perf_selector.storage.store import Store
from perf_selector.selector.tables import records


@dataclass
class EvaluationData:
    history: History
    plan: Plan
    table: pd.DataFrame  # plan.tuples + features + label + cost, same row order
    benchmarks: list[str]
    min_effect: float | None = None  # the project's [labels] min_effect: where effect rules decide


def benchmark_costs(measurements: pa.Table) -> dict[tuple[str, str], float]:
    """Seconds spent running each benchmark on each commit (every run, warm-ups included)."""
    if not measurements.num_rows:
        return {}
    sums = measurements.group_by(["commit", "benchmark"]).aggregate([("seconds", "sum")])
    return {(commit, benchmark): float(seconds or 0.0) for commit, benchmark, seconds in
            zip(sums["commit"].to_pylist(), sums["benchmark"].to_pylist(), sums["seconds_sum"].to_pylist())}


def evaluation_data(store: Store, config: Config, method: str, options: dict,
                    benchmarks: Sequence[str] | None = None, history: History | None = None,
                    labelled: Callable[[pd.DataFrame], pd.DataFrame] | None = None) -> EvaluationData:
    """`history`: the store's, when the caller has loaded it already (else it is loaded here).
    `labelled`: how the plan's tuples get their features and labels, when not built from the
    store (labelled_feature_table): an evaluation pack reads them (selector.evaluation_pack)."""
    history = history if history is not None else load_history(store)
    known = benchmarks_of(history)
    chosen = list(benchmarks) if benchmarks else known
    unknown = sorted(set(chosen) - set(known))
    if unknown:
        raise UserError(f"no measurements of benchmark(s) {', '.join(unknown)} in the store; known: {', '.join(known) or 'none'}")
    if not chosen:
        raise UserError(f"{store.location}: no measurements; configure [[benchmark]] and run `selector collect`")
    try:
        plan = make_plan(method, history, chosen, **options)
    except ValueError as error:
        raise UserError(str(error)) from None
    if not plan.splits:
        raise UserError(f"{method}: the history is too short for these settings "
                        f"({len(history.built())} built commits; lower --first or -k, or collect more commits)")
    table = labelled(plan.tuples) if labelled else labelled_feature_table(store, config, history, plan.tuples)
    costs = benchmark_costs(history.measurements)
    typical = pd.Series(costs).groupby(level=1).median().to_dict() if costs else {}
    table["cost"] = [costs.get((new, b), typical.get(b, 1.0)) for new, b in zip(table["new"], table["benchmark"])]
    return EvaluationData(history, plan, table, chosen, config.labels.min_effect)


def labelled_feature_table(store: Store, config: Config, history: History, tuples: pd.DataFrame) -> pd.DataFrame:
    """The features of `tuples` (same row order), their hops, and each one's label computed from the
    stored measurements: stored labels exist only for closest pairs, the protocols need others."""
    table = build_feature_table(history, tuples).drop(columns=["label"])
    table["hops"] = tuples["hops"].to_numpy()
    # The stored labels' confirmations too, so a confirmed pair is labelled here as in the store.
    # The stored labels' pairs say how far identical binaries drift, as they did for the stored labels.
    stored = store.read("labels")
    neighbours = list(zip(*(stored[key].to_pylist() for key in ("new", "old", "benchmark")))) if stored.num_rows else []
    # And the re-measurements under perturbed contexts: a change they refute is undecided in the
    # store, so it must not be a change here (issue 37: the relabelling reaches the evaluation).
    labeller = PairLabeller(history.measurements, store.read("calibration"), label_rules(config), store.read("confirmations"),
                            binary_digests(store.read("commits")), neighbours, store.read("perturbed"))
    labels, effects = labeller.labels_and_effects(table[["new", "old", "benchmark"]].itertuples(index=False))
    table["label"] = pd.array(labels, dtype="boolean")
    table["effect"] = effects  # what models.effect learns
    return table


def run_backtest(data: EvaluationData, models: Sequence[str], scopes: Sequence[str], target_hit_rate: float, seed: int,
                 search: bool = False, progress: Callable[[int], None] | None = None,
                 operating_point: str = "quantile") -> BacktestResult:
    return backtest(data.plan, data.table, FEATURE_NAMES, models, scopes, target_hit_rate, seed, search, progress=progress,
                    operating_point=operating_point, min_effect=data.min_effect)


def save_backtest(directory: Path, result: BacktestResult, data: EvaluationData, settings: dict) -> dict:
    """predictions.parquet, importances.parquet and results.json in `directory`; returns the results document."""
    directory.mkdir(parents=True, exist_ok=True)
    result.predictions.to_parquet(directory / "predictions.parquet", index=False)
    result.importances.to_parquet(directory / "importances.parquet", index=False)
    results = results_table(result.predictions)
    document = {
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "settings": settings,
        "protocol": {"method": data.plan.method, **data.plan.parameters, "splits": len(data.plan.splits),
                     "leaks_future": data.plan.leaks_future},
        "tuples": {"distinct": len(data.table), "labelled": int(data.table["label"].notna().sum()),
                   "positive": int((data.table["label"] == True).sum())},  # noqa: E712
        "notes": sorted(set(result.notes)),
        "results": records(results),
        "epochs": records(epoch_table(result.predictions)),
    }
    (directory / "results.json").write_text(json.dumps(document, indent=2))
    return document


def track_backtest(directory: Path, document: dict, tracking_uri: str, artifact_root: Path | None) -> str:
    """One MLflow run: settings as parameters, AUROC / hit / dismiss / time saved as metrics, results as artifacts."""
    from perf_selector.models.tracking import log_run, metric_name

    params = {**{f"protocol.{k}": v for k, v in document["protocol"].items()},
              **{f"settings.{k}": v for k, v in document["settings"].items()}}
    metrics = {}
    for row in document["results"]:
        for measure in ("auroc", "hit_rate", "dismiss_rate", "time_saved"):
            if row[measure] is not None:
                benchmark = "all" if row["benchmark"] == "(all)" else row["benchmark"]
                metrics[metric_name(measure, row["scope"], row["model"], benchmark)] = row[measure]
    return log_run(f"backtest {document['protocol']['method']}", tracking_uri, params, metrics,
                   [directory / name for name in ("results.json", "predictions.parquet", "importances.parquet", "report.html",
                                                            "replay.json")],
                   artifact_root, tags={"kind": "backtest"})


def track_training(bundle_path: Path, bundle, tracking_uri: str, artifact_root: Path | None) -> str:
    """One MLflow run: the settings, training sizes, the bundle as artifacts and each model as a logged model."""
    from perf_selector.models.tracking import log_run, metric_name

    metrics = {}
    for entry in bundle.entries:
        name = entry.benchmark or "pooled"
        metrics[metric_name("training_tuples", name)] = entry.training_tuples
        metrics[metric_name("training_positives", name)] = entry.training_positives
        if math.isfinite(entry.threshold):
            metrics[metric_name("threshold", name)] = entry.threshold
    from perf_selector.models.bundle import load_bundle

    loaded = load_bundle(bundle_path)
    models = {f"model-{(entry.benchmark or 'pooled')}": loaded.estimators[entry.file] for entry in loaded.entries}
    models = {"".join(ch if ch.isalnum() or ch in "-_" else "-" for ch in name): model for name, model in models.items()}
    return log_run("train", tracking_uri, {**bundle.settings, **{f"trained_on.{k}": v for k, v in bundle.trained_on.items()}},
                   metrics, [bundle_path], artifact_root, tags={"kind": "train"}, models=models)
