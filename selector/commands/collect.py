"""`selector collect`: build a range of commits and store what each one is and does."""

from __future__ import annotations

from pathlib import Path

import click

from perf_selector.collectors.errors import UserError
from perf_selector.selector.commands.common import format_option, open_project, repository_options
from perf_selector.selector.extras import require
from perf_selector.selector.tables import stderr


@click.command("collect")
@click.argument("revision", default="HEAD")
@repository_options
@click.option("--since", help='Only commits after this date ("2 weeks ago", "2024-01-31").')
@click.option("-n", "max_count", type=int, help="Only the newest N commits of the range.")
@click.option("--first-parent/--full-graph", default=False, show_default=True,
              help="Follow only first parents (the mainline) or every parent of merges.")
@click.option("-j", "--jobs", type=click.IntRange(min=1), default=1, show_default=True, help="Commits built in parallel.")
@click.option("--retry-failed", is_flag=True, help="Build again the commits whose build failed before.")
@click.option("--scheduler", metavar="tcp://HOST:PORT",
              help="Run the commits on a Dask distributed cluster instead of local processes (docs/collection.md, 'On a Dask cluster').")
@click.option("--reuse/--no-reuse", default=True, show_default=True,
              help="Record a commit whose binary is identical to a measured one (same code, symbols, suite, compiler) "
                   "with that one's runs, marked reused, for the benchmarks calibration found exact; nothing is run. "
                   "A commit that changes only [build] unaffected paths also takes its parent's build.")
@click.option("--cache/--no-cache", default=True, show_default=True,
              help="Build through ccache when it is installed, so files a commit did not touch are not compiled again "
                   "(the binaries are the bytes a clean build gives).")
@click.option("--failures", "list_failures", is_flag=True,
              help="Collect nothing: list what failed in the store (failed builds with their reason, failed benchmark "
                   "and profiling runs with theirs), newest first; --retry-failed builds the failed commits again.")
@click.option("--calibrate/--no-calibrate", "calibrate_first", default=True, show_default=True,
              help="When the store has no calibration, calibrate on the oldest commit of the range first (2 rounds): "
                   "without it no instruction count is known exact, labels stay undecided and no run is reused.")
@format_option
def collect_command(
    revision: str, repository: Path, config_path: Path | None, store_location: str | None, since: str | None,
    max_count: int | None, first_parent: bool, jobs: int, retry_failed: bool, scheduler: str | None, reuse: bool,
    cache: bool, list_failures: bool, calibrate_first: bool, output_format: str,
) -> None:
    """Build the commits of REVISION (a commit, branch or A..B range; default HEAD and
    its ancestors) and store each binary's functions.

    Each commit is built with [build].command in its own clean git worktree. A
    failed build is recorded with its log tail and collection goes on. Interrupted
    runs resume: commits already stored are not built again.

    Warm-up runs: a benchmark without `warmup` in selector.toml gets none when its
    metric is callgrind instructions (a warm-up cannot change an exact count) and one
    otherwise. Reuse needs `selector calibrate` to have shown the metric exact; a
    benchmark whose command reads checkout files its text does not name should set
    `reuse = false`. The summary says how many commits reused runs, how many builds
    hit the cache, and where the time went.
    """
    require("selector collect", "collect")
    if scheduler:
        require("selector collect --scheduler", "dask")
    from perf_selector.collectors.repository import Repository
    from perf_selector.selector.collection.calibrate import needs_calibration
    from perf_selector.selector.collection.collect import connect_scheduler
    from perf_selector.selector.collection.collect_report import (
        report_collection,
        run_collection,
        undecidable_labels,
    )
    from perf_selector.selector.config import has_benchmarks, require_suite

    if list_failures:
        from perf_selector.selector.collection.collect_report import report_failures

        report_failures(open_project(repository, config_path, store_location)[2], output_format)
        return
    top, config, store = open_project(repository, config_path, store_location, writes=True)
    commits = Repository.open(top).commits(revision, since=since, max_count=max_count, first_parent=first_parent)
    if not commits:
        raise UserError(f"no commits in {revision!r}" + (f" since {since}" if since else ""))
    if scheduler:
        connect_scheduler(scheduler).close()  # fail before the progress bar starts
    if has_benchmarks(config):
        require_suite(config)  # and so here too
    calibration_failed = None
    if calibrate_first and needs_calibration(config, store):
        calibration_failed = _calibrate_before_collecting(top, config, store, commits[0].sha)
    for warning in undecidable_labels(config, store):
        stderr.print(f"[yellow]note:[/] {warning}")
    summary = run_collection(top, config, store, commits, jobs, retry_failed, scheduler, reuse, cache)
    report_collection(summary, store, output_format)
    if calibration_failed is not None and calibration_failed.sha not in {o.sha for o in summary.failures}:
        click.echo(str(calibration_failed), err=True)  # not built again (stored): its output, said here



def _calibrate_before_collecting(top: Path, config, store, oldest: str):
    """A first collection's calibration, said before it starts; if it fails, collection goes on
    and says why its labels may stay undecided (a failed build: returned, for its output)."""
    from perf_selector.collectors.builds import BuildFailed
    from perf_selector.selector.collection.calibrate import FIRST_ROUNDS, calibrate

    stderr.print(f"the store has no calibration: calibrating on {oldest[:12]} first ({FIRST_ROUNDS} rounds), so that "
                 "labels can be decided and runs of identical binaries reused (--no-calibrate skips it)")
    try:
        with stderr.status("calibrating") as status:
            calibrate(top, config, store, oldest, FIRST_ROUNDS,
                      on_round=lambda name, done: status.update(f"calibrating {name}: round {done}/{FIRST_ROUNDS}"))
    except BuildFailed as error:  # its output is shown once, with the collection's failures
        stderr.print(f"[yellow]calibration failed[/]: the build of {error.sha[:12]} failed ({error.reason}); collecting "
                     "without it: instruction counts are not known exact, so their labels may stay undecided until "
                     "`selector calibrate` runs", highlight=False)
        return error
    except UserError as error:
        stderr.print(f"[yellow]calibration failed[/] ({error}); collecting without it: instruction counts are not known "
                     "exact, so their labels may stay undecided until `selector calibrate` runs")
    return None
