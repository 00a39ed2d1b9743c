"""`selector report`: a backtest's self-contained HTML report."""

from __future__ import annotations

from pathlib import Path

import click

from perf_selector.collectors.errors import UserError
from perf_selector.selector.commands.common import local_root, open_store
from perf_selector.selector.extras import require
from perf_selector.selector.tables import stderr, stdout


@click.command("report")
@click.argument("backtest_dir", required=False, type=click.Path(file_okay=False, path_type=Path))
@click.option("--store", "store_location", help="Use the newest backtest of this store when BACKTEST_DIR is not given.")
@click.option("--output", type=click.Path(dir_okay=False, path_type=Path), help="[default: report.html in the backtest folder]")
def report_command(backtest_dir: Path | None, store_location: str | None, output: Path | None) -> None:
    """Write the self-contained HTML report of a backtest: what the deciding policies save
    and miss, the replay's timeline (when the backtest replayed the history), ROC curves
    per benchmark and model, the AUROC table, AUROC per epoch, the hit/dismiss trade-off
    and feature importances.
    """
    require("selector report", "collect", "report")
    from perf_selector.selector.evaluation.report import write_report

    if backtest_dir is None:
        store = open_store(Path("."), store_location)
        runs = sorted((Path(local_root(store, "BACKTEST_DIR")) / "backtests").glob("*/results.json"))
        if not runs:
            raise UserError(f"no backtest in {store.location}; run `selector backtest` first")
        backtest_dir = runs[-1].parent
    if not (backtest_dir / "results.json").is_file():
        raise UserError(f"{backtest_dir}: not a backtest folder (no results.json)")
    with stderr.status("drawing the report"):
        written = write_report(backtest_dir, output)
    stdout.print(f"report written to {written}")
