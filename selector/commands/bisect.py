"""`selector bisect`: the commits between two, ranked by how likely each changed a benchmark."""

from __future__ import annotations

from pathlib import Path

import click

from perf_selector.selector.commands.common import format_option, open_project, repository_options
from perf_selector.selector.extras import require
from perf_selector.selector.tables import print_json, print_table, records, stderr


@click.command("bisect")
@click.argument("good")
@click.argument("bad")
@click.option("--benchmark", required=True, help="The benchmark whose performance changed between GOOD and BAD.")
@repository_options
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
    from perf_selector.selector.selection.bisect import bisect

    _, config, store = open_project(repository, config_path, store_location)
    from perf_selector.selector.collection.collect_report import run_collection

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
