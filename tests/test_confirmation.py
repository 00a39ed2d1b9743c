"""Interleaved confirmation of timed labels (`selector confirm`): which labels it takes, how
the labels follow its runs, and, on real gcc builds run through the real CLI, that two
identical binaries are not called changed and a planted 10% slowdown is."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import msgspec
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from perf_selector.selector.collection.calibrate import repetitions_needed
from perf_selector.selector.collection.confirmation import interleaved_schedule, why_confirm
from perf_selector.storage.labels import LabelRules, PairLabeller, history_labels
from perf_selector.storage.schema import TABLES
from perf_selector.storage.store import Store
from tests.helpers import assert_one_line_error, run_selector

RULES = LabelRules(alpha=0.05, min_effect=0.01, metrics={"loop": "wall_time"}, directions={"loop": "lower"}, profiled=False)


def _measurements(values: dict[str, list[float]]) -> pa.Table:
    return pa.Table.from_pylist([
        {"commit": commit, "benchmark": "loop", "metric": "wall_time", "repetition": repetition, "warmup": False,
         "value": value, "status": "ok"}
        for commit, runs in values.items() for repetition, value in enumerate(runs)])


def _confirmation(new: str, old: str, old_values: list[float], new_values: list[float]) -> pa.Table:
    rows = [{"new": new, "old": old, "benchmark": "loop", "metric": "wall_time", "side": "old", "round": -1, "status": "ok",
             "value": 99.0}]  # a warm-up, never compared
    rows += [{"new": new, "old": old, "benchmark": "loop", "metric": "wall_time", "side": side, "round": number,
              "status": "ok", "value": value}
             for side, values in (("old", old_values), ("new", new_values)) for number, value in enumerate(values)]
    return pa.Table.from_pylist(rows)


def test_drift_between_sessions_is_a_change_until_the_interleaved_runs_say_otherwise():
    # The old commit was measured on a faster day: its runs are 3% below the new one's.
    measured = _measurements({"a": [1.00, 1.001, 0.999, 1.002, 0.998], "b": [1.03, 1.031, 1.029, 1.032, 1.028]})
    drifted = PairLabeller(measured, pa.table({}), RULES).label("b", "a", "loop")
    assert drifted.label is True and drifted.decided_by == "test"
    same = [1.0, 1.001, 0.999, 1.002, 0.998, 1.0005]
    confirmed = PairLabeller(measured, pa.table({}), RULES, _confirmation("b", "a", same, same[::-1])).label("b", "a", "loop")
    assert confirmed.label is not True and confirmed.n_old == confirmed.n_new == 6  # the warm-up is left out
    assert "interleaved in one session (6 rounds)" in confirmed.reason
    slower = [value * 1.1 for value in same]
    found = PairLabeller(measured, pa.table({}), RULES, _confirmation("b", "a", same, slower)).label("b", "a", "loop")
    assert found.label is True and found.decided_by == "confirmation" and found.regression
    # Another pair's confirmation does not touch this one; history_labels reads them when given.
    other = PairLabeller(measured, pa.table({}), RULES, _confirmation("c", "a", same, slower)).label("b", "a", "loop")
    assert other == drifted
    commits = pa.Table.from_pylist([{"sha": "a", "parents": []}, {"sha": "b", "parents": ["a"]}])
    (row,) = history_labels(commits, measured, pa.table({}), pa.table({}), RULES,
                            _confirmation("b", "a", same, slower))["b"].to_pylist()
    assert row["decided_by"] == "confirmation" and row["label"] is True
    (row,) = history_labels(commits, measured, pa.table({}), pa.table({}), RULES)["b"].to_pylist()
    assert row["decided_by"] == "test"  # without confirmations (the push path's callers): as before


def test_which_labels_need_confirming():
    base = {"exact": False, "reason": "", "decided_by": "test"}
    assert why_confirm({**base, "label": None, "reason": "borderline: p=0.3, ..."}, 0.05, 0.01).startswith("undecided")
    assert why_confirm({**base, "label": True, "effect": 0.015, "p_value": 0.001}, 0.05, 0.01).startswith("borderline")
    assert why_confirm({**base, "label": False, "effect": 0.001, "p_value": 0.08}, 0.05, 0.01).startswith("borderline: p")
    assert why_confirm({**base, "label": False, "effect": 0.001, "p_value": 0.3}, 0.05, 0.01) is None
    assert why_confirm({**base, "label": True, "effect": 0.2, "p_value": 0.04}, 0.05, 0.01).startswith("borderline: p")
    assert why_confirm({**base, "label": True, "effect": 0.2, "p_value": 0.001}, 0.05, 0.01) is None
    assert why_confirm({**base, "label": False, "effect": 0.001, "p_value": 0.9, "decided_by": "equivalence"}, 0.05, 0.01) is None
    assert why_confirm({**base, "label": True, "effect": 0.015, "p_value": 0.001, "decided_by": "confirmation"}, 0.05, 0.01) is None


def test_each_round_runs_both_sides_in_a_random_order_after_the_warmups():
    schedule = interleaved_schedule(40, 1, seed=7)
    assert schedule[:2] == [("old", -1), ("new", -1)]
    rounds = [sorted(schedule[2 + 2 * n: 4 + 2 * n]) for n in range(40)]
    assert all(pair == [("new", n), ("old", n)] for n, pair in enumerate(rounds))
    firsts = [schedule[2 + 2 * n][0] for n in range(40)]
    assert 10 < firsts.count("new") < 30  # neither side always runs first
    assert interleaved_schedule(40, 1, seed=7) == schedule


# --------------------------------------------------------------- real runs, real CLI
# A busy loop of about 35 ms; the planted slowdown runs it 10% longer.  It prints the CPU
# time it took too: a number read from the output, which other processes on the machine
# move less than the wall time.
PROGRAM = """#include <stdio.h>
#include <time.h>
#define WORK 60000000L
int main(void) {
    clock_t started = clock();
    volatile long sink = 0;
    for (long i = 0; i < WORK; i++)
        sink += i;
    printf("%ld cpu=%.6f\\n", (long)sink, (double)(clock() - started) / CLOCKS_PER_SEC);
    return 0;
}
"""
CPU_TIME = r"cpu=(\S+)"
# repetitions = 2: collection alone cannot decide (the test cannot reach alpha with 2 runs a
# side), which is what the confirmation is for; everything else is the default.
CONFIG = """[project]
binary = "prog"

[build]
command = "gcc -O2 -o prog prog.c"

[[benchmark]]
name = "loop"
command = "{{binary}}"
metric = '{metric}'
repetitions = 2

[profile]
tool = "none"
"""


def _git(root: Path, *arguments: str) -> str:
    identity = ["-c", "user.name=Test", "-c", "user.email=test@example.com"]
    return subprocess.run(["git", *identity, *arguments], cwd=root, check=True, capture_output=True, text=True).stdout.strip()


def _history(root: Path, metric: str = "wall_time") -> list[str]:
    """Three commits: the loop, the same loop with a comment added (an identical binary), the
    loop 10% longer."""
    root.mkdir(parents=True)
    (root / "prog.c").write_text(PROGRAM)
    (root / "selector.toml").write_text(CONFIG.format(metric=metric))
    (root / ".gitignore").write_text("prog\n.selector/\n")
    _git(root, "init", "-q", "-b", "main")
    shas = []
    for message, edit in (("loop", lambda text: text), ("comment", lambda text: text + "/* explained */\n"),
                          ("slower", lambda text: text.replace("60000000L", "66000000L"))):
        (root / "prog.c").write_text(edit((root / "prog.c").read_text()))
        _git(root, "add", "-A")
        _git(root, "commit", "-q", "-m", message)
        shas.append(_git(root, "rev-parse", "HEAD"))
    return shas


@pytest.mark.slow
@pytest.mark.alone
@pytest.mark.parametrize("metric", ["wall_time", CPU_TIME])
def test_confirmation_finds_no_change_between_identical_binaries_and_finds_a_planted_slowdown(tmp_path, metric):
    root = tmp_path / "project"
    loop, comment, slower = _history(root, metric)
    collected = run_selector("collect", "--no-calibrate", "--repo", str(root), "--format", "json")
    assert collected.returncode == 0, collected.stderr
    # The comment-only commit builds the identical binary: unchanged whatever its runs show.
    # The slowed pair is undecided: 2 runs a side cannot reach alpha.
    assert {key: json.loads(collected.stdout)["labels"][0][key] for key in ("undecided", "negative")} == \
        {"undecided": 1, "negative": 1}
    calibrated = run_selector("calibrate", loop, "--repo", str(root), "--format", "json")  # its noise sets the rounds
    assert calibrated.returncode == 0, calibrated.stderr

    # The slowed pair is confirmed; the identical binaries' pair needs no confirmation.
    planned = json.loads(run_selector("confirm", "--repo", str(root), "--dry-run", "--format", "json").stdout)["pairs"]
    planned = {pair["new"] for pair in planned}
    assert planned == {slower}
    only = run_selector("confirm", "--repo", str(root), "--dry-run", "--commits", slower[:10], "--format", "json")
    assert [pair["new"] for pair in json.loads(only.stdout)["pairs"]] == [slower]  # the one commit asked for
    confirmed = run_selector("confirm", "--repo", str(root), "--format", "json")
    assert confirmed.returncode == 0, confirmed.stderr
    document = json.loads(confirmed.stdout)
    assert document["summary"]["confirmed"] == len(planned) and document["summary"]["failed_runs"] == 0
    store = Store(root / ".selector")
    labels = {row["new"]: row for row in store.read("labels").to_pylist()}
    assert labels[comment]["label"] is False and labels[comment]["decided_by"] == "identical", labels[comment]["reason"]
    assert all(labels[new]["reason"].startswith("interleaved in one session") for new in planned)
    runs = store.read("confirmations")
    assert set(runs["context"].to_pylist()) == {runs["context"][0].as_py()}  # one context for every run of the session
    files = sorted((root / ".selector" / "confirmations").glob("*.parquet"))
    assert len(files) == len(planned)
    assert [problem for path in files for problem in TABLES["confirmations"].mismatches(pq.read_schema(path))] == []

    # Resumable: the pairs stored are not run again; a pair whose file is gone is.
    again = json.loads(run_selector("confirm", "--repo", str(root), "--format", "json").stdout)["summary"]
    assert again["confirmed"] == again["runs"] == 0
    (root / ".selector" / "confirmations" / f"{slower}-{comment}-loop.parquet").unlink()
    resumed = json.loads(run_selector("confirm", "--repo", str(root), "--format", "json").stdout)
    assert resumed["summary"]["confirmed"] == 1 and [pair["new"] for pair in resumed["pairs"] if pair["runs"]] == [slower]

    # A later collection (or calibration) keeps the labels the confirmations decided; a changed one
    # is then also re-measured under perturbed contexts, and stays changed only if it holds there.
    assert run_selector("collect", "--no-calibrate", "--repo", str(root)).returncode == 0
    labels = {row["new"]: row for row in Store(root / ".selector").read("labels").to_pylist()}
    assert all("interleaved in one session" in labels[new]["reason"] for new in planned), [labels[n]["reason"] for n in planned]
    assert labels[comment]["label"] is not True, labels[comment]["reason"]

    # A machine busy with other work (load well above its cores) times a 35 ms loop with a
    # noise no 30 rounds can see 10% through; calibration measured that noise, and says so.
    # (The CPU time the program prints is steadier where the load is other processes, not
    # a hypervisor taking the CPU away: in a VM both can be too noisy.)
    (calibration,) = store.read("calibration").to_pylist()
    rounds = resumed["pairs"][0]["rounds"]
    noisy = repetitions_needed(calibration["cv"], 0.10, 0.05) > rounds or calibration["layout_spread"] >= 0.10
    # The load can also rise after calibration (a CI rehearsal beside a corpus collection did):
    # the confirmation then says itself that its rounds could not decide, and never "unchanged".
    assert labels[slower]["label"] is not False, labels[slower]["reason"]
    noisy = noisy or (labels[slower]["label"] is None and "borderline" in labels[slower]["reason"])
    if noisy and labels[slower]["label"] is not True:
        pytest.skip(f"this machine's timing noise (cv {calibration['cv']:.1%}, layout spread "
                    f"{calibration['layout_spread']:.1%}) is too high for {rounds} rounds to detect 10%: "
                    f"{labels[slower]['reason']}")
    assert labels[slower]["label"] is True and labels[slower]["decided_by"] == "confirmation", labels[slower]["reason"]
    # Slower, by at most what was planted: on a busy machine the time a run waits for a core is
    # added to both sides alike and dilutes the ratio (4.4% measured beside the test suite).
    assert labels[slower]["regression"] and 0.0 < labels[slower]["effect"] < 0.2


@pytest.mark.slow
def test_bad_input_is_one_line(tmp_path):
    root = tmp_path / "project"
    _history(root)
    assert_one_line_error(run_selector("confirm", "--repo", str(root)), "no store here")
    assert run_selector("collect", "--no-calibrate", "-n", "1", "--repo", str(root)).returncode == 0
    assert_one_line_error(run_selector("confirm", "--repo", str(root), "--benchmarks", "nope"), "unknown benchmark nope")
    assert_one_line_error(run_selector("confirm", "--repo", str(root), "--commits", "nope"), "unknown revision 'nope'")
    nothing = run_selector("confirm", "--repo", str(root))
    assert nothing.returncode == 0 and "nothing to confirm" in nothing.stdout


def test_a_timed_metrics_scatter_is_for_the_test_not_a_spread_to_exceed():
    from perf_selector.storage.labels import calibrated_benchmarks

    row = {"benchmark": "loop", "metric": "wall_time", "exact": False, "cv": 0.2, "tolerance": 0.9, "layout_spread": 0.03}
    assert calibrated_benchmarks(pa.Table.from_pylist([row]), RULES)["loop"].spread == 0.03


def test_pairs_measured_in_two_contexts_are_confirmed_whatever_the_metric():
    from perf_selector.selector.config import Config, benchmark_specs
    from perf_selector.selector.collection.confirmation import DIFFERENT_CONTEXTS, plan_confirmations

    rules = LabelRules(0.05, 0.01, {"count": "instructions"}, {"count": "lower"}, profiled=False)
    runs = [{"commit": commit, "benchmark": "count", "metric": "instructions", "repetition": 0, "warmup": False,
             "value": value, "status": "ok", "context": context}
            for commit, value, context in (("a", 100.0, "c1"), ("b", 103.0, "c2"), ("c", 103.0, "c2"))]
    exact = pa.Table.from_pylist([{"benchmark": "count", "metric": "instructions", "exact": True, "cv": 0.0,
                                   "tolerance": 0.0, "layout_spread": 0.0, "repetitions_needed": 1}])
    labeller = PairLabeller(pa.Table.from_pylist(runs), exact, rules)
    moved, same = labeller.label("b", "a", "count"), labeller.label("c", "b", "count")
    assert moved.label is None and DIFFERENT_CONTEXTS in moved.reason and same.label is False
    config = msgspec.convert({"project": {"binary": "prog"}, "build": {"command": "make"}, "benchmark": [
        {"name": "count", "command": "{binary}", "metric": "instructions", "repetitions": 1}]}, Config)
    rows = [{"new": new, "old": old, "benchmark": "count", "metric": "instructions", **label.as_row()}
            for (new, old), label in ((("b", "a"), moved), (("c", "b"), same))]
    (planned,) = plan_confirmations(rows, exact, config, {spec.name: spec for spec in benchmark_specs(config)})
    assert (planned.new, planned.old, planned.rounds) == ("b", "a", 1)  # an exact count: one round decides


def test_decided_labels_are_confirmed_only_when_asked():
    from perf_selector.selector.config import Config, benchmark_specs
    from perf_selector.selector.collection.confirmation import plan_confirmations

    config = msgspec.convert({"project": {"binary": "prog"}, "build": {"command": "make"}, "benchmark": [
        {"name": "loop", "command": "{binary}", "metric": "wall_time"}]}, Config)
    specs = {spec.name: spec for spec in benchmark_specs(config)}
    confident = {"new": "b", "old": "a", "benchmark": "loop", "metric": "wall_time", "exact": False, "label": True,
                 "effect": 0.27, "p_value": 0.008, "decided_by": "test", "reason": "p=0.008 < alpha 0.05; ..."}
    assert plan_confirmations([confident], pa.table({}), config, specs) == []
    (planned,) = plan_confirmations([confident], pa.table({}), config, specs, every_label=True)
    assert planned.why.startswith("decided by test") and planned.rounds == 5  # the configured repetitions: no calibration
