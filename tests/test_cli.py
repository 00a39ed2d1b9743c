"""The command line: help, version, JSON output, diff of two real builds."""

from __future__ import annotations

import json
import shlex
import subprocess
from pathlib import Path

import pytest

from perf_selector.models.names import WITHIN_RULE
from perf_selector.selector import __version__
from perf_selector.selector.onboarding.sample_history import DEMO_STEPS
from tests.helpers import compile_c
from tests.helpers import run_selector
from tests.helpers import selector_command

VERBS = ["functions", "diff", "collect", "calibrate", "confirm", "features", "demo", "backtest", "train", "report", "select",
         "record", "bisect", "hook", "init", "doctor", "labels", "evaluate", "pack"]


@pytest.mark.parametrize("verb", VERBS)
def test_every_verb_has_help(verb):
    result = run_selector(verb, "--help")
    assert result.returncode == 0
    assert "Usage: selector " + verb in result.stdout
    assert "--help" in result.stdout


def test_top_level_help_lists_verbs_and_version():
    result = run_selector("--help")
    assert all(verb in result.stdout for verb in VERBS)
    version = run_selector("--version")
    assert version.returncode == 0 and __version__ in version.stdout


def test_functions_and_diff_json(tmp_path):
    source = "int keep(int x) { return x + 1; }\nint edit(int x) { return x * %d; }\nint main(void) { return keep(1) + edit(2); }\n"
    old = compile_c(source % 3, tmp_path / "old", "-O0")  # -O0: no inlining of edit into main
    new = compile_c("int fresh(int x) { return x - 5; }\n" + source % 7, tmp_path / "new", "-O0")
    listing = run_selector("functions", "--format", "json", "--sort", "name", str(old))
    assert listing.returncode == 0, listing.stderr
    rows = json.loads(listing.stdout)
    assert [row["name"] for row in rows if row["name"] in ("edit", "keep", "main")] == ["edit", "keep", "main"]
    assert all(len(row["fingerprint"]) == 32 and row["instructions"] > 0 for row in rows)
    diff = run_selector("diff", "--format", "json", str(old), str(new))
    assert diff.returncode == 0, diff.stderr
    document = json.loads(diff.stdout)
    statuses = {row["name"]: row["status"] for row in document["functions"]}
    assert statuses == {"fresh": "new", "edit": "changed"}
    assert document["summary"]["changed_functions"] == 1 and document["summary"]["new_functions"] == 1
    text = run_selector("diff", str(old), str(new))
    assert "1 new, 0 deleted, 1 changed" in text.stdout


@pytest.mark.slow
def test_demo_runs_end_to_end_and_reruns_without_rebuilding(tmp_path):
    first = run_selector("demo", "--out", str(tmp_path / "demo"), "--format", "json")
    assert first.returncode == 0, first.stderr
    document = json.loads(first.stdout)
    commits = document["commits"]
    assert len(commits) == len(DEMO_STEPS)
    assert "<img" in open(document["report"]).read()
    pooled = {row["model"]: row for row in document["results"] if row["scope"] == "pooled"}
    assert pooled["xgboost"]["auroc"] > 0.75 and pooled["always-run"]["dismiss_rate"] == 0
    assert document["selection"]["schema_version"] == 1 and len(document["selection"]["benchmarks"]) == 4
    assert all(document["mlflow_runs"].values())
    # The demo's history holds enough changes for its own model to earn pruning: select follows
    # a learner that the project's own backtest chose, within the rule, which on its evidence
    # kept every change while dismissing more than the rule, with a bound that certifies 0.05.
    model = document["selection"]["model"]
    assert model["policy"] == WITHIN_RULE and not model["shipped"], model
    settings = json.loads((Path(document["bundle"]) / "manifest.json").read_text())["settings"]
    evidence = settings["evidence"]["own backtest"]
    assert evidence[WITHIN_RULE]["hit_rate"] == 1.0
    assert evidence[WITHIN_RULE]["dismiss_rate"] > evidence["rule"]["dismiss_rate"]
    assert settings["own_bound"]["bound"] <= 0.05 and settings["model_choice"]["chosen"] == model["model"]
    # chosen on the backtest's earlier epochs, bounded on the later ones alone: two disjoint sets of changes
    chosen_on = settings["chosen_on"]["evidence"]["own backtest"]
    assert settings["chosen_on"]["policy"] == WITHIN_RULE and chosen_on[WITHIN_RULE]["hit_rate"] == 1.0
    assert settings["own_bound"]["changes"] == evidence["changes"] and min(chosen_on["changes"], evidence["changes"]) >= 1
    assert settings["model_choice"]["candidates"][model["model"]]["changes"] == chosen_on["changes"]
    assert document["decides"] == model["policy_summary"] and f"this project's {model['model']} decides" in document["decides"]
    by_subject = {row["subject"]: row for row in commits}
    assert by_subject["checksum: mix every byte twice"]["changed"] == "checksum"
    assert by_subject["Explain the checksum constant"]["changed"] == ""
    assert by_subject["Heavier weights table"]["data"] == "weights"
    assert by_subject["Build with a different optimization level"]["build config"] == "changed"
    # The hints run as printed, from another directory: select, a bisect whose range holds a
    # change of the benchmark it names (ranked first), the report of the demo's backtest.
    hints = document["try"]
    assert [hint.split()[1] for hint in hints] == ["select", "bisect", "report"]
    for hint in hints:
        ran = subprocess.run(selector_command(*shlex.split(hint)[1:]), capture_output=True, text=True, cwd=tmp_path)
        assert ran.returncode in (0, 1), (hint, ran.stderr)
    bisect = shlex.split(hints[1])
    ranked = subprocess.run(selector_command(*bisect[1:], "--format", "json"), capture_output=True, text=True, cwd=tmp_path)
    suspects = {row["commit"] for row in json.loads(ranked.stdout)["order"]}
    from perf_selector.storage.store import Store

    labels = Store(document["store"]).read("labels").to_pandas()
    benchmark = bisect[bisect.index("--benchmark") + 1]
    assert suspects & set(labels[(labels["benchmark"] == benchmark) & (labels["label"] == True)]["new"])  # noqa: E712
    assert "backtests" in document["report"] and document["report"].startswith(document["store"])
    again = run_selector("demo", "--out", str(tmp_path / "demo"))
    assert again.returncode == 0 and "already_stored" in again.stdout
    assert f"Which model decides: this project's {model['model']} decides (within the rule)" in again.stdout
    other = tmp_path / "occupied"
    other.mkdir()
    (other / "file").write_text("mine")
    refused = run_selector("demo", "--out", str(other))
    assert refused.returncode == 2 and "not a selector demo" in refused.stderr


def test_long_tables_print_as_plain_aligned_columns(capsys):
    from perf_selector.selector.tables import PLAIN_ABOVE, print_rows

    rows = [{"name": f"f{i}", "size": i * 1000.5, "parts": ["a", "b"]} for i in range(PLAIN_ABOVE + 1)]
    print_rows(rows, title="many")
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "many" and lines[1].split() == ["name", "size", "parts"] and len(lines) == PLAIN_ABOVE + 4
    assert len({len(line) for line in lines[3:]}) == 1  # aligned
    assert lines[-1].split() == [f"f{PLAIN_ABOVE}", "300,150", "a,", "b"]  # rounded like the short tables


def test_progress_in_a_log_is_a_line_at_a_steady_pace(capsys):
    """Where stderr is a file, long commands write their progress as lines: the first step, then
    one at most every `every` seconds, and the last."""
    from perf_selector.selector.tables import LogProgress

    clock = iter([1.0, 5.0, 20.0, 31.0, 40.0, 80.0])
    progress = LogProgress("collected", 6, every=30.0)
    progress._clock = lambda: next(clock)
    progress.started = progress._last = 0.0
    for step in range(6):
        progress.advance(f"commit {step}")
    lines = [line for line in capsys.readouterr().err.splitlines() if line]
    assert lines == ["collected: 1/6 after 1s, about 5s left (commit 0)",
                     "collected: 4/6 after 31s, about 16s left (commit 3)",
                     "collected: 6/6 after 1m20s (commit 5)"]


def test_a_resumed_runs_time_left_is_the_pace_of_the_steps_that_worked(capsys):
    """Steps already done (a resumed collect's stored commits) take no time: the time left is the
    pace of the steps that worked, not of every step (issue 48: "about 9s left" for 22 minutes)."""
    from perf_selector.selector.tables import LogProgress

    clock = iter([0.1, 0.2, 0.3, 60.3, 120.3])
    progress = LogProgress("collected", 10, every=0.0)
    progress._clock = lambda: next(clock)
    progress.started = progress._last = 0.0
    for step in range(3):
        progress.advance(f"commit {step} stored", worked=False)
    progress.advance("commit 3 built")  # 60 s of work for one commit: six more to do, about 6 minutes
    progress.advance("commit 4 built")
    lines = [line for line in capsys.readouterr().err.splitlines() if line]
    assert lines[3] == "collected: 4/10 after 1m00s, about 6m02s left (commit 3 built)"
    assert lines[4] == "collected: 5/10 after 2m00s, about 5m01s left (commit 4 built)"
