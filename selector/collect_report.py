"""Showing a collection run: a progress bar while it runs, a summary table after."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from collectors.git_history import CommitInfo
from selector.collect import SKIPPED, CollectSummary, CommitOutcome, collect
from selector.config import Config
from selector.store import Store
from selector.tables import print_json, print_table, records, stderr


def run_collection(
    top: Path, config: Config, store: Store, commits: list[CommitInfo], jobs: int = 1, retry_failed: bool = False,
    scheduler: str | None = None,
) -> CollectSummary:
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), TimeRemainingColumn())
    with Progress(*columns, console=stderr.console, transient=False) as progress:
        task = progress.add_task("collecting", total=len(commits))

        def advance(outcome: CommitOutcome) -> None:
            label = {"ok": "built", SKIPPED: "stored", "failed": "FAILED"}.get(outcome.status, outcome.status)
            progress.update(task, advance=1, description=f"{outcome.sha[:10]} {label}")

        return collect(top, config, store, commits, jobs=jobs, retry_failed=retry_failed, on_outcome=advance, scheduler=scheduler)


def report_collection(summary: CollectSummary, store: Store, output_format: str) -> None:
    totals = {
        "commits": len(summary.outcomes), "built": summary.count("ok"), "failed": summary.count("failed"),
        "already_stored": summary.count(SKIPPED), "analyses_reused": sum(o.reused_analysis for o in summary.outcomes),
        "profiled": sum(o.profiled for o in summary.outcomes),
        "failed_runs": sum(o.failed_runs for o in summary.outcomes),
        "store": store.location,
    }
    failures = [{"commit": o.sha, "reason": o.reason} for o in summary.failures]
    labels = summary.labels.per_benchmark if summary.labels is not None else None
    if output_format == "json":
        print_json({"summary": totals, "failures": failures, "labels": records(labels) if labels is not None else []})
        return
    print_table(pd.DataFrame([{k: v for k, v in totals.items() if k != "store"}]), title=f"collected into {store.location}")
    if failures:
        print_table(pd.DataFrame([{"commit": f["commit"][:12], "reason": f["reason"]} for f in failures]), title="failures")
    if totals["failed_runs"]:
        stderr.print(f"{totals['failed_runs']} benchmark runs failed; their reasons are in the commits table (run_failures)")
    if labels is not None and len(labels):
        print_table(labels, title="labels (each commit against its closest measured ancestor)")
