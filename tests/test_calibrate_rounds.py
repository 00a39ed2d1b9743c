"""Calibration runs every round it is asked for: a count that repeats within one round can
change in the next (a harness that loops for a time settles on another iteration count), so
identical runs in a first round stop it only when `--stop-when-identical` asks for that."""

from __future__ import annotations

import json

from perf_selector.selector.collection.calibrate import calibrate
from perf_selector.selector.config import load_config
from perf_selector.selector.onboarding.sample_history import commit_all
from perf_selector.storage.store import Store
from tests.helpers import gcc_config, new_project, run_selector
from tests.helpers.loop_program import CONFIG, PROGRAM as LOOP_PROGRAM

# Twice the work once MARKER exists: what a timed harness does when, in a later round, the
# machine is slower or faster across one of its steps; here the test decides when.
PROGRAM = LOOP_PROGRAM.replace('    printf("%ld\\n", loop(50000) & 1);', """    long n = 20000;
    FILE *marker = fopen("MARKER", "r");
    if (marker) {
        n = 40000;
        fclose(marker);
    }
    printf("%ld\\n", loop(n) & 1);""")
assert PROGRAM != LOOP_PROGRAM
# The same benchmark counting the loop's own instructions: a whole process's count also holds
# the loader's start-up, which one CI machine counted differently from run to run.
ISOLATED_CONFIG = CONFIG.split("[[benchmark]]")[0] + """
[[suite]]
name = "count"
framework = "command"
command = "{binary} {name}"  # the program takes no argument: it ignores it
metric = "instructions"
names = ["loop"]
isolate = "{name}"
repetitions = 2
warmup = 0
"""


def _project(tmp_path, name: str):
    root = new_project(tmp_path / name, CONFIG)
    marker = tmp_path / f"{name}.marker"
    (root / "prog.c").write_text(PROGRAM.replace("MARKER", str(marker)))
    commit_all(root, "a program whose count changes after the first round")
    return root, marker


def _calibrated(root, marker, stop_when_identical: bool) -> dict:
    def after_round(benchmark: str, done: int) -> None:
        if done == 1:
            marker.write_text("")  # from the second round on, the program counts otherwise

    config = load_config(root / "selector.toml")
    table = calibrate(root, config, Store(root / ".selector"), "HEAD", 3, on_round=after_round,
                      stop_when_identical=stop_when_identical)
    return table.set_index("benchmark").loc["loop"].to_dict()


def test_every_round_asked_for_runs_and_sees_a_count_that_changes_after_the_first(tmp_path):
    root, marker = _project(tmp_path, "all")
    row = _calibrated(root, marker, stop_when_identical=False)
    assert row["rounds"] == 3 and row["runs"] == 3 * 2 * 2, row  # 3 rounds of 2 x 2 repetitions
    assert not row["exact"] and row["tolerance"] > 0.2, row  # the later rounds ran twice the work
    assert row["fit"] is False and "differ by" in row["unfit_reason"], row


def test_stopping_when_identical_is_asked_for_by_name_and_misses_the_later_change(tmp_path):
    root, marker = _project(tmp_path, "stopped")
    row = _calibrated(root, marker, stop_when_identical=True)
    assert row["rounds"] == 1 and row["runs"] == 2 * 2 and row["exact"], row


def test_calibrate_runs_the_rounds_asked_for_on_an_exact_count(tmp_path):
    """Through the command line, on a count that never changes: all three rounds run (the
    option stops after one), and --help says what the option costs."""
    root = new_project(tmp_path / "exact", ISOLATED_CONFIG)
    (root / "prog.c").write_text(PROGRAM.replace("MARKER", str(tmp_path / "never-made")))
    commit_all(root, "an exact count")
    result = run_selector("calibrate", "--repo", str(root), "--rounds", "3", "--format", "json")
    assert result.returncode == 0, result.stderr
    row = next(row for row in json.loads(result.stdout) if row["benchmark"] == "count/loop")
    assert row["rounds"] == 3 and row["runs"] == 12 and row["exact"] and row["false_positives"] == 0, json.dumps(row)
    stopped = run_selector("calibrate", "--repo", str(root), "--rounds", "3", "--stop-when-identical", "--format", "json")
    assert stopped.returncode == 0, stopped.stderr
    assert [(row["rounds"], row["exact"]) for row in json.loads(stopped.stdout)] == [(1, True)]
    helped = run_selector("calibrate", "--help")
    assert "--stop-when-identical" in helped.stdout and "every one runs" in helped.stdout


LONG_CONFIG = gcc_config("""
[[suite]]
name = "loop"
framework = "command"
command = "{binary} {name}"  # the loop's length: a short benchmark and one of minutes under callgrind
names = ["1000", "4000000000"]
isolate = false
metric = "instructions"
repetitions = 2
warmup = 0
""")
ARGUMENT_PROGRAM = LOOP_PROGRAM.replace("#include <stdio.h>", "#include <stdio.h>\n#include <stdlib.h>").replace(
    "int main(void)", "int main(int argc, char **argv)").replace("loop(50000)", "loop(atol(argv[1]))")


def test_a_benchmark_whose_first_run_is_too_long_is_named_and_not_calibrated(tmp_path):
    """A script that runs for many minutes under callgrind (an interpreter's benchmark): its
    first run, stopped after --long-run seconds, is all calibrate runs of it; it says what the
    benchmark would cost on every commit and how to shorten it, and calibrates the others.
    Once the user takes it out of the suite, collections no longer name it."""
    root = new_project(tmp_path / "long", LONG_CONFIG)
    (root / "prog.c").write_text(ARGUMENT_PROGRAM)
    commit_all(root, "a short and a very long benchmark")
    result = run_selector("calibrate", "--repo", str(root), "--rounds", "1", "--long-run", "5", "--format", "json")
    assert result.returncode == 0, result.stderr
    rows = {row["benchmark"]: row for row in json.loads(result.stdout)}
    short, long = rows["loop/1000"], rows["loop/4000000000"]
    assert short["rounds"] == 1 and short["exact"] and short["fit"], short
    assert long["rounds"] == 0 and long["runs"] == 0 and long["fit"] is False and long["run_seconds"] == 5, long
    assert long["unfit_reason"].startswith("one run takes over 5 s under callgrind (stopped there)"), long
    assert "{suite}" in long["unfit_reason"] and "--long-run 0" in long["unfit_reason"], long
    shown = run_selector("calibrate", "--repo", str(root), "--rounds", "1", "--long-run", "5")
    printed = " ".join(shown.stderr.split())
    assert shown.returncode == 0 and "loop/4000000000: one run takes over 5 s" in printed, shown.stderr
    assert "through [project] suite" in printed and "000: loop/" not in printed, shown.stderr  # no markup eaten
    assert "not calibrated" in shown.stdout and "nan" not in shown.stdout, shown.stdout
    helped = run_selector("calibrate", "--help")
    assert "--long-run" in helped.stdout
    config = root / "selector.toml"
    config.write_text(config.read_text().replace('names = ["1000", "4000000000"]', 'names = ["1000"]'))
    (root / "prog.c").write_text(ARGUMENT_PROGRAM.replace("sum * 31", "sum * 37"))
    commit_all(root, "another multiplier")
    collected = run_selector("collect", "-n", "2", "--repo", str(root))
    assert collected.returncode == 0, collected.stderr
    assert "loop/1000" in collected.stdout and "cannot be labelled" not in collected.stderr, collected.stderr
