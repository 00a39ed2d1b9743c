"""`selector pack`: a store's evaluation pack, what `evaluate` needs of it, small enough to commit."""

from __future__ import annotations

from pathlib import Path

import click

from perf_selector.selector.commands.common import format_option, store_and_config
from perf_selector.selector.extras import require
from perf_selector.selector.tables import print_json, stderr, stdout


@click.command("pack")
@click.argument("store", metavar="STORE[=CONFIG]")
@click.option("--out", "out_dir", type=click.Path(file_okay=False, path_type=Path), required=True,
              help="The pack's folder (replaced once the new pack is whole).")
@click.option("-k", "k", type=click.IntRange(min=1), default=5, show_default=True,
              help="Method 4: test commits per epoch, as `evaluate -k` will be given.")
@click.option("--first", type=click.IntRange(min=1),
              help="Method 4: training commits of the first epoch, as `evaluate --first` will be given.")
@format_option
def pack_command(store: str, out_dir: Path, k: int, first: int | None, output_format: str) -> None:
    """Write STORE's evaluation pack: its commits, measurements, the tables that label its
    pairs, and the labelled features of every tuple Method 4 (at -k and --first) and day one
    use: a few hundred kilobytes in place of the store's hundreds of megabytes.

    `selector evaluate PACK` and `evaluate --shipped PACK` then give the figures the store
    gives, on any machine, without the binaries or profiles; the replay needs the store.
    The configuration is the selector.toml beside STORE, or CONFIG; it is packed too.
    """
    require("selector pack", "collect")
    from perf_selector.collectors.errors import UserError
    from perf_selector.selector.evaluation.evaluation_pack import write_pack
    from perf_selector.selector.evaluation.project_evaluation import store_configuration
    from perf_selector.storage.store import Store

    store_path, config_path = store_and_config(store)
    config_path = store_configuration(store_path, config_path)
    if not store_path.is_dir():
        raise UserError(f"{store_path}: no store there")
    with stderr.status(f"building every tuple's features: {store_path}"):
        manifest = write_pack(Store(store_path, create=False), config_path, out_dir,
                              {"k": k, "first": first, "epoch_days": None})
    if output_format == "json":
        print_json({"out": str(out_dir), **manifest})
        return
    size = sum(path.stat().st_size for path in out_dir.iterdir())
    stdout.print(f"{out_dir}: {manifest['tuples']} tuples of {manifest['commits']} commits "
                 f"({manifest['labelled']} labelled, {manifest['changed']} changed), {size / 1024:.0f} KiB")
