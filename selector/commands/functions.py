"""`selector functions`: the functions of an ELF binary as the static analysis sees them."""

from __future__ import annotations

from pathlib import Path

import click

from perf_selector.collectors.metrics import INSTRUCTIONS
from perf_selector.selector.commands.common import ANALYSIS_JOBS, format_option, print_notes
from perf_selector.selector.tables import print_json, print_rows


@click.command()
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
    from perf_selector.collectors.static_analysis import analyse_binary
    from perf_selector.selector.selection.function_names import readable

    analysis = analyse_binary(binary, jobs=ANALYSIS_JOBS)
    print_notes(analysis.notes)
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

    from perf_selector.selector.selection.function_names import part_labels, readable, shortened
    from perf_selector.selector.tables import fit_rows, terminal_width

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
