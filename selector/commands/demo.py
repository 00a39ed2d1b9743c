"""`selector demo`: the whole tool on a generated sample project."""

from __future__ import annotations

from pathlib import Path

import click

from perf_selector.selector.commands.common import format_option
from perf_selector.selector.extras import require


@click.command()
@click.option("--out", "directory", type=click.Path(file_okay=False, path_type=Path), default=Path("selector-demo"),
              show_default=True, help="Where the sample project, its store and the results go.")
@click.option("-j", "--jobs", type=click.IntRange(min=1), default=2, show_default=True)
@format_option
def demo(directory: Path, jobs: int, output_format: str) -> None:
    """Run the whole tool on a generated sample C project: a 39-commit history with
    planted performance changes and neutral ones is collected, every model is
    backtested (HTML report, MLflow runs), the selecting model is trained and asked
    about the newest commit. Rerunning reuses what is there.
    """
    require("selector demo", "collect", "train", "tracking", "report")
    from perf_selector.selector.onboarding.demo import run_demo

    run_demo(directory, jobs, output_format)
