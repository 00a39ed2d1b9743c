"""`selector select`: which benchmarks a commit needs, and why (the push path: light imports)."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from perf_selector.collectors.errors import UserError
from perf_selector.selector.commands.common import on_the_push_path, open_project, repository_options
from perf_selector.selector.extras import require
from perf_selector.selector.tables import records, stderr


def select_and_print(repository, config_path, store_location, revision, binary, against, bundle_path, strict,
                      output_format, run_benchmarks: bool = False, filter_suite: str | None = None,
                      working_tree: bool = True) -> int:
    """Select and print; returns the exit status.  Without `strict`, an internal failure selects everything."""
    analysis = None
    if binary is not None:
        # First of all: the compiled core analyses the binary on the other core while the
        # imports below (pyarrow, numpy, onnxruntime) take their time on this one.
        from perf_selector.collectors.static_analysis import AnalysisInProgress

        analysis = AnalysisInProgress(binary)
    from perf_selector.selector.arrow_without_pandas import keep_pandas_out

    keep_pandas_out()  # selecting needs pyarrow, not pandas (whose import alone is a third of a selection)
    from perf_selector.selector.selection.selection import BUNDLE_REFUSED, SelectionFailed, select_failing_open
    from perf_selector.selector.selection.selection_output import (
        EXIT_INTERNAL,
        exit_status,
        print_filter,
        print_selection,
    )

    _, config, store = open_project(repository, config_path, store_location)
    try:
        selection = select_failing_open(Path(repository), config, store, revision, binary, against, bundle_path, analysis,
                                        strict, working_tree)
    except SelectionFailed as error:
        click.echo(f"selector: internal error: {error}", err=True)
        return EXIT_INTERNAL
    refused = [note for note in selection.notes if note.startswith(BUNDLE_REFUSED)]
    if filter_suite is not None:
        print_filter(selection, filter_suite)
        return EXIT_INTERNAL if strict and refused else exit_status(selection)
    verifying = run_benchmarks and selection.run and not (strict and refused)
    if output_format == "json" and verifying:  # one JSON document: the comparison goes inside it
        print_selection(selection, output_format, records(compare_with_ancestor(repository, config, store, selection)))
        return exit_status(selection)
    print_selection(selection, output_format)
    if strict and refused:
        # Strict: a selection the tool cannot vouch for fails, a tampered or damaged model included.
        click.echo(f"selector: {refused[0]}", err=True)
        return EXIT_INTERNAL
    if verifying:
        from perf_selector.selector.selection.verify import print_verification

        print_verification(compare_with_ancestor(repository, config, store, selection))
    return exit_status(selection)



def compare_with_ancestor(repository, config, store, selection):
    """`--run-benchmarks`: the selected benchmarks run on the commit, against the ancestor."""
    from perf_selector.selector.selection.verify import verify

    with stderr.status("running the selected benchmarks"):
        return verify(Path(repository), config, store, selection)



@click.command("select")
@click.argument("revision", default="HEAD")
@repository_options
@click.option("--binary", type=click.Path(dir_okay=False, path_type=Path),
              help="The commit's built binary [default: the stored one, else the working tree's when it is the "
                   "commit's, else built in a clean worktree].")
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
              help="Print only a suite's filter of its selected benchmarks, in its framework's form: Google "
                   "Benchmark's --benchmark_filter regex (`--benchmark_filter=\"$(selector select --filter)\"`), a "
                   "Catch2 test spec of their test cases.")
@click.option("--suite", metavar="NAME", help="The [[suite]] --filter is for [default: the only one].")
def select_command(revision, repository, config_path, store_location, binary, against, bundle_path, strict, run_benchmarks,
                   output_format, print_filter, suite):
    """Say which benchmarks REVISION (default HEAD) needs, and why.

    Each benchmark is compared with its closest ancestor that has stored
    measurements and a profile. When in doubt it runs: no ancestor, no model, a
    stale model, a changed harness or build configuration. Exit status: 0 some
    benchmark should run, 1 none needs to, 2 bad input, 3 internal error (--strict).
    """
    on_the_push_path()
    if run_benchmarks:
        require("selector select --run-benchmarks", "collect")
    if print_filter and (run_benchmarks or output_format != "text"):
        raise UserError("--filter prints one regex: it goes with neither --format nor --run-benchmarks")
    if output_format == "gitlab" and run_benchmarks:
        raise UserError("--format gitlab prints a dotenv report alone on stdout: it goes without --run-benchmarks")
    if suite and not print_filter:
        raise UserError("--suite names the suite of --filter; add --filter")
    filter_suite = (suite or "") if print_filter else None
    sys.exit(select_and_print(repository, config_path, store_location, revision, binary, against, bundle_path, strict,
                               output_format, run_benchmarks, filter_suite))
