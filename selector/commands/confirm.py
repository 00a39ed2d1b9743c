"""`selector confirm`: labels that drift could have decided, decided again in one session."""

from __future__ import annotations

from pathlib import Path

import click

from perf_selector.selector.commands.common import comma_list, format_option, open_project, repository_options, resolved
from perf_selector.selector.extras import require


@click.command("confirm")
@repository_options
@click.option("--benchmarks", callback=comma_list(None), help="Comma-separated benchmarks (a suite's by their stored names, gb/BM_x) [default: all configured and stored].")
@click.option("--rounds", type=click.IntRange(min=2),
              help="Interleaved rounds a pair (each runs both binaries once) [default: calibration's repetitions_needed, "
                   "at least the configured repetitions and what lets the test reach alpha].")
@click.option("--max-rounds", type=click.IntRange(min=2), default=30, show_default=True,
              help="The most rounds the default gives a pair.")
@click.option("--all", "every_label", is_flag=True,
              help="Also confirm the decided labels of those benchmarks, not only the undecided and borderline ones "
                   "(on a machine that drifts, confident-looking labels can be drift too).")
@click.option("--commits", "revisions", callback=comma_list(None), metavar="REV[,REV...]",
              help="Only the labels of these commits against their ancestors (a CI job: the commit it just "
                   "collected) [default: every stored label].")
@click.option("--dry-run", is_flag=True, help="List the pairs and the runs they would take; run nothing.")
@format_option
def confirm_command(repository: Path, config_path: Path | None, store_location: str | None, benchmarks: list[str] | None,
                    rounds: int | None, max_rounds: int, every_label: bool, revisions: list[str] | None, dry_run: bool,
                    output_format: str) -> None:
    """Confirm the stored labels that drift could have decided by running both binaries
    of each pair interleaved in one session.

    Collection measures each commit in its own session, minutes or days after its
    ancestor, and a machine's speed drifts in between. For the labels of metrics that
    are not repeatable (wall time, a number read from the output, callgrind counts that
    calibration found unfit) that are undecided, or decided near a threshold (effect
    within 2x of min_effect, or p-value within 2x of alpha), this runs the two stored
    binaries in turn (a warm-up each, then each round old and new in a random order) in
    one normalised run context, stores the runs (`confirmations` table) and labels the
    pair from them: decided_by "confirmation".

    A command of its own rather than `collect --confirm`: it builds nothing and takes no
    revision; it works on the store's labels, after any number of collections (run
    `selector calibrate` first: its noise sets the rounds). Each pair is stored as soon
    as it is done; an interrupted confirmation resumes where it stopped, and a pair
    confirmed before is not run again (delete its file under confirmations/ to redo it).
    """
    require("selector confirm", "collect")
    from perf_selector.collectors.repository import Repository
    from perf_selector.selector.collection.confirmation_report import report_confirmation, run_confirmation

    top, config, store = open_project(repository, config_path, store_location)
    repo = Repository.open(top)
    commits = None if revisions is None else [resolved(repo, revision) for revision in revisions]
    summary = run_confirmation(top, config, store, rounds, max_rounds, benchmarks, dry_run, every_label, commits)
    report_confirmation(summary, store, output_format)
