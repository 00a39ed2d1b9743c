"""Collecting in less time: warm-ups by metric, runs of identical binaries reused, commits
that change only unaffected paths not built, builds through ccache.  Real gcc, git,
valgrind and ccache."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from perf_selector.selector.onboarding.sample_history import commit_all, make_sample_history
from perf_selector.storage.store import Store
from tests.helpers import selector_command

pytestmark = pytest.mark.slow

WALL_TIME_BENCHMARK = """
[[benchmark]]
name = "fib-time"
command = "{binary} fib 20"
metric = "wall_time"
repetitions = 3
"""


def selector(*arguments: str, environment: dict | None = None) -> dict:
    result = subprocess.run(selector_command(*arguments, "--format", "json"), capture_output=True,
                            text=True, env=environment)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def add_everyday_commits(root: Path) -> dict[str, str]:
    """A CI-only commit, a README-only commit, then a change of the checksum loop."""
    (root / ".github" / "workflows").mkdir(parents=True)
    (root / ".github" / "workflows" / "ci.yml").write_text("on: push\n")
    commits = {"ci": commit_all(root, "CI: run on push")}
    (root / "README.md").write_text("A sample project.\n")
    commits["docs"] = commit_all(root, "Docs: a README")
    kernels = root / "src" / "kernels.c"
    kernels.write_text(kernels.read_text().replace("sum ^= sum >> 7;", "sum ^= (sum >> 7) + 1;"))
    commits["hot"] = commit_all(root, "Checksum: one more addition per byte")
    return commits


@pytest.fixture(scope="module")
def reused_history(tmp_path_factory):
    """The sample history and three everyday commits; the last four collected with -j 2."""
    root = tmp_path_factory.mktemp("reuse") / "project"
    base = make_sample_history(root)
    commits = {"flags": base[-1].sha, **add_everyday_commits(root)}
    selector("calibrate", base[0].sha, "--repo", str(root), "--rounds", "1")
    report = selector("collect", "HEAD~4..HEAD", "--repo", str(root), "-j", "2")
    return root, commits, report


def runs(store: Store, sha: str):
    return store.read_one("measurements", sha).to_pandas().sort_values(["benchmark", "repetition"]).reset_index(drop=True)


def measured_one(store: Store, commits: dict[str, str]) -> tuple[str, str]:
    """(the one that ran, the one that reused) of the flags and docs commits: their binaries are
    identical and, with -j 2, either may reach its benchmarks first (the other waits and reuses)."""
    seconds = {name: store.read_one("commits", commits[name]).to_pandas().iloc[0]["benchmark_seconds"] for name in ("flags", "docs")}
    ran = [name for name, spent in seconds.items() if spent > 0]
    assert len(ran) == 1, seconds
    return ran[0], ({"flags", "docs"} - set(ran)).pop()


def test_a_ci_only_commit_is_not_built_and_takes_its_parents_runs(reused_history):
    root, commits, report = reused_history
    store = Store(root / ".selector")
    row = store.read_one("commits", commits["ci"]).to_pandas().iloc[0]
    parent = store.read_one("commits", commits["flags"]).to_pandas().iloc[0]
    assert row["build_reused_from"] == commits["flags"] and row["build_seconds"] == 0
    assert row["binary_sha256"] == parent["binary_sha256"] and row["content_digest"] == parent["content_digest"]
    assert row["benchmark_seconds"] == 0 and row["benchmarks_reused"] == 4
    ran, _ = measured_one(store, commits)
    mine, theirs = runs(store, commits["ci"]), runs(store, commits["flags"])
    assert (mine["reused_from"] == commits[ran]).all()  # a copy of a copy names the commit that measured
    # Copies to the last digit, wall seconds of each run included: nothing ran again.
    columns = ["benchmark", "repetition", "value", "seconds", "run_order"]
    assert mine[columns].equals(theirs[theirs["repetition"] >= 0][columns].reset_index(drop=True))
    profile = store.read_one("profiles", commits["ci"]).to_pandas()
    assert set(profile["benchmark"]) == {"checksum", "sort", "fib", "weights"}
    assert (profile["reused_from"] == commits[ran]).all()
    assert set(store.read_one("functions", commits["ci"]).to_pandas()["name"]) == set(store.read_one("functions", commits["flags"]).to_pandas()["name"])


def test_a_docs_only_commit_builds_the_same_binary_and_one_of_the_two_runs_nothing(reused_history):
    root, commits, report = reused_history
    store = Store(root / ".selector")
    row = store.read_one("commits", commits["docs"]).to_pandas().iloc[0]
    assert row["build_reused_from"] == "" and row["build_seconds"] > 0  # README.md is not an unaffected path
    # Same code and data; with -j 2 it may have been built in the other worktree slot, whose
    # path its debug information records, so the files' bytes need not be equal.
    assert row["content_digest"] == store.read_one("commits", commits["flags"]).to_pandas().iloc[0]["content_digest"]
    ran, reused = measured_one(store, commits)
    assert store.read_one("commits", commits[reused]).to_pandas().iloc[0]["benchmarks_reused"] == 4
    assert (runs(store, commits[ran])["reused_from"] == "").all()
    copies = runs(store, commits[reused])
    assert (copies["reused_from"] == commits[ran]).all()
    assert copies["seconds"].equals(runs(store, commits[ran]).query("repetition >= 0")["seconds"].reset_index(drop=True))
    labels = store.read_one("labels", commits["docs"]).to_pandas()
    assert not labels["label"].any() and (labels["effect"] == 0).all()


def test_a_commit_whose_binary_differs_runs_everything(reused_history):
    root, commits, report = reused_history
    store = Store(root / ".selector")
    row = store.read_one("commits", commits["hot"]).to_pandas().iloc[0]
    assert row["benchmarks_reused"] == 0 and row["benchmark_seconds"] > 0
    mine = runs(store, commits["hot"])
    assert (mine["reused_from"] == "").all() and set(mine["benchmark"]) == {"checksum", "sort", "fib", "weights"}
    labels = store.read_one("labels", commits["hot"]).to_pandas().set_index("benchmark")
    assert labels.loc["checksum", "label"] and labels.loc["checksum", "effect"] > 0.01
    summary = report["summary"]
    assert summary["measurements_reused"] == 2 and summary["benchmarks_reused"] == 8 and summary["built"] == 4
    assert summary["builds_reused"] == 1
    assert set(report["seconds"]) == {"wall", "build", "benchmarks", "profiling", "tool"}
    assert report["not_reusable"] == {}


def test_a_metric_that_is_not_exact_is_never_reused(tmp_path):
    root = tmp_path / "project"
    base = make_sample_history(root)
    config = root / "selector.toml"
    config.write_text(config.read_text() + WALL_TIME_BENCHMARK)
    commit_all(root, "Also time fib")
    commits = add_everyday_commits(root)
    uncalibrated = selector("collect", "--no-calibrate", "HEAD~2..HEAD", "--repo", str(root), "--store", str(tmp_path / "uncalibrated"))
    assert uncalibrated["summary"]["benchmarks_reused"] == 0
    assert list(uncalibrated["not_reusable"]) == ["not calibrated (selector calibrate shows whether its metric is exact)"]

    selector("calibrate", base[0].sha, "--repo", str(root), "--rounds", "2")
    report = selector("collect", "HEAD~4..HEAD~1", "--repo", str(root))  # fib timed, CI, docs
    store = Store(root / ".selector")
    for sha in (commits["ci"], commits["docs"]):
        measured = store.read_one("measurements", sha).to_pandas()
        timed = measured[measured["benchmark"] == "fib-time"]
        assert len(timed[timed["repetition"] >= 0]) == 3 and (timed["reused_from"] == "").all()
        assert (timed["status"] == "ok").all(), timed["error"].tolist()  # run, on the parent's binary for the CI commit
        # A wall-time benchmark keeps its warm-up by default; instruction counts get none.
        assert (timed["repetition"] == -1).sum() == 1
        assert (measured[measured["benchmark"] != "fib-time"]["reused_from"] != "").all()
    assert report["not_reusable"] == {"its metric is not exact (calibration found A/A runs that differ)": ["fib-time"]}


C_PROJECT = {
    "Makefile": "CFLAGS = -O2 -g\nOBJECTS = main.o work.o util.o\n\nprog: $(OBJECTS)\n\t$(CC) $(CFLAGS) -o prog $(OBJECTS)\n\n"
                "%.o: %.c\n\t$(CC) $(CFLAGS) -c -o $@ $<\n",
    "main.c": "#include <stdio.h>\nlong work(int);\nint util(int);\n"
              "int main(void) { printf(\"%ld\\n\", work(1000) + util(3)); return 0; }\n",
    "work.c": "long work(int n) { long s = 0; for (int i = 0; i < n; i++) s += i * 3; return s; }\n",
    "util.c": "int util(int x) { return x * 7; }\n",
    "selector.toml": '[project]\nbinary = "prog"\n[build]\ncommand = "make -s prog"\n',
}


def test_a_cached_build_gives_the_bytes_of_a_clean_one(tmp_path):
    if shutil.which("ccache") is None:
        if os.environ.get("SELECTOR_REQUIRE_CCACHE"):
            pytest.fail("ccache is required here (SELECTOR_REQUIRE_CCACHE) but not on PATH")
        pytest.skip("ccache is not installed")
    root = tmp_path / "project"
    root.mkdir()
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=root, check=True)
    for name, text in C_PROJECT.items():
        (root / name).write_text(text)
    commit_all(root, "A program of three files")
    for multiplier in (5, 9, 11):  # each commit touches one file of three
        (root / "util.c").write_text(f"int util(int x) {{ return x * {multiplier}; }}\n")
        commit_all(root, f"util: times {multiplier}")
    environment = {**os.environ, "CCACHE_DIR": str(tmp_path / "ccache")}
    cached = selector("collect", "--no-calibrate", "--repo", str(root), "--store", str(tmp_path / "cached"), environment=environment)
    clean = selector("collect", "--no-calibrate", "--repo", str(root), "--store", str(tmp_path / "clean"), "--no-cache", environment=environment)
    assert cached["cache"]["used"] and not clean["cache"]["used"]
    # The first build fills the cache; each later one compiles only the file its commit changed.
    assert cached["cache"]["misses"] == 3 + 3 and cached["cache"]["hits"] == 3 * 2
    assert cached["cache"]["builds_with_hits"] == 3 and clean["cache"]["hits"] == 0
    binaries = [Store(tmp_path / name).read("commits").to_pandas().set_index("sha")["binary_sha256"].sort_index() for name in ("cached", "clean")]
    assert binaries[0].equals(binaries[1]) and binaries[0].nunique() == 4


def test_runs_are_reused_when_nothing_is_profiled(tmp_path):
    root = tmp_path / "project"
    base = make_sample_history(root)
    config = root / "selector.toml"
    config.write_text(config.read_text().replace('tool = "callgrind"', 'tool = "none"'))
    commits = {"flags": base[-1].sha, **add_everyday_commits(root)}
    selector("calibrate", base[0].sha, "--repo", str(root), "--rounds", "1")
    report = selector("collect", "HEAD~4..HEAD~1", "--repo", str(root))  # flags, CI, docs: one at a time
    store = Store(root / ".selector")
    docs = store.read_one("commits", commits["docs"]).to_pandas().iloc[0]
    assert docs["build_reused_from"] == "" and docs["benchmarks_reused"] == 4 and docs["benchmark_seconds"] == 0
    assert (runs(store, commits["docs"])["reused_from"] == commits["flags"]).all()
    assert report["summary"]["measurements_reused"] == 2
