"""Showing a confirmation: a progress bar over its runs while it runs, what it decided after."""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from perf_selector.selector.config import Config
from perf_selector.selector.collection.confirmation import (
    CONFIRMED, PLANNED, SKIPPED, STORED, Candidate, ConfirmSummary, PairOutcome, chosen_specs, confirm,
)
from perf_selector.selector.tables import print_json, print_rows, stderr, stdout
from perf_selector.storage.store import Store


def run_confirmation(top: Path, config: Config, store: Store, rounds: int | None, max_rounds: int,
                     benchmarks: Sequence[str] | None, dry_run: bool, every_label: bool = False,
                     commits: Sequence[str] | None = None) -> ConfirmSummary:
    labels = store.read("labels")
    stored = sorted(set(labels["benchmark"].to_pylist())) if labels.num_rows else []
    chosen_specs(config, benchmarks, stored)  # a mistyped benchmark is an error before the progress bar starts
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), TimeRemainingColumn())
    with Progress(*columns, console=stderr.console, transient=False, disable=dry_run) as progress:
        task = progress.add_task("finding the labels to confirm", total=None)
        finished = 0  # runs of the pairs done

        def planned(pending: list[Candidate]) -> None:
            progress.update(task, total=sum(candidate.runs for candidate in pending), description="confirming")

        def ran(candidate: Candidate, done: int) -> None:
            progress.update(task, completed=finished + done,
                            description=f"{candidate.benchmark} {candidate.old[:8]}..{candidate.new[:8]} "
                                        f"run {done}/{candidate.runs}")

        def paired(outcome: PairOutcome) -> None:
            nonlocal finished
            finished += outcome.candidate.runs
            progress.update(task, completed=finished)
            if outcome.status == SKIPPED or outcome.note:
                progress.console.print(f"{_pair(outcome.candidate)}: {outcome.note}")

        return confirm(top, config, store, rounds, max_rounds, benchmarks, dry_run, every_label, commits,
                       on_plan=planned, on_run=ran, on_pair=paired)


def report_confirmation(summary: ConfirmSummary, store: Store, output_format: str) -> None:
    totals = {"pairs": len(summary.outcomes), "confirmed": summary.count(CONFIRMED), "confirmed_before": summary.count(STORED),
              "skipped": summary.count(SKIPPED), "planned": summary.count(PLANNED),
              "runs": sum(outcome.runs for outcome in summary.outcomes),
              "planned_runs": sum(outcome.candidate.runs for outcome in summary.outcomes if outcome.status == PLANNED),
              "failed_runs": sum(outcome.failed_runs for outcome in summary.outcomes),
              "labels_changed": len(summary.changed), "seconds": round(summary.seconds, 1), "store": store.location}
    pairs = [{"new": o.candidate.new, "old": o.candidate.old, "benchmark": o.candidate.benchmark, "why": o.candidate.why,
              "rounds": o.candidate.rounds, "status": o.status, "runs": o.runs, "note": o.note} for o in summary.outcomes]
    if output_format == "json":
        print_json({"summary": totals, "pairs": pairs, "changed": summary.changed})
        return
    if not pairs:
        stdout.print("nothing to confirm: no undecided or borderline labels of timed (or unfit) benchmarks in "
                     f"{store.location}")
        return
    shown = [{**row, "new": row["new"][:10], "old": row["old"][:10]} for row in pairs]
    print_rows(shown, title="labels to confirm (interleaved runs of both stored binaries in one session)")
    if totals["planned"]:
        stdout.print(f"dry run: {totals['planned']} pairs would take {totals['planned_runs']} runs (warm-ups included)")
        return
    stdout.print(f"{totals['confirmed']} pairs confirmed with {totals['runs']} runs in {totals['seconds']} s; "
                 f"{totals['confirmed_before']} confirmed before, {totals['skipped']} skipped")
    if summary.changed:
        print_rows([{**row, "new": row["new"][:10], "old": row["old"][:10]} for row in summary.changed],
                   title=f"{len(summary.changed)} labels changed by confirmation")
    else:
        stdout.print("no label changed")


def _pair(candidate: Candidate) -> str:
    return f"{candidate.benchmark} {candidate.old[:10]}..{candidate.new[:10]}"
