"""`selector features`: the tuple table with every feature and label."""

from __future__ import annotations

from pathlib import Path

import click

from perf_selector.selector.commands.common import DEFAULT_STORE, format_option, open_store, repo_option, store_option
from perf_selector.selector.extras import require
from perf_selector.selector.tables import print_json, print_table, records, stdout


@click.command("features")
@repo_option("The git repository whose store is read.")
@store_option(f"The store to read (directory or fsspec URL) [default: {DEFAULT_STORE}/ in the repository].")
@click.option("--output", type=click.Path(dir_okay=False, path_type=Path), required=True,
              help="Where to write the tuple table: Parquet, or CSV when the name ends in .csv.")
@format_option
def features_command(repository: Path, store_location: str | None, output: Path, output_format: str) -> None:
    """Write one row per (new commit, old commit, benchmark) tuple with every feature
    of docs/features.md and the label, and summarize it: tuples and positives per
    benchmark, and the features that are constant (so useless) in this history.
    """
    require("selector features", "collect")
    from perf_selector.features.catalogue import FEATURE_NAMES
    from perf_selector.selector.evaluation.feature_table import feature_table, summarize, write_table

    table = feature_table(open_store(repository, store_location))
    write_table(table, output)
    per_benchmark, constant = summarize(table, FEATURE_NAMES)
    if output_format == "json":
        print_json({"output": str(output), "tuples": len(table), "benchmarks": records(per_benchmark), "constant_features": constant})
        return
    print_table(per_benchmark, title=f"{len(table)} tuples written to {output}")
    if constant:
        stdout.print(f"constant in this history ({len(constant)}): {', '.join(constant)}")
