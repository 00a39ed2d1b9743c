"""`selector init`: a first, commented selector.toml for a repository."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from perf_selector.selector.commands.common import repo_option


@click.command("init")
@repo_option("The git repository to configure.")
@click.option("--yes", "-y", is_flag=True, help="Write selector.toml without showing it and asking first.")
def init_command(repository: Path, yes: bool) -> None:
    """Write a first, commented selector.toml for this repository.

    Looks at the build system (CMake, Meson, make, autotools) and the benchmarks in
    the tree (Google Benchmark sources, a db_bench-like driver, programs named like
    benchmarks, scripts in a benchmark folder that the project's program runs), and writes a build command with debug information (-g), the
    benchmarks as a [[suite]] or [[benchmark]]s (a commented template when it finds
    none), the metric and repetitions that decide labels on this machine
    (callgrind instruction counts when valgrind is installed, else wall time with 10
    repetitions on a pinned CPU) and the paths no build reads. Guesses are marked
    CHECK. Never overwrites an existing selector.toml.
    """
    from perf_selector.collectors.repository import Repository
    from perf_selector.selector.onboarding.init_config import initial_config, refuse_existing, write_new_config

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
