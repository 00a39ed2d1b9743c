"""`selector backtest`, the use case: the models evaluated under a sampling protocol
(store_backtest), the history replayed as a team would have lived it (replay, saved as
replay.json beside the results), the HTML report drawn and an MLflow run logged."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable, Sequence

from perf_selector.collectors.errors import UserError
from perf_selector.models.backtest import BacktestResult
from perf_selector.selector.config import Config
from perf_selector.selector.evaluation.store_backtest import EvaluationData, evaluation_data, run_backtest, save_backtest, track_backtest
from perf_selector.storage.store import Store


@dataclass
class BacktestRun:
    """What one `selector backtest` produced: where it went, its results, its MLflow run."""

    directory: Path
    result: BacktestResult
    data: EvaluationData
    document: dict  # results.json
    report: Path | None
    mlflow_run: str | None


def backtest_store(store: Store, config: Config, method: str = "method4", options: dict | None = None,
                   models: Sequence[str] | None = None, scopes: Sequence[str] = ("per-benchmark", "pooled"),
                   benchmarks: Sequence[str] | None = None, target_hit_rate: float = 0.95, seed: int = 0,
                   search: bool = False, operating_point: str = "quantile", directory: Path | None = None,
                   report: bool = True, tracking: tuple[str, Path | None] | None = None, replay: bool = True,
                   on_step: Callable[[str], None] = lambda step: None,
                   on_fits: Callable[[int], None] = lambda total: None,
                   progress: Callable[[int], None] | None = None) -> BacktestRun:
    """The backtest use case: tuples and features, every model under the protocol, the results
    saved (by default under <store>/backtests/, where `selector report` finds them), the history
    replayed (`replay`: replay.json beside them, for the report's timeline), the HTML report
    drawn and an MLflow run logged (`tracking`: (tracking URI, artifact root), or None).
    `on_step` hears each step, `on_fits` the number of fits to come, `progress` each fit done."""
    from perf_selector.models.backtest import count_fits
    from perf_selector.models.names import MODEL_NAMES

    models = list(models or MODEL_NAMES)
    on_step("building tuples and features")
    data = evaluation_data(store, config, method, options or {}, benchmarks)
    on_fits(count_fits(data.plan, data.table, models, scopes))
    on_step("fitting models")
    result = run_backtest(data, models, scopes, target_hit_rate, seed, search, progress=progress,
                          operating_point=operating_point)
    if directory is None:
        if store.location != store.root:
            raise UserError("the store is not a local directory; give --out")
        directory = Path(store.root) / "backtests" / f"{datetime.now(timezone.utc):%Y%m%d-%H%M%S}-{method}"
    settings = {"models": models, "scopes": list(scopes), "target_hit_rate": target_hit_rate, "seed": seed, "search": search,
                "operating_point": operating_point, "benchmarks": data.benchmarks}
    document = save_backtest(directory, result, data, settings)
    if replay:
        on_step("replaying the history")
        replay_into(directory, store, config, data, document)
    written = None
    if report:
        from perf_selector.selector.evaluation.report import write_report

        on_step("drawing the report")
        written = write_report(directory)
    run_id = track_backtest(directory, document, *tracking) if tracking else None
    return BacktestRun(directory, result, data, document, written, run_id)


def replay_into(directory: Path, store: Store, config: Config, data: EvaluationData, document: dict) -> Path | None:
    """replay.json in `directory`: the store's history replayed (selector.replay) over the
    backtest's benchmarks; when it cannot be, a note in results.json says why instead."""
    import json

    from perf_selector.selector.evaluation.replay import save_timeline

    name = Path(store.root).resolve().parent.name if store.location == store.root else str(store.location)
    try:
        return save_timeline(directory, name, store, config, data.history, data.benchmarks)
    except UserError as error:
        document["notes"] = sorted({*document["notes"], f"no replay timeline: {error}"})
        (directory / "results.json").write_text(json.dumps(document, indent=2))
        return None
