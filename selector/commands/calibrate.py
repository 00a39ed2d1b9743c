"""`selector calibrate`: one build measured against itself, to learn each benchmark's noise."""

from __future__ import annotations

from pathlib import Path

import click

from perf_selector.selector.commands.common import format_option, open_project, repository_options
from perf_selector.selector.extras import require
from perf_selector.selector.tables import LogProgress, logging_progress, print_json, print_table, records, stderr, stdout


@click.command("calibrate")
@click.argument("revision", default="HEAD")
@repository_options
@click.option("--rounds", type=click.IntRange(min=1), default=10, show_default=True,
              help="A/A comparisons per benchmark; every one runs (see --stop-when-identical).")
@click.option("--stop-when-identical", is_flag=True,
              help="Stop a benchmark after its first round when all its runs are identical: faster, but a harness "
                   "that loops for a time can repeat its count in one round and change it in the next.")
@click.option("--long-run", type=click.FloatRange(min=0), default=60.0, show_default=True, metavar="SECONDS",
              help="Run each benchmark once first, stopped after this long (under its profiler): one stopped there is "
                   "not calibrated but named, with its cost on every commit and how to shorten it (a script that runs "
                   "for minutes under callgrind). 0 calibrates every benchmark however long. Any benchmark over 10 s is "
                   "named after calibration.")
@format_option
def calibrate_command(revision: str, repository: Path, config_path: Path | None, store_location: str | None,
                      rounds: int, stop_when_identical: bool, long_run: float, output_format: str) -> None:
    """Measure one build against itself (A/A) to learn each benchmark's noise.

    Reports the coefficient of variation of each benchmark and the labeler's
    false-positive rate (A/A comparisons labelled "changed"), so `repetitions` and
    `min_effect` can be set on evidence. A metric whose runs are all identical is
    marked exact, one whose runs differ by at most a tenth of min_effect near-exact
    (its tolerance); labels of those benchmarks then use the effect alone.

    Each benchmark is also run with a larger environment and longer paths, as other
    machines and shells would run it: the largest change that makes (its layout spread:
    stack and code alignment, measurement bias) is what a label's effect must exceed.
    For noisy metrics it says how many repetitions a side can detect min_effect at alpha.
    """
    require("selector calibrate", "collect")
    import pandas as pd

    from perf_selector.selector.collection.calibrate import calibrate, too_long_to_measure

    top, config, store = open_project(repository, config_path, store_location, writes=True)
    log = LogProgress("calibrated (benchmark rounds)", None) if logging_progress() else None
    with stderr.status("calibrating") as status:
        def on_round(name: str, done: int) -> None:
            status.update(f"calibrating {name}: round {done}/{rounds}")
            if log:
                log.advance(f"{name}: round {done}/{rounds}")

        table = calibrate(top, config, store, revision, rounds, on_round=on_round, stop_when_identical=stop_when_identical,
                          long_run=long_run or None)
    if output_format == "json":
        print_json(records(table.drop(columns=["measured_at"])))
        return
    measured = table["rounds"] > 0  # a benchmark stopped after its first run (--long-run) has no figures
    dash = lambda column, shown: [shown(v) if m else "-" for v, m in zip(table[column], measured)]  # noqa: E731
    shown = pd.DataFrame({
        "benchmark": table["benchmark"], "metric": table["metric"], "runs": table["runs"],
        "median": dash("median", lambda v: f"{v:.6g}"), "cv": dash("cv", lambda v: f"{v:.2%}"),
        "exact": dash("exact", str), "tolerance": dash("tolerance", lambda v: f"{v:.2g}"),
        "layout spread": dash("layout_spread", lambda v: f"{v:.2%}"),
        "repetitions needed": dash("repetitions_needed", str),
        "false positives": [f"{fp}/{r} ({rate:.0%})" if m else "not calibrated" for fp, r, rate, m in
                            zip(table["false_positives"], table["rounds"], table["false_positive_rate"], measured)],
        "across sessions": [f"{fp}/{max(r - 1, 0)} ({rate:.0%})" if m else "-" for fp, r, rate, m in
                            zip(table["session_false_positives"], table["rounds"], table["session_false_positive_rate"],
                                measured)],
        "session drift": dash("session_drift", lambda v: f"{v:.2%}"),
    })
    print_table(shown, title=f"A/A calibration of {table['commit'].iloc[0][:12]} (alpha {config.labels.alpha:g}, min_effect {config.labels.min_effect:g})")
    from perf_selector.collectors.repository import Repository

    asked = Repository.open(top).commit(revision)
    if asked is not None and table["commit"].iloc[0] != asked.sha:
        stderr.print(f"{revision} did not build: calibrated its newest stored ancestor that did, {table['commit'].iloc[0][:12]}")
    for row in table.itertuples():
        if row.layout_spread > config.labels.min_effect:
            stderr.print(f"{row.benchmark}: the run's context alone moves it by up to {row.layout_spread:.2%} "
                         f"({row.contexts}); changes within that are left undecided")
        if not row.fit:
            stderr.print(f"{row.benchmark}: {row.unfit_reason}", markup=False)
    for line in too_long_to_measure(table):
        stderr.print(line, markup=False)
    stdout.print("The stored labels were recomputed with this calibration.")
    stdout.print("Exact benchmarks are labelled by the effect alone. For the others, compare the false-positive rates "
                 "with alpha: 'across sessions' is what labels between commits will see; well above alpha means the "
                 "machine drifts: pin a CPU (\\[run] cpu), add repetitions, or raise min_effect above the CV. A pair "
                 "measured in two sessions is called changed only beyond the 'session drift'; selector confirm decides "
                 "the rest by running both binaries in one session.")
