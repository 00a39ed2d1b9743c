"""Selection in daily use, end to end through the real CLI on a copy of the collected
demo history: select, the pre-push hook, GitHub outputs, record, bisect."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

from perf_selector.selector.onboarding.sample_history import commit_all
from tests.helpers import selector_command
from tests.helpers.schema import SCHEMA

pytestmark = pytest.mark.slow


def cli(*arguments: str, cwd: Path | None = None, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(selector_command(*arguments), capture_output=True, text=True, cwd=cwd,
                          env={**os.environ, **(env or {})})


def git(root: Path, *arguments: str) -> str:
    return subprocess.run(["git", *arguments], cwd=root, check=True, capture_output=True, text=True).stdout.strip()


@pytest.fixture(scope="module")
def project(evolved_sample, tmp_path_factory):
    """A private copy of the collected project (history, store), with a trained bundle."""
    source, _ = evolved_sample
    root = tmp_path_factory.mktemp("selecting") / "project"
    shutil.copytree(source, root, symlinks=True)
    trained = cli("train", "--repo", str(root), "--no-tracking")
    assert trained.returncode == 0, trained.stderr
    return root


def _edit(root: Path, relative: str, old: str, new: str, message: str) -> str:
    path = root / relative
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))
    return commit_all(root, message)


def _select(root: Path, revision: str = "HEAD", *extra: str) -> tuple[int, dict]:
    result = cli("select", revision, "--repo", str(root), "--format", "json", *extra)
    assert result.returncode in (0, 1), result.stderr
    document = json.loads(result.stdout)
    jsonschema.validate(document, SCHEMA)
    return result.returncode, document


def _decision(document: dict, name: str) -> dict:
    return next(b for b in document["benchmarks"] if b["name"] == name)


def test_hot_change_selects_the_benchmark_that_reaches_it(project):
    root = project
    git(root, "checkout", "-q", "-b", "hot", "main")
    mix = (root / "src" / "tuning.h").read_text().split("#define CHECKSUM_MIX ")[1][0]
    _edit(root, "src/tuning.h", f"#define CHECKSUM_MIX {mix}", f"#define CHECKSUM_MIX {1 - int(mix)}", "toggle mixing")
    status, document = _select(root)
    assert status == 0 and "checksum" in document["run"]
    checksum = _decision(document, "checksum")
    assert checksum["drivers"][0]["function"] == "checksum" and checksum["drivers"][0]["rank_instructions"] == 100
    assert "checksum" in checksum["reason"]
    for other in ("fib", "sort"):  # they never execute checksum
        assert _decision(document, other)["decision"] == "skip" and not _decision(document, other)["drivers"]
    # where the demo's own model tied the executed-changed rule in its own backtest, the rule decides,
    # says so in one line (select's notes) and shows no model's score; a model that beat the rule
    # explains by its probability
    if any(note.startswith("the executed-changed rule decides:") for note in document["notes"]):
        assert checksum["reason"].startswith("executed-changed rule: changed code executed") and "checksum" in checksum["reason"]
        assert checksum["probability"] is None and checksum["threshold"] is None
    else:
        assert "checksum changed (rank 100" in checksum["reason"] and checksum["probability"] >= checksum["threshold"]
    text = cli("select", "--repo", str(root))
    assert text.returncode == 0 and "checksum: checksum (changed, rank 100" in text.stdout


def test_comment_only_change_selects_nothing(project):
    root = project
    git(root, "checkout", "-q", "-b", "comment", "main")
    _edit(root, "src/kernels.c", "/* Hot path of the \"fib\" benchmark. */", "/* Hot path of the \"fib\" benchmark (recursive). */",
          "Comment fib")
    status, document = _select(root)
    assert status == 1 and document["run"] == [] and len(document["skip"]) == 4
    assert all(not b["drivers"] for b in document["benchmarks"])


def test_build_flag_change_selects_everything_and_says_so(project):
    root = project
    git(root, "checkout", "-q", "-b", "flags", "main")
    makefile = (root / "Makefile").read_text()
    level = "-O3" if "-O3" in makefile else "-O2"
    _edit(root, "Makefile", level, "-O1", "Build at -O1")
    status, document = _select(root)
    assert status == 0 and sorted(document["run"]) == ["checksum", "fib", "sort", "weights"]
    assert all("build configuration" in b["reason"] for b in document["benchmarks"])


def test_github_actions_outputs(project, tmp_path):
    root = project
    git(root, "checkout", "-q", "hot")
    outputs, summary = tmp_path / "out", tmp_path / "summary.md"
    result = cli("select", "--repo", str(root), "--format", "github", env={"GITHUB_OUTPUT": str(outputs),
                                                                         "GITHUB_STEP_SUMMARY": str(summary)})
    assert result.returncode == 0, result.stderr
    lines = dict(line.split("=", 1) for line in outputs.read_text().splitlines())
    assert "checksum" in json.loads(lines["run"]) and json.loads(lines["matrix"])["benchmark"] == json.loads(lines["run"])
    assert lines["any"] == "true" and "| checksum | run |" in summary.read_text()


def test_a_given_binary_decides_as_the_commit_built_by_select(project, tmp_path):
    """--binary, the CI and hook path (analysed by the compiled core while Python imports),
    gives the decisions select gives when it builds the commit itself; a file that is not
    a usable binary is a one-line error, and nothing stored is touched."""
    from tests.helpers import assert_one_line_error

    root = project
    git(root, "checkout", "-q", "hot")
    checkout = tmp_path / "checkout"
    git(root, "worktree", "add", "-q", "--detach", str(checkout), "hot")
    subprocess.run(["make", "-s", "prog"], cwd=checkout, check=True, capture_output=True)
    built = tmp_path / "prog"
    shutil.copy(checkout / "prog", built)
    git(root, "worktree", "remove", "--force", str(checkout))

    _, by_select = _select(root)
    status, given = _select(root, "HEAD", "--binary", str(built))
    assert status == 0 and given["binary"] == str(built) and given["run"] == by_select["run"]
    assert [(b["name"], b["decision"], b["probability"], b["drivers"]) for b in given["benchmarks"]] == \
        [(b["name"], b["decision"], b["probability"], b["drivers"]) for b in by_select["benchmarks"]]

    def stored() -> dict:
        store = root / ".selector"
        return {str(path.relative_to(store)): (path.stat().st_size, path.stat().st_mtime_ns) for path in store.rglob("*.parquet")}

    before = stored()
    text = tmp_path / "notes.txt"
    text.write_text("not a program\n")
    assert_one_line_error(cli("select", "--repo", str(root), "--binary", str(text)), "not an ELF file")
    assert_one_line_error(cli("select", "--repo", str(root), "--binary", str(tmp_path / "missing")), "no such file")
    assert stored() == before


def test_the_push_path_imports_neither_pandas_nor_scikit_learn(evolved_sample, tmp_path):
    """select reads the store as Arrow tables, builds the features from them and scores with
    the ONNX form: pandas (0.3-0.5 s to import) and scikit-learn are never loaded.  The collected
    sample has no model of its own (the `project` fixture's steps aside for the rule, which
    scores nothing): the shipped cross-project model decides, within the rule as `[select]
    policy` asks (the shipped bundle may step aside for the rule, and then scores nothing)."""
    project = tmp_path / "project"
    shutil.copytree(evolved_sample[0], project, symlinks=True)
    assert not (project / ".selector" / "models").exists()
    config = project / "selector.toml"
    assert "[select]" not in config.read_text()
    config.write_text(config.read_text() + '\n[select]\npolicy = "within-rule"\n')
    result = cli("select", "HEAD~1", "--repo", str(project), "--format", "json", env={"PYTHONPROFILEIMPORTTIME": "1"})
    assert result.returncode in (0, 1), result.stderr
    imported = {line.rsplit("|", 1)[1].strip() for line in result.stderr.splitlines() if line.startswith("import time:")}
    assert {"pyarrow.lib", "perf_selector.features.builder", "onnxruntime"} <= imported  # the features were built and scored
    assert any(b["probability"] is not None for b in json.loads(result.stdout)["benchmarks"])
    # "pandas" alone is the import pyarrow attempted and was refused; a loaded pandas imports pandas.core
    assert not [module for module in imported if module.split(".")[0] in ("pandas", "sklearn", "xgboost", "skops", "git")
                and module != "pandas"]


def test_missing_model_or_ancestor_means_run(project, tmp_path):
    root = project
    git(root, "checkout", "-q", "comment")
    status, document = _select(root, "HEAD", "--bundle", str(tmp_path / "nothing"))
    assert status == 0 and len(document["run"]) == 4
    assert all("no trained model" in b["reason"] for b in document["benchmarks"])
    empty_store = tmp_path / "empty-store"
    empty_store.mkdir()
    status, document = _select(root, "HEAD", "--store", str(empty_store))
    assert status == 0 and all("no ancestor" in b["reason"] for b in document["benchmarks"])
    # A mistyped --store is an error naming it, never an empty store made on the spot.
    for command in (["select", "HEAD"], ["features", "--output", str(tmp_path / "t.parquet")], ["backtest"]):
        result = cli(*command, *([] if command[0] == "features" else ["--repo", str(root)]), "--store", str(tmp_path / "typo"))
        assert result.returncode == 2 and "typo: no store here" in result.stderr and "Traceback" not in result.stderr
    assert not (tmp_path / "typo").exists()


def test_pre_push_hook_is_advisory_and_keeps_the_existing_hook(project, tmp_path):
    root = project
    git(root, "checkout", "-q", "hot")
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    git(root, "remote", "add", "origin", str(remote))
    hooks = Path(git(root, "rev-parse", "--git-path", "hooks"))
    hooks = hooks if hooks.is_absolute() else root / hooks
    hooks.mkdir(parents=True, exist_ok=True)
    (hooks / "pre-push").write_text("#!/bin/sh\necho the team hook ran\n")
    (hooks / "pre-push").chmod(0o755)

    installed = cli("hook", "install", "--repo", str(root))
    assert installed.returncode == 0 and "previous hook runs first" in installed.stdout
    push = subprocess.run(["git", "push", "-q", "origin", "hot"], cwd=root, capture_output=True, text=True)
    assert push.returncode == 0, push.stderr
    output = push.stdout + push.stderr
    assert "the team hook ran" in output and "run: checksum" in output.replace("run: checksum ", "run: checksum")

    # selector failing inside the hook never blocks the push
    (root / ".selector" / "commits").rename(root / ".selector" / "commits-away")
    git(root, "checkout", "-q", "comment")
    push = subprocess.run(["git", "push", "-q", "origin", "comment"], cwd=root, capture_output=True, text=True)
    (root / ".selector" / "commits-away").rename(root / ".selector" / "commits")
    assert push.returncode == 0, push.stderr

    # Strict: a refused (here: edited) model bundle blocks the push; advisory, it runs everything.
    manifest = root / ".selector" / "models" / "manifest.json"
    original = manifest.read_text()
    manifest.write_text(original.replace('"threshold": ', '"threshold": 1', 1))
    status, document = _select(root, "HEAD")
    assert status == 0 and len(document["run"]) == 4 and any("model bundle refused" in n for n in document["notes"])
    strict = cli("select", "HEAD", "--repo", str(root), "--strict")
    assert strict.returncode == 3 and "model bundle refused" in strict.stderr
    assert cli("hook", "install", "--repo", str(root), "--strict").returncode == 0
    push = subprocess.run(["git", "push", "-q", "origin", "hot:strict"], cwd=root, capture_output=True, text=True)
    assert push.returncode != 0 and "model bundle refused" in push.stdout + push.stderr
    manifest.write_text(original)
    push = subprocess.run(["git", "push", "-q", "origin", "hot:strict"], cwd=root, capture_output=True, text=True)
    assert push.returncode == 0, push.stderr

    removed = cli("hook", "uninstall", "--repo", str(root))
    assert removed.returncode == 0 and "previous hook is back" in removed.stdout
    assert (hooks / "pre-push").read_text() == "#!/bin/sh\necho the team hook ran\n"


def test_record_makes_the_next_known_version(project):
    root = project
    git(root, "checkout", "-q", "hot")
    head = git(root, "rev-parse", "HEAD")
    recorded = cli("record", "--repo", str(root), "--format", "json")
    assert recorded.returncode == 0, recorded.stderr
    labels = {row["benchmark"]: row for row in json.loads(recorded.stdout)["labels"]}
    assert labels["checksum"]["positive"] >= 1
    _edit(root, "src/table.c", "#include \"kernels.h\"\n", "#include \"kernels.h\"\n/* after the recorded one */\n", "note")
    _, document = _select(root)
    assert {b["against"] for b in document["benchmarks"]} == {head} and all(b["hops"] == 1 for b in document["benchmarks"])


def test_record_imports_google_benchmark_results(project, tmp_path):
    root = project
    git(root, "checkout", "-q", "comment")
    results = tmp_path / "gbench.json"
    results.write_text(json.dumps({
        "context": {"date": "2026-11-22", "num_cpus": 2},
        "benchmarks": [
            *({"name": "fib", "run_name": "fib", "run_type": "iteration", "repetitions": 3, "iterations": 100,
               "real_time": 1200.0 + i, "cpu_time": 1190.0, "time_unit": "us"} for i in range(3)),
            {"name": "fib_mean", "run_name": "fib", "run_type": "aggregate", "aggregate_name": "mean",
             "real_time": 1201.0, "cpu_time": 1190.0, "time_unit": "us"},
        ],
    }))
    # fib is configured as callgrind instructions: seconds are refused, never compared with counts
    refused = cli("record", "--repo", str(root), "--import", str(results))
    assert refused.returncode == 2 and "never compared" in refused.stderr and "Traceback" not in refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1
    timed = tmp_path / "timed.toml"  # a configuration where CI's harness times fib and sort
    timed.write_text((root / "selector.toml").read_text().replace(
        'name = "fib"\ncommand = "{binary} fib 24"\nmetric = "instructions"', 'name = "fib"\ncommand = "{binary} fib 24"\nmetric = "wall_time"'
    ).replace('name = "sort"\ncommand = "{binary} sort 3000"\nmetric = "instructions"',
              'name = "sort"\ncommand = "{binary} sort 3000"\nmetric = "wall_time"'))
    assert timed.read_text().count('metric = "wall_time"') == 2
    # In a copy: recording relabels the store under that configuration, where fib and sort
    # have no history of their new metric (the tests that follow read the project's labels).
    copy = tmp_path / "timed-project"
    shutil.copytree(root, copy, symlinks=True)
    recorded = cli("record", "--repo", str(copy), "--config", str(timed), "--import", str(results), "--format", "json")
    assert recorded.returncode == 0, recorded.stderr
    import pandas as pd

    stored = pd.read_parquet(copy / ".selector" / "measurements" / f"{git(copy, 'rev-parse', 'HEAD')}.parquet")
    assert sorted(stored["value"]) == pytest.approx([0.0012, 0.001201, 0.001202]) and set(stored["metric"]) == {"wall_time"}
    # a second CI job's results for another benchmark join the first ones
    other = tmp_path / "sort.json"
    other.write_text(json.dumps({"version": "1.0", "metadata": {"name": "sort"},
                                 "benchmarks": [{"runs": [{"values": [0.5, 0.51, 0.52]}]}]}))
    assert cli("record", "--repo", str(copy), "--config", str(timed), "--import", str(other)).returncode == 0
    stored = pd.read_parquet(copy / ".selector" / "measurements" / f"{git(copy, 'rev-parse', 'HEAD')}.parquet")
    assert stored.groupby("benchmark").size().to_dict() == {"fib": 3, "sort": 3}
    assert set(stored["unit"]) == {"s"}
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"context": {}, "benchmarks": [{"name": "nosuch", "real_time": 1, "time_unit": "ns"}]}))
    refused = cli("record", "--repo", str(root), "--import", str(bad), "--force")
    assert refused.returncode == 2 and "nosuch" in refused.stderr and "Traceback" not in refused.stderr


def test_bisect_ranks_the_culprit_first(project):
    root = project
    subjects = git(root, "log", "--format=%H %s", "main").splitlines()
    position = next(i for i, line in enumerate(subjects) if line.endswith("fib: change the recursion cutoff"))
    culprit = subjects[position].split()[0]
    good = subjects[min(position + 6, len(subjects) - 1)].split()[0]
    result = cli("bisect", good, "main", "--benchmark", "fib", "--repo", str(root), "--format", "json")
    assert result.returncode == 0, result.stderr
    order = json.loads(result.stdout)["order"]
    import pandas as pd

    labels = pd.read_parquet(root / ".selector" / "labels")
    changed_fib = set(labels[(labels["benchmark"] == "fib") & (labels["label"] == True)]["new"])  # noqa: E712
    suspects = {row["commit"] for row in order}
    assert culprit in suspects and culprit in changed_fib
    culprits = suspects & changed_fib
    # the commits that really changed fib are the first to test
    assert {row["commit"] for row in order[: len(culprits)]} == culprits
    assert all("fib" in row["drivers"] for row in order[: len(culprits)])


def test_select_computes_the_features_training_computes(project, monkeypatch):
    """For every stored commit, the features `select` builds from the few commits it loads
    equal the training table's row for the same tuple (no train/serve skew), including
    the recent change rate, which needs the times of every labelled commit."""
    import numpy as np

    import perf_selector.features.builder  # noqa: F401 - loads the module

    from perf_selector import features
    from perf_selector.features.catalogue import FEATURE_NAMES
    from perf_selector.selector.config import load_config
    from perf_selector.selector.evaluation.feature_table import feature_table
    from perf_selector.selector.selection.selection import select
    from perf_selector.storage.store import Store

    store = Store(project / ".selector")
    config = load_config(project / "selector.toml")
    training = feature_table(store).set_index(["new", "old", "benchmark"])
    built = []  # (tuples, rows) of each call of the builder
    rows = features.builder.FeatureBuilder.rows

    def recording(self, tuples):
        tuples = list(tuples)
        built.append((tuples, rows(self, tuples)))
        return built[-1][1]

    monkeypatch.setattr(features.builder.FeatureBuilder, "rows", recording)
    compared = 0
    for new in training.index.get_level_values("new").unique():
        select(project, config, store, new)
        for (sha, old, benchmark, _, _), values in zip(*built[-1]):
            expected = training.loc[(sha, old, benchmark), FEATURE_NAMES].to_numpy(float)
            np.testing.assert_allclose(values, expected, err_msg=f"{sha[:12]} {benchmark}")
            compared += 1
    assert compared >= len(training) // 2
    assert training["benchmark_recent_change_rate"].gt(0).any()  # the test would not see a wrong rate otherwise


def test_against_must_be_an_ancestor_other_than_the_commit(project):
    root = project
    for revision, against, said in (("main", "main", "the commit itself"), ("main~3", "main", "not an ancestor")):
        result = cli("select", revision, "--repo", str(root), "--against", against)
        assert result.returncode == 2 and said in result.stderr and "Traceback" not in result.stderr
    status, document = _select(root, "main", "--against", "main~2")
    assert {b["hops"] for b in document["benchmarks"]} == {2}


def test_run_benchmarks_reports_inside_the_one_json_document(project, tmp_path):
    """`--run-benchmarks --format json` (a CI step) prints one JSON document: the runs of the
    selected benchmarks against their ancestor come inside it, as `compared`, not as a table
    after it.  (--run-benchmarks needs the collect extra: the full install runs it.)"""
    root = project
    git(root, "checkout", "-q", "hot")
    result = subprocess.run([sys.executable, "-m", "perf_selector", "select", "HEAD", "--repo", str(root), "--run-benchmarks",
                             "--bundle", str(tmp_path / "no-model"), "--format", "json"], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    jsonschema.validate(document, SCHEMA)
    assert sorted(row["benchmark"] for row in document["compared"]) == sorted(document["run"]) and len(document["run"]) == 4
    against = {b["name"]: b["against"] for b in document["benchmarks"]}
    assert all(against[row["benchmark"]].startswith(row["against"]) and isinstance(row["changed"], bool) and row["old"] > 0
               for row in document["compared"])
    text = subprocess.run([sys.executable, "-m", "perf_selector", "select", "HEAD", "--repo", str(root), "--run-benchmarks",
                           "--bundle", str(tmp_path / "no-model")], capture_output=True, text=True)
    assert text.returncode == 0 and "the selected benchmarks against the ancestor" in text.stdout
