"""The ``selector`` command line.

Commands import what they need when they run: the module itself loads only click,
rich and small modules of ours, so `selector select`, which runs on every push,
can start the compiled core on the binary before pyarrow and numpy are even
imported (and `selector --help` answers at once).  It never imports pandas
(:mod:`selector.arrow_without_pandas`).
"""

from __future__ import annotations

import gc
import os
import sys
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING

import click

from collectors.errors import UserError
from collectors.frameworks import RESULTS_FORMATS
from collectors.metrics import INSTRUCTIONS
from models.names import MODEL_NAMES
from selector.extras import require
from selector.tables import (FORMATS, LogProgress, caution_few_positives, logging_progress, print_json, print_rows,
                             print_table, records, stderr, stdout)

if TYPE_CHECKING:
    from selector.config import Config
    from storage.store import Store

from selector.commands.common import DEFAULT_STORE, default_store  # noqa: E402,F401 - the commands' store
# Without the compiled core, large binaries are fingerprinted in forked workers (1.6x on
# libpython with 2 cores); the compiled core ignores it.
ANALYSIS_JOBS = os.cpu_count() or 1


class _Group(click.Group):
    """Turns a UserError into one line on stderr and exit status 2, never a traceback."""

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except UserError as error:
            click.echo(f"selector: error: {error}", err=True)
            # A store read that failed half way can leave Arrow's reader threads running: tearing
            # the interpreter down then aborted once in the tests ("terminate called without an
            # active exception", exit -6 instead of 2).  The error is said; nothing is left to do.
            _exit_without_teardown()
            ctx.exit(error.exit_status)
        except ModuleNotFoundError as error:
            from selector.extras import missing_extra_error

            missing = missing_extra_error(error, f"selector {ctx.invoked_subcommand}")
            if missing is None:
                raise
            click.echo(f"selector: error: {missing}", err=True)
            ctx.exit(missing.exit_status)
        except KeyboardInterrupt:
            click.echo("selector: interrupted; what was stored is kept, run the same command again to resume", err=True)
            ctx.exit(130)


format_option = click.option(
    "--format", "output_format", type=click.Choice(FORMATS), default="text", show_default=True,
    help="text for people, json for scripts (JSON alone on stdout).",
)


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(package_name="perf-selector", prog_name="selector")
def cli() -> None:
    """Predict which benchmarks a commit changes, so only those run.

    Start with `selector demo`; on your project, `selector init` writes a
    selector.toml, `selector doctor` says what is missing, then `selector calibrate`
    and `selector collect`. `selector functions` and `selector diff` show what the
    static analysis sees in any x86-64 ELF binary.
    """


# ------------------------------------------------------------------ functions
@cli.command()
@click.argument("binary", type=click.Path(path_type=Path))
@click.option("--sort", type=click.Choice(["name", "address", "size", INSTRUCTIONS.name]), default="address", show_default=True)
@click.option("--limit", type=click.IntRange(min=1), help="Print only the first N rows.")
@format_option
def functions(binary: Path, sort: str, limit: int | None, output_format: str) -> None:
    """List the functions of an x86-64 ELF BINARY: address, size, static instruction
    count and the shift-invariant fingerprint that `diff` compares.

    Compiler clones and split parts (foo.constprop.0, foo.cold) are folded into
    their parent function, and a C++ constructor's or destructor's variants into
    one; PARTS says what each part is.  C++ names are demangled, and shortened to
    fit the terminal; --format json has them whole ("demangled"), with the mangled
    symbol each function is keyed by ("name").
    """
    from collectors.static_analysis import analyse_binary
    from selector.function_names import readable

    analysis = analyse_binary(binary, jobs=ANALYSIS_JOBS)
    _print_notes(analysis.notes)
    records = analysis.function_records()  # by key
    if sort == "name":
        records.sort(key=lambda row: readable(row["name"]))
    else:
        records.sort(key=lambda row: row[sort], reverse=sort != "address")  # stable
    shown = records[:limit] if limit else records
    if output_format == "json":
        print_json([{**row, "demangled": readable(row["name"])} for row in shown])
        return
    _print_functions(shown, records, title=f"{binary}: {len(records)} functions")


def _print_functions(shown: list[dict], every: list[dict], title: str) -> None:
    """The text table of `functions`: names and parts readable, cut to the terminal's width;
    a body with several names says which other name it has (= ...)."""
    from collections import defaultdict

    from selector.function_names import part_labels, readable, shortened
    from selector.tables import fit_rows, terminal_width

    names_at = defaultdict(list)
    for row in every:
        names_at[row["address"]].append(row["name"])

    def parts(row: dict) -> str:
        same_code = [name for name in names_at[row["address"]] if name != row["name"]]
        labels = part_labels(row["parts"])
        return ", ".join(filter(None, [labels, *(f"= {readable(name)}" for name in same_code)]))

    rows = [{"name": readable(row["name"]), "address": f"{row['address']:#x}", "size": row["size"],
             INSTRUCTIONS.name: row[INSTRUCTIONS.name], "fingerprint": row["fingerprint"][:12], "parts": parts(row)}
            for row in shown]
    rows = fit_rows(rows, {"name": shortened, "parts": shortened}, terminal_width())
    print_rows(rows, title=title, justify={"address": "right"}, plain=True)


def _print_notes(notes: list[str]) -> None:
    for note in notes:
        stderr.print(f"note: {note}")


# ----------------------------------------------------------------------- diff
@cli.command()
@click.argument("old_binary", type=click.Path(path_type=Path))
@click.argument("new_binary", type=click.Path(path_type=Path))
@click.option("--all", "include_unchanged", is_flag=True, help="Also list unchanged functions.")
@format_option
def diff(old_binary: Path, new_binary: Path, include_unchanged: bool, output_format: str) -> None:
    """Compare two builds: new, deleted and changed functions with their static
    instruction deltas, and data objects whose contents changed.

    A function is changed only when its code changed, not when the linker moved it.
    C++ names are demangled and shortened to fit the terminal; --format json has
    them whole ("demangled") beside the mangled key ("name").
    """
    from collectors.static_analysis import AnalysisInProgress
    from collectors.static_diff import diff_functions, diff_objects
    from selector.function_names import readable

    # Both analyses at once: the compiled core releases the GIL, and there are two binaries.
    analyses = AnalysisInProgress(old_binary, jobs=ANALYSIS_JOBS), AnalysisInProgress(new_binary, jobs=ANALYSIS_JOBS)
    old, new = (analysis.result() for analysis in analyses)
    _print_notes(old.notes + new.notes)
    functions_diff = diff_functions(old.function_records(), new.function_records(), include_unchanged=include_unchanged)
    objects_diff = diff_objects(old.object_records(), new.object_records())
    counts = Counter(row["status"] for row in functions_diff)
    summary = {
        "old": str(old_binary), "new": str(new_binary),
        "functions_old": len(old.function_rows), "functions_new": len(new.function_rows),
        "new_functions": counts["new"], "deleted_functions": counts["deleted"],
        "changed_functions": counts["changed"], "changed_objects": len(objects_diff),
    }
    if output_format == "json":
        print_json({"summary": summary, "functions": [{**row, "demangled": readable(row["name"])} for row in functions_diff],
                    "objects": [{**row, "demangled": readable(row["name"])} for row in objects_diff]})
        return
    for rows, title in ((functions_diff, "functions"), (objects_diff, "data objects")):
        if rows:
            _print_diff_rows(rows, title)
    click.echo(
        f"{summary['new_functions']} new, {summary['deleted_functions']} deleted, {summary['changed_functions']} changed "
        f"of {summary['functions_new']} functions; {summary['changed_objects']} data objects changed"
    )


def _print_diff_rows(rows: list[dict], title: str) -> None:
    from selector.function_names import readable, shortened
    from selector.tables import fit_rows, terminal_width

    readable_rows = [{**row, "name": readable(row["name"])} for row in rows]
    print_rows(fit_rows(readable_rows, {"name": shortened}, terminal_width()), title=title, plain=True)


# ------------------------------------------------------------ init / doctor
@cli.command("init")
@click.option("--repo", "repository", type=click.Path(file_okay=False, path_type=Path), default=Path("."),
              show_default=True, help="The git repository to configure.")
@click.option("--yes", "-y", is_flag=True, help="Write selector.toml without showing it and asking first.")
def init_command(repository: Path, yes: bool) -> None:
    """Write a first, commented selector.toml for this repository.

    Looks at the build system (CMake, Meson, make, autotools) and the benchmarks in
    the tree (Google Benchmark sources, a db_bench-like driver, programs named like
    benchmarks), and writes a build command with debug information (-g), the
    benchmarks as a [[suite]] or [[benchmark]]s (a commented template when it finds
    none), the metric and repetitions that decide labels on this machine
    (callgrind instruction counts when valgrind is installed, else wall time with 10
    repetitions on a pinned CPU) and the paths no build reads. Guesses are marked
    CHECK. Never overwrites an existing selector.toml.
    """
    from collectors.repository import Repository
    from selector.init_config import initial_config, refuse_existing, write_new_config

    top = Repository.open(repository).top
    refuse_existing(top)
    proposal = initial_config(top)
    for line in proposal.found:
        click.echo(f"found: {line}", err=True)
    if not yes:
        click.echo(proposal.text)
        if not sys.stdin.isatty():
            click.echo("nothing written (not a terminal to ask in): `selector init --yes` writes it", err=True)
            return
        if not click.confirm(f"write {top / 'selector.toml'}?", default=True, err=True):
            click.echo("nothing written", err=True)
            return
    written = write_new_config(top, proposal.text)
    click.echo(f"wrote {written}")
    for check in proposal.checks:
        click.echo(f"check: {check}")
    click.echo("next: `selector doctor` says what this machine and the store still lack; then `selector calibrate`")


@cli.command("doctor")
@click.option("--repo", "repository", type=click.Path(file_okay=False, path_type=Path), default=Path("."),
              show_default=True, help="The git repository whose configuration is checked.")
@click.option("--config", "config_path", type=click.Path(dir_okay=False, path_type=Path),
              help="Configuration file [default: selector.toml at the repository's top].")
@click.option("--store", "store_location", help=f"Store directory or fsspec URL [default: {DEFAULT_STORE}/ in the repository].")
@click.option("--binary", type=click.Path(dir_okay=False, path_type=Path),
              help="Check this built program's symbols [default: the newest stored build].")
@format_option
def doctor_command(repository: Path, config_path: Path | None, store_location: str | None, binary: Path | None,
                   output_format: str) -> None:
    """Say what the configuration needs and whether this machine and the store have it.

    The compilers and tools the build command runs; valgrind (instruction counts,
    callgrind profiles) or perf and the kernel's perf_event_paranoid; ccache
    (recommended); the install's extras; whether the build has a symbol table and
    debug information; the benchmark inputs ([project] suite); the store: readable,
    calibrated, its labels decided, and the model `select` would use. Each failing
    line says the command that fixes it. Exit status 0 when everything needed is
    there (recommended items only warn), 1 otherwise.
    (SELECTOR_PERF_EVENT_PARANOID names another file to read than
    /proc/sys/kernel/perf_event_paranoid.)
    """
    from dataclasses import asdict

    from rich.markup import escape

    from selector.arrow_without_pandas import keep_pandas_out
    from selector.doctor import diagnose

    keep_pandas_out()  # reading the store's tables needs pyarrow, not pandas: the core install suffices
    findings = diagnose(repository, config_path, store_location, binary)
    failed = [finding for finding in findings if finding.failed]
    if output_format == "json":
        print_json({"ok": not failed, "checks": [asdict(finding) for finding in findings]})
        sys.exit(1 if failed else 0)
    styles = {"ok": "green", "FAIL": "bold red", "warn": "yellow"}
    print_rows([{"check": escape(f.check), "status": f"[{styles[f.status]}]{f.status}[/]" if f.status in styles else f.status,
                 "found": escape(f.found), "fix": escape(f.fix)} for f in findings], title="selector doctor")
    for finding in failed:
        click.echo(f"FAIL {finding.check}: {finding.found} -> {finding.fix}" if finding.fix else
                   f"FAIL {finding.check}: {finding.found}")
    click.echo(f"{len(failed)} problem{'s' * (len(failed) != 1)}" if failed else "everything needed is there")
    sys.exit(1 if failed else 0)


# -------------------------------------------------------------------- collect
def _repository_options(command):
    command = click.option("--repo", "repository", type=click.Path(file_okay=False, path_type=Path), default=Path("."),
                           show_default=True, help="The git repository to analyse.")(command)
    command = click.option("--config", "config_path", type=click.Path(dir_okay=False, path_type=Path),
                           help="Configuration file [default: selector.toml at the repository's top].")(command)
    command = click.option("--store", "store_location",
                           help=f"Store directory or fsspec URL [default: {DEFAULT_STORE}/ in the repository].")(command)
    return command


@cli.command("collect")
@click.argument("revision", default="HEAD")
@_repository_options
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
@click.option("--calibrate/--no-calibrate", "calibrate_first", default=True, show_default=True,
              help="When the store has no calibration, calibrate on the oldest commit of the range first (2 rounds): "
                   "without it no instruction count is known exact, labels stay undecided and no run is reused.")
@format_option
def collect_command(
    revision: str, repository: Path, config_path: Path | None, store_location: str | None, since: str | None,
    max_count: int | None, first_parent: bool, jobs: int, retry_failed: bool, scheduler: str | None, reuse: bool,
    cache: bool, calibrate_first: bool, output_format: str,
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
    from collectors.repository import Repository
    from selector.collect import connect_scheduler
    from selector.collect_report import report_collection, run_collection, undecidable_labels
    from selector.calibrate import needs_calibration
    from selector.config import has_benchmarks, require_suite

    top, config, store = _checkout(repository, config_path, store_location)
    commits = Repository.open(top).commits(revision, since=since, max_count=max_count, first_parent=first_parent)
    if not commits:
        raise UserError(f"no commits in {revision!r}" + (f" since {since}" if since else ""))
    if scheduler:
        connect_scheduler(scheduler).close()  # fail before the progress bar starts
    if has_benchmarks(config):
        require_suite(config)  # and so here too
    _exit_without_teardown()
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
    from collectors.builds import BuildFailed
    from selector.calibrate import FIRST_ROUNDS, calibrate

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


# ------------------------------------------------------------------ calibrate
@cli.command("calibrate")
@click.argument("revision", default="HEAD")
@_repository_options
@click.option("--rounds", type=click.IntRange(min=1), default=10, show_default=True,
              help="A/A comparisons per benchmark (one is enough when all runs are identical).")
@format_option
def calibrate_command(revision: str, repository: Path, config_path: Path | None, store_location: str | None,
                      rounds: int, output_format: str) -> None:
    """Measure one build against itself (A/A) to learn each benchmark's noise.

    Reports the coefficient of variation of each benchmark and the labeler's
    false-positive rate (A/A comparisons labelled "changed"), so `repetitions` and
    `min_effect` can be set on evidence. A metric whose runs are all identical is
    marked exact, one whose runs differ by at most a tenth of min_effect near-exact
    (its tolerance); labels of those benchmarks then use the effect alone.

    Each benchmark is also run with a larger environment and longer paths, as other
    machines and shells would run it: the largest change that makes (its layout spread:
    stack and code alignment, measurement bias) is what a label's effect must exceed.
    For noisy metrics it says how many repetitions a side can detect min_effect at alpha.
    """
    require("selector calibrate", "collect")
    import pandas as pd

    from selector.calibrate import calibrate

    top, config, store = _checkout(repository, config_path, store_location)
    _exit_without_teardown()  # it runs benchmark processes beside Arrow's thread pools (see there)
    log = LogProgress("calibrated (benchmark rounds)", None) if logging_progress() else None
    with stderr.status("calibrating") as status:
        def on_round(name: str, done: int) -> None:
            status.update(f"calibrating {name}: round {done}/{rounds}")
            if log:
                log.advance(f"{name}: round {done}/{rounds}")

        table = calibrate(top, config, store, revision, rounds, on_round=on_round)
    if output_format == "json":
        print_json(records(table.drop(columns=["measured_at"])))
        return
    shown = pd.DataFrame({
        "benchmark": table["benchmark"], "metric": table["metric"], "runs": table["runs"],
        "median": table["median"].map(lambda v: f"{v:.6g}"), "cv": table["cv"].map(lambda v: f"{v:.2%}"),
        "exact": table["exact"], "tolerance": table["tolerance"].map(lambda v: f"{v:.2g}"),
        "layout spread": table["layout_spread"].map(lambda v: f"{v:.2%}"),
        "repetitions needed": table["repetitions_needed"],
        "false positives": [f"{fp}/{r} ({rate:.0%})" for fp, r, rate in zip(table["false_positives"], table["rounds"], table["false_positive_rate"])],
        "across sessions": [f"{fp}/{max(r - 1, 0)} ({rate:.0%})" for fp, r, rate in
                            zip(table["session_false_positives"], table["rounds"], table["session_false_positive_rate"])],
        "session drift": table["session_drift"].map(lambda v: f"{v:.2%}"),
    })
    print_table(shown, title=f"A/A calibration of {table['commit'].iloc[0][:12]} (alpha {config.labels.alpha:g}, min_effect {config.labels.min_effect:g})")
    from collectors.repository import Repository

    asked = Repository.open(top).commit(revision)
    if asked is not None and table["commit"].iloc[0] != asked.sha:
        stderr.print(f"{revision} did not build: calibrated its newest stored ancestor that did, {table['commit'].iloc[0][:12]}")
    for row in table.itertuples():
        if row.layout_spread > config.labels.min_effect:
            stderr.print(f"{row.benchmark}: the run's context alone moves it by up to {row.layout_spread:.2%} "
                         f"({row.contexts}); changes within that are left undecided")
        if not row.fit:
            stderr.print(f"{row.benchmark}: {row.unfit_reason}")
    stdout.print("The stored labels were recomputed with this calibration.")
    stdout.print("Exact benchmarks are labelled by the effect alone. For the others, compare the false-positive rates "
                 "with alpha: 'across sessions' is what labels between commits will see; well above alpha means the "
                 "machine drifts: pin a CPU (\\[run] cpu), add repetitions, or raise min_effect above the CV. A pair "
                 "measured in two sessions is called changed only beyond the 'session drift'; selector confirm decides "
                 "the rest by running both binaries in one session.")


# ------------------------------------------------------------------- features
@cli.command("features")
@click.option("--repo", "repository", type=click.Path(file_okay=False, path_type=Path), default=Path("."), show_default=True,
              help="The git repository whose store is read.")
@click.option("--store", "store_location",
              help=f"The store to read (directory or fsspec URL) [default: {DEFAULT_STORE}/ in the repository].")
@click.option("--output", type=click.Path(dir_okay=False, path_type=Path), required=True,
              help="Where to write the tuple table: Parquet, or CSV when the name ends in .csv.")
@format_option
def features_command(repository: Path, store_location: str | None, output: Path, output_format: str) -> None:
    """Write one row per (new commit, old commit, benchmark) tuple with every feature
    of docs/features.md and the label, and summarize it: tuples and positives per
    benchmark, and the features that are constant (so useless) in this history.
    """
    require("selector features", "collect")
    from features.catalogue import FEATURE_NAMES
    from selector.feature_table import feature_table, summarize, write_table
    from storage.store import Store

    table = feature_table(Store(store_location or default_store(repository), create=False))
    write_table(table, output)
    per_benchmark, constant = summarize(table, FEATURE_NAMES)
    if output_format == "json":
        print_json({"output": str(output), "tuples": len(table), "benchmarks": records(per_benchmark), "constant_features": constant})
        return
    print_table(per_benchmark, title=f"{len(table)} tuples written to {output}")
    if constant:
        stdout.print(f"constant in this history ({len(constant)}): {', '.join(constant)}")


# ---------------------------------------------------------- backtest / train
def _checkout(repository: Path, config_path: Path | None, store_location: str | None) -> tuple[Path, Config, Store]:
    """(top, config, store) for commands that work in a git checkout."""
    from collectors.repository import Repository
    from selector.config import find_config, load_config
    from storage.store import Store

    top = Repository.open(repository).top
    return top, load_config(find_config(top, config_path)), Store(store_location or top / DEFAULT_STORE)


def _project(repository: Path, config_path: Path | None, store_location: str | None) -> tuple[Config, Store]:
    """(config, store) for commands that read the store: the repository need not be a git checkout."""
    from collectors.repository import Repository
    from selector.config import find_config, load_config
    from storage.store import Store

    top = repository
    try:
        top = Repository.open(repository).top
    except UserError:
        if config_path is None or store_location is None:
            raise
    # Read-only use: a missing store is an error, never made (a mistyped --store would
    # otherwise read an empty store and select everything).
    return load_config(find_config(top, config_path)), Store(store_location or top / DEFAULT_STORE, create=False)


def _resolved(repo, revision: str) -> str:
    """The full id of `revision`; an unknown one is a one-line error."""
    sha = repo.resolve(revision)
    if sha is None:
        raise UserError(f"unknown revision {revision!r}")
    return sha


def _comma_list(choices):
    def parse(ctx, param, value):
        if value is None:
            return None
        items = [item.strip() for item in value.split(",") if item.strip()]
        unknown = [item for item in items if choices is not None and item not in choices]
        if unknown:
            raise click.BadParameter(f"unknown: {', '.join(unknown)}; choose from {', '.join(choices)}")
        return items
    return parse


def _tracking_option(command):
    return click.option("--tracking-uri", metavar="URI",
                        help="MLflow tracking server or database [default: sqlite database in <store>/mlflow/].")(
        click.option("--no-tracking", is_flag=True, help="Do not log an MLflow run.")(command))



def _operating_point_option(command):
    from models.names import OPERATING_POINTS

    return click.option("--operating-point", type=click.Choice(OPERATING_POINTS), default="quantile", show_default=True,
                        help="How the threshold is placed on the training changes' out-of-fold scores: the target share "
                             "of them (quantile), or a split-conformal bound that holds for future changes if they are "
                             "like the past ones (conformal: runs everything until 19 changes are known, for 0.95).")(command)


# -------------------------------------------------------------------- confirm
@cli.command("confirm")
@_repository_options
@click.option("--benchmarks", callback=_comma_list(None), help="Comma-separated benchmarks (a suite's by their stored names, gb/BM_x) [default: all configured and stored].")
@click.option("--rounds", type=click.IntRange(min=2),
              help="Interleaved rounds a pair (each runs both binaries once) [default: calibration's repetitions_needed, "
                   "at least the configured repetitions and what lets the test reach alpha].")
@click.option("--max-rounds", type=click.IntRange(min=2), default=30, show_default=True,
              help="The most rounds the default gives a pair.")
@click.option("--all", "every_label", is_flag=True,
              help="Also confirm the decided labels of those benchmarks, not only the undecided and borderline ones "
                   "(on a machine that drifts, confident-looking labels can be drift too).")
@click.option("--commits", "revisions", callback=_comma_list(None), metavar="REV[,REV...]",
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
    from collectors.repository import Repository
    from selector.config import find_config, load_config
    from selector.confirmation_report import report_confirmation, run_confirmation
    from storage.store import Store

    repo = Repository.open(repository)
    top = repo.top
    config = load_config(find_config(top, config_path))
    store = Store(store_location or top / DEFAULT_STORE, create=False)  # a mistyped --store is an error, not an empty store
    commits = None if revisions is None else [_resolved(repo, revision) for revision in revisions]
    _exit_without_teardown()  # it runs benchmark processes and then writes the store through Arrow (see there)
    summary = run_confirmation(top, config, store, rounds, max_rounds, benchmarks, dry_run, every_label, commits)
    report_confirmation(summary, store, output_format)


# ------------------------------------------------------------------- backtest
@cli.command("backtest")
@_repository_options
@click.option("--models", callback=_comma_list(MODEL_NAMES),
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
@click.option("--benchmarks", callback=_comma_list(None), help="Comma-separated benchmarks [default: all measured].")
@click.option("--target-hit-rate", type=click.FloatRange(0, 1, min_open=True), default=0.95, show_default=True,
              help="The operating point keeps this share of training changes.")
@click.option("--search", is_flag=True, help="Grid-search hyperparameters on time-ordered folds of each training set.")
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--out", "out_dir", type=click.Path(file_okay=False, path_type=Path),
              help="Where results go [default: <store>/backtests/<time>-<method>/].")
@click.option("--report/--no-report", default=True, show_default=True, help="Write report.html beside the results.")
@_operating_point_option
@_tracking_option
@format_option
def backtest_command(repository, config_path, store_location, models, method, k, first, epoch_days, folds, scopes,
                     benchmarks, target_hit_rate, search, seed, out_dir, report, operating_point, tracking_uri, no_tracking,
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

    from models.evaluation import results_table
    from selector.store_backtest import backtest_store

    config, store = _project(repository, config_path, store_location)
    options = {"method4": {"k": k, "first": first, "epoch_days": epoch_days}, "kfold": {"folds": folds, "seed": seed},
               "method1": {"seed": seed}, "method2": {"seed": seed}, "method3": {}, "full": {}}[method]
    scope_list = ["per-benchmark", "pooled"] if scopes == "both" else [scopes]
    tracking = None if no_tracking else _tracking(store, tracking_uri)
    log = _FitsLog() if logging_progress() else None
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
                             operating_point, out_dir, report, tracking,
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


# ------------------------------------------------------------------- evaluate
def _store_and_config(context, parameter, values) -> list[tuple[Path, Path | None]]:
    pairs = []
    for value in values:
        store, _, config = value.partition("=")
        pairs.append((Path(store), Path(config) if config else None))
    return pairs


@cli.command("evaluate")
@click.argument("stores", nargs=-1, required=True, callback=_store_and_config, metavar="STORE[=CONFIG]...")
@click.option("--models", callback=_comma_list(MODEL_NAMES), help="Comma-separated models [default: all].")
@click.option("-k", "k", type=click.IntRange(min=1), default=5, show_default=True, help="Method 4: test commits per epoch.")
@click.option("--first", type=click.IntRange(min=1), help="Method 4: training commits of the first epoch [default: a fifth, at least 5].")
@click.option("--target-hit-rate", type=click.FloatRange(0, 1, min_open=True), default=0.95, show_default=True)
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--leave-one-out/--own-only", default=True, show_default=True,
              help="Also train each model on the other projects and test it on each held-out one.")
@click.option("--threshold-from", type=click.Choice(["projects", "folds"]), default="projects", show_default=True,
              help="Leave-one-project-out: place each cross-project model's operating point on its training projects' "
                   "scores, each project held out in turn, or on random folds of all their tuples.")
@click.option("--out", "out_dir", type=click.Path(file_okay=False, path_type=Path), default=Path("evaluation"),
              show_default=True, help="Where results go: evaluation.json, and per project a backtest folder with its report.")
@click.option("--report/--no-report", default=True, show_default=True, help="Write each project's report.html.")
@click.option("--markdown", "markdown_path", type=click.Path(dir_okay=False, path_type=Path),
              help="Write the tables into this Markdown file (between its 'selector evaluate' markers, keeping the prose).")
@click.option("--write-model", "model_path", type=click.Path(file_okay=False, path_type=Path),
              help="Also train the shipped-style cross-project model on every project given and write its bundle here.")
@click.option("--model", "shipped_model", type=click.Choice(MODEL_NAMES), default="perphecy", show_default=True,
              help="The model --write-model trains (Perphecy's predictor carried over best to unseen projects on the "
                   "corpus: docs/evaluation.md).")
@click.option("--shipped", "day_one", is_flag=True,
              help="Day one instead: the shipped cross-project model (or --bundle), untrained on the projects, decides "
                   "every labelled pair of each store with select's own decision code, beside the rules that need no "
                   "learning (executed-changed, reached-changed). Any store, a project outside the corpus included.")
@click.option("--replay", is_flag=True,
              help="Replay instead: walk each store's history as a team using select from its first commit, skipped "
                   "runs really skipped (the next comparison is against the last run), per policy (always, "
                   "executed-changed, the shipped model, the project's own): share of runs and benchmark time, and "
                   "each change caught at its commit, later (how many commits) or never (docs/evaluation.md).")
@click.option("--bundle", "bundle_path", type=click.Path(file_okay=False, exists=True, path_type=Path),
              help="With --shipped or --replay: this model bundle instead of the shipped one.")
@click.option("--held-out", is_flag=True,
              help="With --shipped: decide each project with a bundle trained as the shipped one (its model and settings) "
                   "on the other stores given only: honest day-one figures for the projects the shipped model learnt from.")
@_operating_point_option
@format_option
def evaluate_command(stores, models, k, first, target_hit_rate, seed, leave_one_out, threshold_from, out_dir, report,
                     markdown_path, model_path, shipped_model, day_one, replay, bundle_path, held_out, operating_point,
                     output_format):
    """Method 4 on one or several projects' stores, and leave-one-project-out across them.

    Each STORE is a project's store, with its selector.toml beside it (as .selector/ and
    selector.toml sit in a repository) or named as STORE=CONFIG. Each project's own
    figures are those `selector backtest` gives; leave-one-project-out trains every model
    on the other projects alone (the benchmark not an input) and tests it on the held-out
    project's Method 4 test tuples. Prints, per project and pooled: tuples, positives,
    AUROC, realized hit and dismiss rates, time saved.
    """
    require("selector evaluate", "train")
    if day_one:
        _evaluate_day_one(stores, bundle_path, held_out, out_dir, markdown_path, output_format)
        return
    if replay:
        if held_out:
            raise click.UsageError("--held-out goes with --shipped")
        from selector.replay import replay_document, summary_frame, unseen_frame

        with stderr.status("replaying the history"):
            document = replay_document(stores, bundle_path)
        if output_format == "json":
            print_json(document)
            return
        print_table(summary_frame(document).round(3), title="replay: select from day one, skipped runs really skipped")
        unseen = unseen_frame(document)
        if len(unseen):
            print_table(unseen, title="changes not caught at their commit")
        return
    if bundle_path or held_out:
        raise click.UsageError("--bundle and --held-out go with --shipped")
    if report:
        require("selector evaluate's reports", "report", otherwise="pass --no-report")
    from models.backtest import count_fits
    from selector.project_evaluation import SCOPES, evaluate, load_projects, save_evaluation, write_markdown

    models = models or list(MODEL_NAMES)
    options = {"k": k, "first": first, "epoch_days": None}
    with stderr.status("building tuples and features") as status:
        projects = load_projects(stores, options, on_project=lambda name: status.update(f"building tuples and features: {name}"))
    from rich.progress import Progress

    own = sum(count_fits(p.data.plan, p.data.table, models, SCOPES) for p in projects)
    crossed = len(projects) * len(models) if leave_one_out and len(projects) > 1 else 0
    log = _FitsLog() if logging_progress() else None
    if log:
        log.start(own + crossed)
    with Progress(console=stderr.console, transient=True) as progress:
        task = progress.add_task("fitting models", total=own + crossed)

        def fitted(n: int) -> None:
            progress.advance(task, n)
            if log:
                log.advance(n)

        evaluation = evaluate(projects, models, target_hit_rate, seed, leave_one_out, progress=fitted,
                              threshold_by_project=threshold_from == "projects", operating_point=operating_point)
    document = save_evaluation(out_dir, evaluation)
    if report:
        from selector.report import write_report

        with stderr.status("drawing the reports"):
            for project in projects:
                write_report(out_dir / project.name)
    if markdown_path:
        write_markdown(markdown_path, document)
    if model_path:
        from selector.project_evaluation import train_cross_project_bundle

        with stderr.status(f"training the cross-project {shipped_model} on {len(projects)} projects"):
            shipped = train_cross_project_bundle(projects, model_path, shipped_model, target_hit_rate, seed, operating_point,
                                                 threshold_from == "projects")
        document["model"] = {"bundle": str(model_path), **shipped.trained_on}
    if output_format == "json":
        print_json({"directory": str(out_dir), **document})
        return
    import pandas as pd

    shown = pd.DataFrame(document["results"]).drop(columns=["missed"]).round(3)  # save_evaluation's table
    for scope, part in shown.groupby("scope", sort=False):
        print_table(part.drop(columns=["scope"]), title=f"{scope}: per project, at the operating point for hit rate {target_hit_rate:g}")
    caution_few_positives(document["results"], lambda row: str(row["project"]))
    for note in document["notes"]:
        stderr.print(f"note: {note}")
    stdout.print(f"results in {out_dir}" + (f"; tables written into {markdown_path}" if markdown_path else "")
                 + (f"; cross-project model in {model_path}" if model_path else ""))


def _evaluate_day_one(stores, bundle_path: Path | None, held_out: bool, out_dir: Path, markdown_path: Path | None,
                      output_format: str) -> None:
    """`evaluate --shipped`: the bundle's day-one decisions on every labelled pair of each store."""
    import json

    import pandas as pd

    from models.bundle import BundleError, load_bundle
    from selector.day_one import day_one_document, day_one_predictions, day_one_table, held_out_bundle, write_markdown
    from selector.project_evaluation import Project, open_project
    from selector.shipped_model import shipped_bundle_path
    from selector.store_backtest import evaluation_data

    bundle_path = bundle_path or shipped_bundle_path()
    if bundle_path is None:
        raise UserError("this install carries no shipped model; give one with --bundle")
    try:
        bundle = load_bundle(bundle_path, portable=True)
    except BundleError as error:
        raise UserError(f"{bundle_path}: {error}") from None
    projects, frames = [], []
    with stderr.status("building every labelled pair's features") as status:
        for store_path, config_path in stores:
            name, store, config = open_project(store_path, config_path)
            status.update(f"building every labelled pair's features: {name}")
            # every closest-ancestor pair: k-fold's tuples (its folds are not used)
            projects.append(Project(name, store, config, evaluation_data(store, config, "kfold", {"folds": 2})))
    if held_out and len(projects) < 2:
        raise UserError("--held-out trains on the other stores given: give at least two")
    with stderr.status("deciding") as status:
        for project in projects:
            deciding = bundle
            if held_out:
                status.update(f"training without {project.name}")
                deciding = held_out_bundle(projects, project, bundle, out_dir / "held-out" / project.name)
            frames.append(day_one_predictions(project, deciding))
    predictions = pd.concat(frames, ignore_index=True)
    document = day_one_document(predictions, bundle, projects, held_out)
    out_dir.mkdir(parents=True, exist_ok=True)
    predictions.to_parquet(out_dir / "day-one.parquet", index=False)
    (out_dir / "day-one.json").write_text(json.dumps(document, indent=2))
    if markdown_path:
        write_markdown(markdown_path, document)
    if output_format == "json":
        print_json({"directory": str(out_dir), **document})
        return
    table = day_one_table(predictions)
    print_table(table.round(3), title="day one: every labelled pair, no training on the project")
    caution_few_positives(records(table), lambda row: str(row["project"]))
    missed = pd.DataFrame(document["missed"])
    if len(missed):
        print_table(missed.assign(new=missed["new"].str[:10], old=missed["old"].str[:10]).round(4),
                    title="changes the shipped model would have skipped")
    stdout.print(f"results in {out_dir}" + (f"; tables written into {markdown_path}" if markdown_path else ""))


def _local_root(store: Store, option: str) -> str:
    if store.location != store.root:
        raise UserError(f"the store is not a local directory; give {option}")
    return store.root


def _tracking(store: Store, tracking_uri: str | None) -> tuple[str, Path | None]:
    """--tracking-uri as given (the server decides where artifacts go), else the store's own database."""
    from models.tracking import default_tracking

    if tracking_uri:
        return tracking_uri, None
    return default_tracking(Path(_local_root(store, "--tracking-uri")))


@cli.command("train")
@_repository_options
@click.option("--model", type=click.Choice(MODEL_NAMES),
              default="xgboost", show_default=True, help="Which model selects (compare them with `selector backtest`).")
@click.option("--scope", type=click.Choice(["per-benchmark", "pooled"]), default="pooled", show_default=True)
@click.option("--benchmarks", callback=_comma_list(None), help="Comma-separated benchmarks [default: all measured].")
@click.option("--target-hit-rate", type=click.FloatRange(0, 1, min_open=True), default=0.95, show_default=True)
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--bundle", "bundle_path", type=click.Path(file_okay=False, path_type=Path),
              help="Where the model bundle goes [default: <store>/models, where `selector select` looks].")
@click.option("--if-ready", is_flag=True,
              help="When the history is too short to learn from yet, say so and exit 0 (CI, recording from nothing).")
@_operating_point_option
@_tracking_option
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
    from selector.training import NothingToLearnYet, default_bundle_path, train_bundle

    config, store = _project(repository, config_path, store_location)
    bundle_path = bundle_path or default_bundle_path(store)
    try:
        with stderr.status(f"training {model} (and, once it has learnt from enough changes, backtesting it against the "
                           "executed-changed rule)"):
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
        from selector.store_backtest import track_training

        run_id = track_training(bundle_path, bundle, *_tracking(store, tracking_uri))
    if output_format == "json":
        print_json({"bundle": str(bundle_path), "mlflow_run": run_id, "trained_on": bundle.trained_on,
                    "settings": bundle.settings, "models": records(summary)})
        return
    print_table(summary, title=f"{model} ({scope}) trained on {bundle.trained_on['tuples']} tuples")
    _say_what_decides(summary)
    if "evidence" in bundle.settings or bundle.settings.get("policy_reason"):
        stderr.print(f"note: {_policy_words(bundle.settings.get('policy'))}: {bundle.settings.get('policy_reason', '')}",
                     markup=False, highlight=False)
    if bundle.settings.get("shipped_threshold") is not None:
        stderr.print(f"note: the shipped model's operating point, adapted to this project's labelled changes, is "
                     f"{bundle.settings['shipped_threshold']:.4g}; select uses it while the shipped model decides")
    stdout.print(f"bundle in {bundle_path}" + (f"; MLflow run {run_id}" if run_id else ""))


def _policy_words(policy: str | None) -> str:
    from models.names import STEPPING_ASIDE_RULE, WITHIN_RULE

    return {STEPPING_ASIDE_RULE: "select lets the executed-changed rule decide instead of this model",
            WITHIN_RULE: "select lets this model decide only among what the executed-changed rule runs"}.get(
        policy, "select follows this model")


def _say_what_decides(summary) -> None:
    """After training: which benchmarks the new bundle decides, and for which the shipped model
    keeps deciding (its own model learnt from too few changes)."""
    from selector.shipped_model import OWN_POSITIVES_NEEDED, shipped_bundle_path

    thin = summary[summary["positives"] < OWN_POSITIVES_NEEDED]
    if thin.empty or shipped_bundle_path() is None:
        return
    names = ", ".join(map(str, thin["benchmark"].head(5))) + (f" and {len(thin) - 5} more" if len(thin) > 5 else "")
    stderr.print(f"note: select keeps using the shipped cross-project model for {names}: "
                 f"{'its model' if len(thin) == 1 else 'their models'} learnt from fewer than {OWN_POSITIVES_NEEDED} "
                 f"changes ({', '.join(map(str, sorted(set(thin['positives']))))}); train again once the store holds more")


@cli.command("report")
@click.argument("backtest_dir", required=False, type=click.Path(file_okay=False, path_type=Path))
@click.option("--store", "store_location", help="Use the newest backtest of this store when BACKTEST_DIR is not given.")
@click.option("--output", type=click.Path(dir_okay=False, path_type=Path), help="[default: report.html in the backtest folder]")
def report_command(backtest_dir: Path | None, store_location: str | None, output: Path | None) -> None:
    """Write the self-contained HTML report of a backtest: ROC curves per benchmark and
    model, the AUROC table, AUROC per epoch, the hit/dismiss trade-off and feature
    importances.
    """
    require("selector report", "collect", "report")
    from selector.report import write_report
    from storage.store import Store

    if backtest_dir is None:
        store = Store(store_location or default_store(Path(".")), create=False)
        runs = sorted((Path(_local_root(store, "BACKTEST_DIR")) / "backtests").glob("*/results.json"))
        if not runs:
            raise UserError(f"no backtest in {store.location}; run `selector backtest` first")
        backtest_dir = runs[-1].parent
    if not (backtest_dir / "results.json").is_file():
        raise UserError(f"{backtest_dir}: not a backtest folder (no results.json)")
    with stderr.status("drawing the report"):
        written = write_report(backtest_dir, output)
    stdout.print(f"report written to {written}")


class _FitsLog:
    """Model fits counted in a log (backtest, evaluate), once their number is known."""

    def __init__(self) -> None:
        self.progress: LogProgress | None = None

    def start(self, total: int) -> None:
        self.progress = LogProgress("models fitted", total)

    def advance(self, steps: int) -> None:
        if self.progress:
            self.progress.advance(steps=steps)


# --------------------------------------------------------------------- select
def _select_and_print(repository, config_path, store_location, revision, binary, against, bundle_path, strict,
                      output_format, run_benchmarks: bool = False, filter_suite: str | None = None) -> int:
    """Select and print; returns the exit status.  Without `strict`, an internal failure selects everything."""
    analysis = None
    if binary is not None:
        # First of all: the compiled core analyses the binary on the other core while the
        # imports below (pyarrow, numpy, onnxruntime) take their time on this one.
        from collectors.static_analysis import AnalysisInProgress

        analysis = AnalysisInProgress(binary)
    from selector.arrow_without_pandas import keep_pandas_out

    keep_pandas_out()  # selecting needs pyarrow, not pandas (whose import alone is a third of a selection)
    from selector.selection import BUNDLE_REFUSED, SelectionFailed, select_failing_open
    from selector.selection_output import EXIT_INTERNAL, exit_status, print_filter, print_selection

    config, store = _project(repository, config_path, store_location)
    try:
        selection = select_failing_open(Path(repository), config, store, revision, binary, against, bundle_path, analysis,
                                        strict)
    except SelectionFailed as error:
        click.echo(f"selector: internal error: {error}", err=True)
        return EXIT_INTERNAL
    refused = [note for note in selection.notes if note.startswith(BUNDLE_REFUSED)]
    if filter_suite is not None:
        print_filter(selection, filter_suite)
        return EXIT_INTERNAL if strict and refused else exit_status(selection)
    verifying = run_benchmarks and selection.run and not (strict and refused)
    if output_format == "json" and verifying:  # one JSON document: the comparison goes inside it
        print_selection(selection, output_format, records(_compare(repository, config, store, selection)))
        return exit_status(selection)
    print_selection(selection, output_format)
    if strict and refused:
        # Strict: a selection the tool cannot vouch for fails, a tampered or damaged model included.
        click.echo(f"selector: {refused[0]}", err=True)
        return EXIT_INTERNAL
    if verifying:
        compared = _compare(repository, config, store, selection)
        if len(compared):
            print_table(compared, title="the selected benchmarks against the ancestor (label statistics)")
            regressions = compared[compared["regression"] == True]  # noqa: E712
            if len(regressions):
                stdout.print(f"[bold red]regression[/]: {', '.join(regressions['benchmark'])}")
    return exit_status(selection)


def _compare(repository, config, store, selection):
    """`--run-benchmarks`: the selected benchmarks run on the commit, against the ancestor."""
    from selector.verify import verify

    with stderr.status("running the selected benchmarks"):
        return verify(Path(repository), config, store, selection)


@cli.command("select")
@click.argument("revision", default="HEAD")
@_repository_options
@click.option("--binary", type=click.Path(dir_okay=False, path_type=Path),
              help="The commit's built binary [default: the stored one, else built in a clean worktree].")
@click.option("--against", metavar="COMMIT", help="Compare with this profiled commit instead of the closest one.")
@click.option("--bundle", "bundle_path", type=click.Path(file_okay=False, path_type=Path),
              help="Model bundle [default: <store>/models, written by selector train].")
@click.option("--strict", is_flag=True, help="Exit 3 on an internal error or a refused (tampered, damaged) model bundle "
                                            "instead of selecting every benchmark.")
@click.option("--run-benchmarks", is_flag=True,
              help="Then run the selected benchmarks and compare them with the ancestor (the labels' statistics).")
@click.option("--format", "output_format", type=click.Choice(["text", "json", "github", "gitlab"]), default="text",
              show_default=True,
              help="text for people; json (docs/select.schema.json); github writes run/matrix/any (and a [[suite]]'s "
                   "filters) to $GITHUB_OUTPUT; gitlab prints a dotenv report: SELECTOR_ANY, SELECTOR_RUN, "
                   "SELECTOR_FILTER_<SUITE>.")
@click.option("--filter", "print_filter", is_flag=True,
              help="Print only the regex of a suite's selected benchmarks, for Google Benchmark's --benchmark_filter: "
                   "`$(selector select --filter)`.")
@click.option("--suite", metavar="NAME", help="The [[suite]] --filter is for [default: the only one].")
def select_command(revision, repository, config_path, store_location, binary, against, bundle_path, strict, run_benchmarks,
                   output_format, print_filter, suite):
    """Say which benchmarks REVISION (default HEAD) needs, and why.

    Each benchmark is compared with its closest ancestor that has stored
    measurements and a profile. When in doubt it runs: no ancestor, no model, a
    stale model, a changed harness or build configuration. Exit status: 0 some
    benchmark should run, 1 none needs to, 2 bad input, 3 internal error (--strict).
    """
    _on_the_push_path()
    if run_benchmarks:
        require("selector select --run-benchmarks", "collect")
    if print_filter and (run_benchmarks or output_format != "text"):
        raise UserError("--filter prints one regex: it goes with neither --format nor --run-benchmarks")
    if output_format == "gitlab" and run_benchmarks:
        raise UserError("--format gitlab prints a dotenv report alone on stdout: it goes without --run-benchmarks")
    if suite and not print_filter:
        raise UserError("--suite names the suite of --filter; add --filter")
    filter_suite = (suite or "") if print_filter else None
    sys.exit(_select_and_print(repository, config_path, store_location, revision, binary, against, bundle_path, strict,
                               output_format, run_benchmarks, filter_suite))


# ----------------------------------------------------------------------- hook
@cli.group("hook")
def hook_group() -> None:
    """git pre-push hook: install, uninstall, and what it runs."""


@hook_group.command("install")
@click.option("--repo", "repository", type=click.Path(file_okay=False, path_type=Path), default=Path("."), show_default=True)
@click.option("--strict", is_flag=True, help="Let the hook block a push when selector itself fails or refuses the model bundle (tampered, damaged).")
@click.option("--run-benchmarks", is_flag=True, help="Also run the selected benchmarks and report changes against the ancestor.")
@click.option("--store", "store_location", help="Store the hook reads [default: .selector/ in the repository].")
def hook_install(repository: Path, strict: bool, run_benchmarks: bool, store_location: str | None) -> None:
    """Install the pre-push hook (an existing hook is kept and runs first), and have git
    ignore the store (.gitignore)."""
    if run_benchmarks:
        require("the hook's --run-benchmarks", "collect")
    from collectors.repository import Repository
    from selector.gitignore import ignore_store
    from selector.hook import install

    opened = Repository.open(repository)
    hook, kept = install(opened, strict, run_benchmarks, store_location)
    stdout.print(f"installed {hook}" + (" (the previous hook runs first)" if kept else ""))
    stdout.print(ignore_store(opened, store_location or opened.top / DEFAULT_STORE), markup=False, highlight=False)


@hook_group.command("uninstall")
@click.option("--repo", "repository", type=click.Path(file_okay=False, path_type=Path), default=Path("."), show_default=True)
def hook_uninstall(repository: Path) -> None:
    """Remove the pre-push hook and restore the one it replaced."""
    from collectors.repository import Repository
    from selector.hook import uninstall

    hook, restored = uninstall(Repository.open(repository))
    stdout.print(f"removed {hook}" + ("; the previous hook is back" if restored else ""))


@hook_group.command("run", context_settings={"ignore_unknown_options": True})
@click.option("--strict", is_flag=True)
@click.option("--run-benchmarks", is_flag=True)
@click.option("--store", "store_location")
@click.argument("git_arguments", nargs=-1, type=click.UNPROCESSED)
def hook_run(strict: bool, run_benchmarks: bool, store_location: str | None, git_arguments) -> None:
    """What the installed hook (or pre-commit at the pre-push stage) runs; reads git's
    pre-push lines on stdin. Advisory: exits 0 unless --strict and selector failed."""
    from selector.hook import pushed_commits

    _on_the_push_path()
    lines = [] if sys.stdin.isatty() else sys.stdin.read().splitlines()
    commits = pushed_commits(lines, dict(os.environ))
    failed = False
    for commit in commits:
        try:
            failed |= _hook_select(commit, store_location, strict, run_benchmarks) == 3
        except Exception as error:  # noqa: BLE001 - advisory: report, never block unless strict
            click.echo(f"selector: {_hook_advice(error)}", err=True)
            failed = True
    sys.exit(1 if strict and failed else 0)


def _hook_select(commit: str, store_location: str | None, strict: bool, run_benchmarks: bool) -> int:
    """Select for one pushed commit, with the working tree's build when it is the commit's; one
    that cannot be analysed (stripped, say) is set aside for a build in a clean worktree."""
    from collectors.errors import BinaryError

    binary = _working_tree_binary(commit)
    try:
        return _select_and_print(Path("."), None, store_location, commit, binary, None, None, strict, "text", run_benchmarks)
    except BinaryError as error:
        if binary is None:
            raise
        stderr.print(f"note: not using the working tree's build: {error}", markup=False, highlight=False)
    return _select_and_print(Path("."), None, store_location, commit, None, None, None, strict, "text", run_benchmarks)


def _working_tree_binary(revision: str) -> Path | None:
    """The developer's build of `revision` when the working tree holds it (saying so, or why not)."""
    from collectors.repository import Repository
    from selector.config import find_config, load_config
    from selector.working_tree_build import working_tree_build

    repository = Repository.open(Path("."))
    sha = repository.resolve(revision)
    if sha is None:
        return None  # select says what is wrong with it
    found = working_tree_build(repository, sha, load_config(find_config(repository.top, None)).project.binary)
    stderr.print(f"note: {found.note}", markup=False, highlight=False)
    return found.binary


def _hook_advice(error: Exception) -> str:
    """The hook's message for a failure: a failed build gets advice a hook user can act on."""
    from selector.hook import build_failure_advice
    from selector.selection import BuildFailed

    if isinstance(error, BuildFailed):
        return build_failure_advice(error.sha, error.reason, error.command, error.log_tail)
    return str(error)


# --------------------------------------------------------------------- record
@cli.command("record")
@click.argument("revision", default="HEAD")
@_repository_options
@click.option("--import", "results", type=click.Path(dir_okay=False, path_type=Path), multiple=True,
              help="Take the measurements from this results file instead of running the benchmarks (repeatable).")
@click.option("--import-format", type=click.Choice(["pyperf", *RESULTS_FORMATS, "asv"]),
              help="Format of --import [default: recognised from the file].")
@click.option("--suite", "suite_name", metavar="NAME",
              help="The [[suite]] imported Google Benchmark results are of: BM_x/8 is stored as NAME/BM_x/8 "
                   "[default: the only suite of a framework that writes results files].")
@click.option("--force", is_flag=True, help="Measure a commit that is already recorded again.")
@format_option
def record_command(revision, repository, config_path, store_location, results, import_format, suite_name, force,
                   output_format):
    """Store REVISION's build, analysis, measurements and profiles: it becomes the next
    known version that `select` compares with, and `train` learns from it.

    Run it in CI after the benchmarks ran, with --import for results your harness
    wrote (pyperf, Google Benchmark or asv JSON), or without to run the configured
    benchmarks now. A Google Benchmark file's results are a [[suite]]'s when the suite
    measures real_time, cpu_time or a counter (a suite counting instructions runs here).
    """
    require("selector record", "collect")
    from selector.record import record

    top, config, store = _checkout(repository, config_path, store_location)
    _exit_without_teardown()  # it runs benchmark processes beside Arrow's thread pools (see there)
    with stderr.status(f"recording {revision}"):
        result = record(top, config, store, revision, list(results), import_format, force, suite_name)
    labels = result.labels.per_benchmark
    if output_format == "json":
        print_json({"commit": result.outcome.sha, "imported_rows": result.imported, "profiled": result.outcome.profiled,
                    "labels": labels})
        return
    stdout.print(f"recorded {result.outcome.sha[:12]}" + (f" ({result.imported} imported measurements)" if result.imported else ""))
    if len(labels):
        print_rows(labels, title="labels (each commit against its closest measured ancestor)")


# --------------------------------------------------------------------- bisect
@cli.command("bisect")
@click.argument("good")
@click.argument("bad")
@click.option("--benchmark", required=True, help="The benchmark whose performance changed between GOOD and BAD.")
@_repository_options
@click.option("--bundle", "bundle_path", type=click.Path(file_okay=False, path_type=Path))
@click.option("-j", "--jobs", type=click.IntRange(min=1), default=1, show_default=True, help="Parallel builds of missing commits.")
@format_option
def bisect_command(good, bad, benchmark, repository, config_path, store_location, bundle_path, jobs, output_format):
    """Rank the commits between GOOD and BAD by the predicted probability that they
    changed BENCHMARK, and print the order in which to test them.

    Each commit is compared with its first parent, with GOOD's profile standing for
    what the benchmark runs. Commits not in the store are built first.
    """
    require("selector bisect", "collect")
    from selector.bisect import bisect

    config, store = _project(repository, config_path, store_location)
    _exit_without_teardown()
    from selector.collect_report import run_collection

    top = Path(repository)
    with stderr.status("finding the suspects") as status:
        def build(config, commits, jobs):  # bisect.BuildMissing
            status.stop()  # the collection's progress bar takes the line
            try:
                return run_collection(top, config, store, commits, jobs)
            finally:
                status.start()

        result = bisect(top, config, store, good, bad, benchmark, bundle_path, jobs, build=build,
                        on_step=lambda step: status.update(step))
    if output_format == "json":
        print_json({"benchmark": benchmark, "profile_of": result.known, "model": result.model,
                    "order": records(result.ranking)})
        return
    shown = result.ranking.assign(commit=result.ranking["commit"].str[:12],
                                  probability=result.ranking["probability"].map(lambda p: f"{p:.3f}"))
    print_table(shown, title=f"test in this order for {benchmark} ({result.model}; profile of {result.known[:12]})")


# ----------------------------------------------------------------------- demo
@cli.command()
@click.option("--out", "directory", type=click.Path(file_okay=False, path_type=Path), default=Path("selector-demo"),
              show_default=True, help="Where the sample project, its store and the results go.")
@click.option("-j", "--jobs", type=click.IntRange(min=1), default=2, show_default=True)
@format_option
def demo(directory: Path, jobs: int, output_format: str) -> None:
    """Run the whole tool on a generated sample C project: a 39-commit history with
    planted performance changes and neutral ones is collected, every model is
    backtested (HTML report, MLflow runs), the selecting model is trained and asked
    about the newest commit. Rerunning reuses what is there.
    """
    require("selector demo", "collect", "train", "tracking", "report")
    from selector.demo import run_demo

    _exit_without_teardown()
    run_demo(directory, jobs, output_format)


_fast_exit = False


def _on_the_push_path() -> None:
    """Settings for the commands a push waits for (select, and the hook that runs it).

    No cyclic garbage collection: importing pyarrow and tabulating a large binary create
    millions of objects, and the collector went over them again and again.
    The process lives about a second and reference counting frees nearly everything.

    And `main` ends the process without tearing the interpreter down: freeing the
    modules and objects of pyarrow, numpy and onnxruntime at exit takes time (more
    when pandas was among them).  These commands have nothing left to finish when they
    return: their output is printed, and the files, worktrees and threads they used are
    closed by then.
    """
    gc.disable()
    _exit_without_teardown()


def _exit_without_teardown() -> None:
    """Once the command's output is flushed, `main` exits without tearing the interpreter
    down.  The push path does so for speed (above); the commands that ran a process pool
    because a process that forked workers after Arrow's thread pools started was seen to
    abort in C++ teardown at exit ("terminate called without an active exception", 2 of
    about 8 collections of the demo with -j 2), after all its work was written: an exit
    status of 134 for a collection that succeeded.  `calibrate` and `record`, which run
    benchmark processes and then write the store through Arrow, exit this way too: a
    calibration that had printed its results aborted so once in the tests."""
    global _fast_exit
    _fast_exit = True


# Commands in modules of their own (selector/commands/)
from selector.commands.labels import labels_command  # noqa: E402

cli.add_command(labels_command)


def main() -> None:
    try:
        cli(prog_name="selector")
    except SystemExit as done:
        if _fast_exit and (done.code is None or isinstance(done.code, int)):
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(done.code or 0)
        raise


if __name__ == "__main__":
    sys.exit(main())
