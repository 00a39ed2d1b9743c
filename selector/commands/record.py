"""`selector record`: a commit stored as the next known version, its measurements run or imported."""

from __future__ import annotations

from pathlib import Path

import click

from perf_selector.collectors.frameworks import RESULTS_FORMATS
from perf_selector.selector.commands.common import (
    format_option,
    open_project,
    repository_options,
)
from perf_selector.selector.extras import require
from perf_selector.selector.tables import print_json, print_rows, stderr, stdout


@click.command("record")
@click.argument("revision", default="HEAD")
@repository_options
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
    from perf_selector.selector.collection.record import record

    top, config, store = open_project(repository, config_path, store_location, writes=True)
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
