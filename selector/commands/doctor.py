"""`selector doctor`: what the configuration needs and whether this machine and the store have it."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from perf_selector.selector.commands.common import format_option, repository_options
from perf_selector.selector.tables import print_json, print_rows


@click.command("doctor")
@repository_options
@click.option("--binary", type=click.Path(dir_okay=False, path_type=Path),
              help="Check this built program's symbols [default: the newest stored build].")
@format_option
def doctor_command(repository: Path, config_path: Path | None, store_location: str | None, binary: Path | None,
                   output_format: str) -> None:
    """Say what the configuration needs and whether this machine and the store have it.

    The compilers and tools the build command runs; the build target (make -n, or the
    CMake or Meson files define it); valgrind (instruction counts,
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

    from perf_selector.selector.arrow_without_pandas import keep_pandas_out
    from perf_selector.selector.onboarding.doctor import diagnose

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
