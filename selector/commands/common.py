"""What the commands share: their common options, the one way to open a project's
configuration and store, and how the process ends.

Light on purpose: every command module imports it, `selector select` (the push path)
among them, so it loads click and small modules of ours only.
"""

from __future__ import annotations

import gc
import os
from pathlib import Path
from typing import TYPE_CHECKING

import click

from perf_selector.collectors.errors import UserError
from perf_selector.selector.tables import FORMATS, LogProgress, stderr

if TYPE_CHECKING:
    from perf_selector.selector.config import Config
    from perf_selector.storage.store import Store

DEFAULT_STORE = ".selector"
# Without the compiled core, large binaries are fingerprinted in forked workers (1.6x on
# libpython with 2 cores); the compiled core ignores it.
ANALYSIS_JOBS = os.cpu_count() or 1


def default_store(repository: Path) -> Path:
    """Every command's store when --store is not given: .selector/ at the top of the repository
    (of the current directory's, when not inside one: ./.selector)."""
    from perf_selector.collectors.repository import Repository

    try:
        return Repository.open(repository).top / DEFAULT_STORE
    except UserError:
        return Path(repository) / DEFAULT_STORE


format_option = click.option(
    "--format", "output_format", type=click.Choice(FORMATS), default="text", show_default=True,
    help="text for people, json for scripts (JSON alone on stdout).",
)


def repo_option(help: str = "The git repository to analyse."):
    return click.option("--repo", "repository", type=click.Path(file_okay=False, path_type=Path), default=Path("."),
                        show_default=True, help=help)


def config_option(command):
    return click.option("--config", "config_path", type=click.Path(dir_okay=False, path_type=Path),
                        help="Configuration file [default: selector.toml at the repository's top].")(command)


def store_option(help: str = f"Store directory or fsspec URL [default: {DEFAULT_STORE}/ in the repository]."):
    return click.option("--store", "store_location", help=help)


def repository_options(command):
    """--repo, --config and --store: where a command finds the project (see open_project)."""
    return store_option()(config_option(repo_option()(command)))


def project_config(top: Path, config_path: Path | None) -> Config:
    """The project's configuration: --config, else selector.toml at the repository's top."""
    from perf_selector.selector.config import find_config, load_config

    return load_config(find_config(top, config_path))


def open_project(repository: Path, config_path: Path | None, store_location: str | None, *,
                 writes: bool = False) -> tuple[Path, Config, Store]:
    """(top, config, store): every command's one way to open a project.

    A command that `writes` (builds, runs, stores) works in a git checkout and makes the
    store when it is missing.  A command that only reads needs no checkout when --config
    and --store are given, and a missing store is an error, never made: a mistyped
    --store would otherwise read an empty store and select everything.
    """
    from perf_selector.collectors.repository import Repository
    from perf_selector.storage.store import Store

    top = repository
    try:
        top = Repository.open(repository).top
    except UserError:
        if writes or config_path is None or store_location is None:
            raise
    return top, project_config(top, config_path), Store(store_location or top / DEFAULT_STORE, create=writes)


def open_store(repository: Path, store_location: str | None) -> Store:
    """The store alone, read-only (commands that need no configuration)."""
    from perf_selector.storage.store import Store

    return Store(store_location or default_store(repository), create=False)


def resolved(repo, revision: str) -> str:
    """The full id of `revision`; an unknown one is a one-line error."""
    sha = repo.resolve(revision)
    if sha is None:
        raise UserError(f"unknown revision {revision!r}")
    return sha


def store_and_config(value: str) -> tuple[Path, Path | None]:
    """A STORE[=CONFIG] argument: the store (or evaluation pack) and its configuration, if named."""
    store, _, config = value.partition("=")
    return Path(store), Path(config) if config else None


def comma_list(choices):
    def parse(ctx, param, value):
        if value is None:
            return None
        items = [item.strip() for item in value.split(",") if item.strip()]
        unknown = [item for item in items if choices is not None and item not in choices]
        if unknown:
            raise click.BadParameter(f"unknown: {', '.join(unknown)}; choose from {', '.join(choices)}")
        return items
    return parse


def tracking_option(command):
    return click.option("--tracking-uri", metavar="URI",
                        help="MLflow tracking server or database [default: sqlite database in <store>/mlflow/].")(
        click.option("--no-tracking", is_flag=True, help="Do not log an MLflow run.")(command))


def operating_point_option(command):
    from perf_selector.models.names import OPERATING_POINTS

    return click.option("--operating-point", type=click.Choice(OPERATING_POINTS), default="quantile", show_default=True,
                        help="How the threshold is placed on the training changes' out-of-fold scores: the target share "
                             "of them (quantile), or a split-conformal bound that holds for future changes if they are "
                             "like the past ones (conformal: runs everything until 19 changes are known, for 0.95).")(command)


def local_root(store: Store, option: str) -> str:
    if store.location != store.root:
        raise UserError(f"the store is not a local directory; give {option}")
    return store.root


def tracking_location(store: Store, tracking_uri: str | None) -> tuple[str, Path | None]:
    """--tracking-uri as given (the server decides where artifacts go), else the store's own database."""
    from perf_selector.models.tracking import default_tracking

    if tracking_uri:
        return tracking_uri, None
    return default_tracking(Path(local_root(store, "--tracking-uri")))


class FitsLog:
    """Model fits counted in a log (backtest, evaluate), once their number is known."""

    def __init__(self) -> None:
        self.progress: LogProgress | None = None

    def start(self, total: int) -> None:
        self.progress = LogProgress("models fitted", total)

    def advance(self, steps: int) -> None:
        if self.progress:
            self.progress.advance(steps=steps)


def print_notes(notes: list[str]) -> None:
    for note in notes:
        stderr.print(f"note: {note}")


def on_the_push_path() -> None:
    """Settings for the commands a push waits for (select, and the hook that runs it).

    No cyclic garbage collection: importing pyarrow and tabulating a large binary create
    millions of objects, and the collector went over them again and again.
    The process lives about a second and reference counting frees nearly everything.
    (Every command's process ends without tearing the interpreter down: selector.cli.main.)
    """
    gc.disable()
