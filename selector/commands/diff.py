"""`selector diff`: what changed between two builds, function by function."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import click

from perf_selector.selector.commands.common import ANALYSIS_JOBS, format_option, print_notes
from perf_selector.selector.tables import print_json, print_rows


@click.command()
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
    from perf_selector.collectors.static_analysis import AnalysisInProgress
    from perf_selector.collectors.static_diff import diff_functions, diff_objects
    from perf_selector.selector.selection.function_names import readable

    # Both analyses at once: the compiled core releases the GIL, and there are two binaries.
    analyses = AnalysisInProgress(old_binary, jobs=ANALYSIS_JOBS), AnalysisInProgress(new_binary, jobs=ANALYSIS_JOBS)
    old, new = (analysis.result() for analysis in analyses)
    print_notes(old.notes + new.notes)
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
    from perf_selector.selector.selection.function_names import readable, shortened
    from perf_selector.selector.tables import fit_rows, terminal_width

    readable_rows = [{**row, "name": readable(row["name"])} for row in rows]
    print_rows(fit_rows(readable_rows, {"name": shortened}, terminal_width()), title=title, plain=True)
