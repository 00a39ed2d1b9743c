"""`selector evaluate --replay`: the history walked as a team would have lived it.

The catching logic is tested on its own; then a short real history (tests/programs/kernel.c
built by gcc, measured and profiled by callgrind) is replayed: a comment, a change of the
hot loop, another comment.
"""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from perf_selector.selector.config import load_config
from perf_selector.selector.evaluation.replay import (AT_COMMIT, LATE, NEVER, Step, always_policy, catches, replay_project, rule_policy)
from perf_selector.selector.onboarding.sample_history import commit_all
from perf_selector.storage.store import Store
from tests.helpers import gcc_config, new_project, program_text, run_selector


def test_a_change_is_caught_at_its_commit_late_at_the_next_spanning_run_or_never():
    order = ["a", "b", "c", "d", "e"]
    position = {sha: i for i, sha in enumerate(order)}
    steps = [
        Step("b", "x", True, "a", True),  # ran at the change
        Step("c", "x", False, "b"),  # skipped at the change ...
        Step("d", "x", False, "b"),
        Step("e", "x", True, "b", True),  # ... seen two commits later, against b (before c)
        Step("c", "y", False, "a"),  # skipped; the next run's comparison is unchanged: never seen
        Step("d", "y", True, "a", False),
        Step("e", "z", False, "a"),  # skipped, no run after it: never
    ]
    found = {(c["commit"], c["benchmark"]): c for c in catches(steps, [("b", "x"), ("c", "x"), ("c", "y"), ("e", "z")],
                                                                  position)}
    assert (found[("b", "x")]["caught"], found[("b", "x")]["later"]) == (AT_COMMIT, 0)
    assert (found[("c", "x")]["caught"], found[("c", "x")]["at"], found[("c", "x")]["later"]) == (LATE, "e", 2)
    assert found[("c", "y")]["caught"] == NEVER
    assert (found[("e", "z")]["caught"], found[("e", "z")]["at"]) == (NEVER, None)


def test_a_run_whose_comparison_does_not_span_the_change_does_not_catch_it():
    position = {sha: i for i, sha in enumerate("abcd")}
    steps = [Step("b", "x", False, "a"), Step("c", "x", True, "a", False), Step("d", "x", True, "c", True)]
    assert catches(steps, [("b", "x")], position)[0]["caught"] == NEVER  # c's run spanned b, unchanged; d's did not


CONFIG = gcc_config("""
[[benchmark]]
name = "kernel"
command = "{binary} 20000"
metric = "instructions"
repetitions = 4
warmup = 0
""")
STEPS = [  # (name, the hot loop's body)
    ("comment", "acc += data[i]; // sums the data"),  # no code changes
    ("slower", "acc += data[i] * 3u + (data[i] >> 2); // sums the data"),  # the hot loop does more
    ("after", "acc += data[i] * 3u + (data[i] >> 2); // mixes the data"),  # no code changes
]


@pytest.fixture(scope="module")
def history(tmp_path_factory):
    """(root, store, config, sha of each step by name), collected."""
    root = new_project(tmp_path_factory.mktemp("replay") / "project", CONFIG)
    kernel = program_text("kernel.c")
    (root / "prog.c").write_text(kernel.replace("KERNEL_BODY", "acc += data[i];"))
    shas = {"base": commit_all(root, "base")}
    for name, body in STEPS:
        (root / "prog.c").write_text(kernel.replace("KERNEL_BODY", body))
        shas[name] = commit_all(root, name)
    result = run_selector("collect", "--no-calibrate", "--repo", str(root), "--format", "json")
    assert result.returncode == 0, result.stderr
    return root, Store(root / ".selector", create=False), load_config(root / "selector.toml"), shas


def _replayed(history, **policies):
    root, store, config, shas = history
    return replay_project("project", store, config, policies)


def _summary(replayed, policy: str) -> dict:
    return replayed.summary.set_index("policy").loc[policy].to_dict()


def _step(replayed, policy: str, sha: str) -> dict:
    steps = replayed.steps
    return steps[(steps["policy"] == policy) & (steps["commit"] == sha)].iloc[0].to_dict()


@pytest.mark.slow
def test_the_ground_truth_is_the_one_change_of_the_hot_loop(history):
    replayed = _replayed(history, always=always_policy)
    shas = history[3]
    assert replayed.changes[["commit", "benchmark"]].values.tolist() == [[shas["slower"], "kernel"]]


@pytest.mark.slow
def test_always_running_runs_everything_and_catches_every_change_at_its_commit(history):
    replayed = _replayed(history, always=always_policy)
    summary = _summary(replayed, "always")
    assert summary["decisions"] == 3  # the base commit is the baseline
    assert summary["run_share"] == summary["time_share"] == 1.0
    assert summary["changes"] == summary["at_commit"] == 1 and summary["late"] == summary["never"] == 0


@pytest.mark.slow
def test_the_rule_catches_a_change_of_executed_code_at_its_commit_and_really_skips_the_comments(history):
    shas = history[3]
    replayed = _replayed(history, rule=rule_policy(history[2].labels.min_effect))
    summary = _summary(replayed, "rule")
    assert summary["changes"] == summary["at_commit"] == 1
    assert _step(replayed, "rule", shas["comment"])["run"] is False  # nothing executed changed
    slower = _step(replayed, "rule", shas["slower"])
    # compared with the last commit where the benchmark ran, not its closest profiled ancestor
    assert slower["run"] and slower["against"] == shas["base"] and slower["hops"] == 2
    assert slower["label"] is True
    assert _step(replayed, "rule", shas["after"])["against"] == shas["slower"]
    assert summary["runs"] == 1 and summary["run_share"] == pytest.approx(1 / 3)


@pytest.mark.slow
def test_a_policy_that_skips_the_change_catches_it_at_the_next_run(history):
    shas = history[3]

    def skips_the_change(commit, features, benchmarks):
        run = np.full(len(benchmarks), commit != shas["slower"])
        return run, np.where(run, "run", "skip")

    replayed = _replayed(history, skipping=skips_the_change)
    after = _step(replayed, "skipping", shas["after"])
    assert after["run"] and after["against"] == shas["comment"] and after["label"] is True  # really skipped
    change = replayed.changes.iloc[0].to_dict()
    assert (change["caught"], change["at"], change["later"]) == (LATE, shas["after"], 1)
    summary = _summary(replayed, "skipping")
    assert (summary["at_commit"], summary["late"], summary["never"], summary["max_commits_later"]) == (0, 1, 0, 1)


@pytest.mark.slow
def test_evaluate_replay_prints_every_policy_as_json(history, tmp_path):
    root = history[0]
    result = run_selector("evaluate", "--replay", str(root / ".selector"), "--format", "json", "--out", str(tmp_path / "out"))
    assert result.returncode == 0, result.stderr
    project = json.loads(result.stdout)["projects"][0]
    policies = {row["policy"]: row for row in project["summary"]}
    assert {"always", "executed-changed", "shipped"} <= set(policies)
    assert policies["always"]["at_commit"] == policies["executed-changed"]["at_commit"] == 1
    assert all(row["decisions"] == 3 and row["changes"] == 1 for row in policies.values())
    # the oracle runs the one change once: each policy's runs for each change is its runs
    assert all(row["runs_per_change"] == row["runs"] for row in policies.values())
    assert (tmp_path / "out" / "replay.json").is_file()
    # a log (stderr is not a terminal) says how far each policy's walk is, each ending at every commit
    walked = re.findall(r"replayed \S+ under (\S+) \(commits\): (\d+)/(\d+)", result.stderr)
    assert {policy for policy, done, commits in walked if done == commits == "4"} == set(policies)


@pytest.mark.slow
def test_a_store_as_of_a_commit_holds_nothing_of_later_commits(history):
    from perf_selector.storage.store_as_of import StoreAsOf

    root, store, config, shas = history
    past = [shas["base"], shas["comment"]]
    view = StoreAsOf(store, past)
    for table, column in (("commits", "sha"), ("measurements", "commit"), ("profiles", "commit"), ("labels", "new")):
        rows = set(view.read(table)[column].to_pylist())
        assert rows and rows <= set(past), table
        assert set(store.read(table)[column].to_pylist()) - rows, table  # the store itself holds more
    assert view.read("calibration").num_rows == store.read("calibration").num_rows  # made once, at the start


@pytest.mark.slow
def test_the_replays_own_model_is_retrained_on_the_past_alone(history, tmp_path):
    """evaluate --replay retrains the project's own model every N commits on the store as it stood
    before them; where the past holds nothing to learn from, the shipped model decides, as select does."""
    root = history[0]
    result = run_selector("evaluate", "--replay", str(root / ".selector"), "--retrain-every", "2", "--format", "json",
                          "--out", str(tmp_path / "out"))
    assert result.returncode == 0, result.stderr
    project = json.loads(result.stdout)["projects"][0]
    own = project["bundles"]["own"]
    assert own["in_sample"] is False and own["retrained_every"] == 2
    assert set(own["trained"]) == {"0", "2"} and own["trained"]["0"] is None  # before the first commit: nothing
    assert own["trained"]["2"] is None or own["trained"]["2"]["commits"] <= 2  # on the two commits before the boundary
    policies = {row["policy"]: row for row in project["summary"]}
    assert {k: v for k, v in policies["own"].items() if k != "policy"} == \
        {k: v for k, v in policies["shipped"].items() if k != "policy"}  # too few changes: the shipped model decided
    # and the document says so, rather than that the own model decided
    trained = own["trained"]["2"]
    if trained is not None:
        assert trained["decided_for"] == [] and trained["shipped_decided_for"]
        assert trained["summary"].startswith("too few changes to decide")
    from perf_selector.selector.evaluation.replay import markdown

    said = markdown(json.loads(result.stdout)).split("What the `own` policy's model decided:", 1)[1]
    assert "the shipped model decided throughout, so `own` is `shipped`" in said.splitlines()[2]


def test_the_projects_whose_own_model_never_decided_share_one_line():
    """On a corpus most own models never learn from enough changes: they are named in one line, and
    each own model that decided keeps a line of its own."""
    from perf_selector.selector.evaluation.replay import own_models_said

    def project(name, decided_for):
        said = {"model": "xgboost", "policy": "model", "commits": 25, "summary": "this project's xgboost decides",
                "decided_for": decided_for, "shipped_decided_for": ["b"] if not decided_for else []}
        return {"name": name, "bundles": {"own": {"retrained_every": 25, "trained": {"0": None, "25": said}}}}

    lines = own_models_said([project("lz4", []), project("snappy", ["a"]), project("zlib", []),
                             {"name": "in-sample", "bundles": {"own": {"in_sample": True}}}])
    assert len(lines) == 2
    assert lines[0].startswith("lz4, zlib: the own model (retrained every 25 commits on the past alone) never learnt")
    assert lines[1].startswith("snappy: the own model (retrained every 25 commits on the past alone) decided from commit 25")


def test_a_project_without_a_change_renders_runs_per_change_as_missing():
    """A history with no change has no runs per change: the document holds null (NaN in JSON), and
    the Markdown says "-" rather than failing after the whole walk (a store of 2,240 decisions
    and no change, Mbed TLS's, did)."""
    from perf_selector.selector.evaluation.replay import markdown

    def row(policy, runs):
        return {"policy": policy, "decisions": 2240, "runs": runs, "run_share": runs / 2240, "time_share": runs / 2240,
                "runs_per_change": None, "changes": 0, "at_commit": 0, "late": 0, "never": 0,
                "mean_commits_later": None, "max_commits_later": None, "project": "quiet"}

    document = {"created": "2026-11-29T14:00:00+00:00", "held_out": True,
                "projects": [{"name": "quiet", "bundles": {}, "changes": [],
                              "summary": [row("always", 2240), row("executed-changed", 14), row("shipped", 12)]}]}
    text = markdown(json.loads(json.dumps(document)))
    assert "| quiet | executed-changed | 2240 | 0.006 | - | 0.006 | 0 | 0 | 0 | - | 0 |" in text


def _summary_row(project, policy, decisions, runs, changes, late=0, mean_later=None):
    return {"policy": policy, "decisions": decisions, "runs": runs, "run_share": runs / decisions,
            "time_share": runs / decisions, "runs_per_change": runs / changes if changes else None, "changes": changes,
            "at_commit": changes - late, "late": late, "never": 0, "mean_commits_later": mean_later,
            "max_commits_later": mean_later, "project": project}


def _project(name, *rows):
    return {"name": name, "bundles": {}, "changes": [], "summary": list(rows)}


def test_a_project_walked_again_replaces_its_rows_and_the_others_keep_theirs():
    """A corpus is walked a few stores at a time: `--join` keeps one document for all of them."""
    from perf_selector.collectors.errors import UserError
    from perf_selector.selector.evaluation.replay import joined

    earlier = {"created": "2026-11-28T10:00:00+00:00", "held_out": True,
               "projects": [_project("lz4", _summary_row("lz4", "shipped", 680, 90, 9)),
                            _project("zlib", _summary_row("zlib", "shipped", 948, 95, 12))]}
    later = {"created": "2026-11-29T10:00:00+00:00", "held_out": True,
             "projects": [_project("janet", _summary_row("janet", "shipped", 900, 60, 2)),
                          _project("lz4", _summary_row("lz4", "shipped", 680, 86, 9))]}
    document = joined(earlier, later)
    assert [p["name"] for p in document["projects"]] == ["lz4", "zlib", "janet"]
    assert document["projects"][0]["summary"][0]["runs"] == 86  # walked again
    assert document["created"] == later["created"]
    with pytest.raises(UserError, match="do not join"):
        joined(earlier, {**later, "held_out": False})


def test_the_pooled_rows_add_runs_and_changes_over_the_projects_walked_under_each_policy():
    """Runs per change pooled is the corpus's runs over its changes (not a mean of ratios), late
    changes' mean is weighed by each project's late changes, and a policy one project lacks gets
    no pooled row (it would pool fewer projects than it says)."""
    from perf_selector.selector.evaluation.replay import markdown, pooled_frame

    document = {"created": "2026-11-29T10:00:00+00:00", "held_out": True, "projects": [
        _project("a", _summary_row("a", "executed-changed", 100, 30, 3), _summary_row("a", "own", 100, 20, 3, 1, 4.0)),
        _project("b", _summary_row("b", "executed-changed", 300, 10, 1), _summary_row("b", "shipped", 300, 5, 1))]}
    document = json.loads(json.dumps(document))
    pooled = pooled_frame(document).set_index("policy")
    assert list(pooled.index) == ["executed-changed"]
    row = pooled.loc["executed-changed"]
    assert (row["decisions"], row["changes"], row["runs_per_change"], row["run_share"]) == (400, 4, 10.0, 0.1)
    assert "| all 2 | executed-changed | 400 | 0.100 | 10.000 | - | 4 | 4 | 0 | - | 0 |" in markdown(document)

    late = {"created": "x", "projects": [
        _project("a", _summary_row("a", "own", 100, 20, 3, 1, 4.0)), _project("b", _summary_row("b", "own", 300, 9, 4, 3, 2.0))]}
    row = pooled_frame(json.loads(json.dumps(late))).iloc[0]
    assert (row["late"], row["mean_commits_later"], row["max_commits_later"]) == (4, 2.5, 4.0)
    assert pooled_frame({"created": "x", "projects": late["projects"][:1]}).empty


def test_evaluate_replay_joins_its_project_into_a_kept_document(history, tmp_path):
    root = history[0]
    kept = tmp_path / "replay.json"
    kept.write_text(json.dumps({"created": "2026-11-01T00:00:00+00:00", "held_out": False, "projects": [
        _project("elsewhere", *(_summary_row("elsewhere", policy, 50, 5, 1)
                                for policy in ("always", "executed-changed", "shipped")))]}))
    markdown_path = tmp_path / "evaluation.md"
    result = run_selector("evaluate", "--replay", str(root / ".selector"), "--out", str(tmp_path / "out"),
                          "--join", str(kept), "--markdown", str(markdown_path))
    assert result.returncode == 0, result.stderr
    document = json.loads(kept.read_text())
    assert [p["name"] for p in document["projects"]][0] == "elsewhere" and len(document["projects"]) == 2
    # the walked project's rows as its own run wrote them, and the Markdown from the joined document
    walked = json.loads((tmp_path / "out" / "replay.json").read_text())["projects"][0]
    assert document["projects"][1] == json.loads(json.dumps(walked))
    text = markdown_path.read_text()
    assert "| elsewhere | shipped | 50 |" in text and "| all 2 | executed-changed |" in text
    assert "What the `shipped` policy's bundle decided:" in text  # the walked project's bundle, with its reason

    # a document of held-out rows is not joined with rows of one bundle: said before the walk
    kept.write_text(json.dumps({**document, "held_out": True}))
    result = run_selector("evaluate", "--replay", str(root / ".selector"), "--out", str(tmp_path / "again"),
                          "--join", str(kept))
    assert result.returncode != 0 and "--held-out" in result.stderr
    assert not (tmp_path / "again" / "replay.json").exists()


def test_a_shipped_bundle_that_steps_aside_says_why_in_the_replays_markdown():
    """With --held-out each project has a bundle of its own: one held out may step aside where the
    others prune, and the Markdown says which and why; the others share a line; a project walked
    before the document recorded the reason says nothing."""
    from perf_selector.selector.evaluation.replay import shipped_models_said

    def project(name, policy, summary=None):
        shipped = {"policy": policy} | ({"summary": summary} if summary else {})
        return {"name": name, "bundles": {"shipped": shipped}}

    lines = shipped_models_said([
        project("lz4", "model-within-rule", "the shipped xgboost decides (within the rule): ..."),
        project("janet", "executed-changed", "the executed-changed rule decides: the shipped xgboost steps aside (it did "
                                             "worse than the rule on cjson)"),
        project("zlib", "model-within-rule", "the shipped xgboost decides (within the rule): ..."),
        project("old", "model-within-rule")])
    assert lines == ["lz4, zlib: the shipped model decided (its policy: model-within-rule)",
                     "janet: the executed-changed rule decides: the shipped xgboost steps aside (it did worse than the "
                     "rule on cjson)"]


def test_evaluate_replay_refuses_to_join_into_what_is_not_a_replay_document(history, tmp_path):
    """A wrong --join path fails at once with one line, before the walk, and is left as it was."""
    root = history[0]
    for text in ("not json at all", json.dumps({"projects": []})):
        kept = tmp_path / "replay.json"
        kept.write_text(text)
        result = run_selector("evaluate", "--replay", str(root / ".selector"), "--out", str(tmp_path / "out"),
                              "--join", str(kept))
        assert result.returncode != 0 and "not a replay document" in result.stderr
        assert "Traceback" not in result.stderr
        assert kept.read_text() == text and not (tmp_path / "out" / "replay.json").exists()
