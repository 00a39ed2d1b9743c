"""`selector collect` end to end: real git worktrees, real builds, the store, resuming."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pandas as pd
import pytest

from perf_selector.selector.onboarding.sample_history import commit_all, make_sample_history, sample_cflags
from perf_selector.storage.store import Store
from tests.helpers import comparable_tables, run_selector
from tests.helpers import selector_command


def collect(project: Path, *arguments: str) -> dict:
    result = run_selector("collect", "--repo", str(project), "--format", "json", *arguments)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


@pytest.fixture
def project(tmp_path) -> tuple[Path, list]:
    commits = make_sample_history(tmp_path / "project", sample_cflags("-O1"), benchmarks=False)
    return tmp_path / "project", commits


def test_collect_stores_every_commit_and_resumes_without_rebuilding(project):
    root, commits = project
    first = collect(root, "-n", "3")
    assert first["summary"]["built"] == 3 and first["summary"]["commits"] == 3
    full = collect(root)
    assert full["summary"] == {**full["summary"], "commits": len(commits), "built": len(commits) - 3, "already_stored": 3, "failed": 0}
    again = collect(root, "--jobs", "2")
    assert again["summary"]["built"] == 0 and again["summary"]["already_stored"] == len(commits)

    store = Store(root / ".selector")
    table = store.read("commits").to_pandas().set_index("sha")
    assert set(table.index) == {c.sha for c in commits}
    assert (table["build_status"] == "ok").all() and table["binary_sha256"].str.len().eq(64).all()
    assert list(table.loc[commits[1].sha, "parents"]) == [commits[0].sha]
    functions = store.read("functions").to_pandas()
    assert functions.groupby("commit")["name"].apply(set).loc[commits[-1].sha] >= {"main", "checksum", "clamp_value"}
    assert not functions.duplicated(["commit", "name"]).any()
    # The comment-only commit builds a binary with the same code: its analysis is reused.
    assert table.loc[commits[1].sha, "content_digest"] == table.loc[commits[0].sha, "content_digest"]
    # Build files changed only in the flags commit.
    assert table["build_config"].nunique() == 2
    assert (Path(root) / ".git" / "worktrees").exists() is False or not any((Path(root) / ".git" / "worktrees").iterdir())

    # A damaged file is named; deleted, the next collection collects its commit again.
    damaged = root / ".selector" / "functions" / f"{commits[4].sha}.parquet"
    data = bytearray(damaged.read_bytes())
    data[len(data) // 2] ^= 0xFF
    damaged.write_bytes(bytes(data))
    result = run_selector("features", "--repo", str(root), "--output", str(root.parent / "t.parquet"))
    assert result.returncode == 2 and damaged.name in result.stderr and "re-collect" in result.stderr
    damaged.unlink()
    healed = collect(root)
    assert healed["summary"]["built"] == 1 and healed["summary"]["already_stored"] == len(commits) - 1
    assert len(Store(root / ".selector").read("functions")) == len(functions)


def test_failed_and_timed_out_builds_are_recorded_and_collection_goes_on(project):
    root, commits = project
    (root / "src" / "kernels.c").write_text((root / "src" / "kernels.c").read_text() + "\nthis is not C;\n")
    broken = commit_all(root, "Break the build")
    (root / "src" / "kernels.c").write_text((root / "src" / "kernels.c").read_text().replace("\nthis is not C;\n", "\n"))
    fixed = commit_all(root, "Fix the build")
    summary = collect(root, f"{commits[-1].sha}..HEAD")
    assert summary["summary"]["built"] == 1 and summary["summary"]["failed"] == 1
    assert summary["failures"][0]["commit"] == broken and "exit status" in summary["failures"][0]["reason"]
    assert summary["summary"]["compiled"] + summary["summary"]["builds_reused"] == summary["summary"]["built"]
    listed = subprocess.run(selector_command("collect", "--failures", "--repo", str(root)), capture_output=True, text=True)
    assert listed.returncode == 0 and broken[:12] in listed.stdout and "build" in listed.stdout, listed.stderr
    assert "--retry-failed" in listed.stderr
    # the reason is the compiler's error, not make's echo of it at the end of the output
    as_json = subprocess.run(selector_command("collect", "--failures", "--format", "json", "--repo", str(root)),
                             capture_output=True, text=True)
    reason = next(f["reason"] for f in json.loads(as_json.stdout)["failures"] if f["commit"] == broken)
    assert "error" in reason and "kernels.c" in reason and "***" not in reason, reason
    row = Store(root / ".selector").read_one("commits", broken).to_pandas().iloc[0]
    assert row["build_status"] == "failed" and "error" in row["build_log_tail"]
    assert not Store(root / ".selector").has("functions", broken) and Store(root / ".selector").has("functions", fixed)

    slow = root / "slow.toml"
    slow.write_text((root / "selector.toml").read_text().replace('command = "make -s prog"', 'command = "sleep 30"').replace("timeout = 120", "timeout = 1"))
    started = time.monotonic()
    result = collect(root, "--config", str(slow), "--store", str(root / "slow-store"), "-n", "1")
    assert time.monotonic() - started < 20
    assert "timed out after 1 s" in result["failures"][0]["reason"]


def test_first_parent_and_full_graph_differ_on_a_merge(project):
    root, commits = project
    git = lambda *a: subprocess.run(["git", *a], cwd=root, check=True, capture_output=True, text=True).stdout.strip()
    git("checkout", "-q", "-b", "topic", commits[-2].sha)
    (root / "NOTES").write_text("side branch\n")
    side = commit_all(root, "Side branch note")
    git("checkout", "-q", "main")
    git("-c", "user.name=a", "-c", "user.email=a@b", "merge", "-q", "--no-ff", "-m", "Merge topic", "topic")
    merge = git("rev-parse", "HEAD")
    mainline = collect(root, "--first-parent", "-n", "3", "--store", str(root / "fp"))
    assert side not in Store(root / "fp").keys("commits") and merge in Store(root / "fp").keys("commits")
    collect(root, "-n", "3", "--store", str(root / "full"))
    assert side in Store(root / "full").keys("commits")
    assert mainline["summary"]["commits"] == 3


@pytest.mark.slow
def test_a_killed_collection_resumes_to_the_same_store(project, tmp_path):
    root, commits = project
    config = root / "slow.toml"
    config.write_text((root / "selector.toml").read_text().replace('command = "make -s prog"', 'command = "make -s prog && sleep 1"'))
    process = subprocess.Popen(
        selector_command("collect", "--repo", str(root), "--config", str(config), "--store", str(tmp_path / "killed")),
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )
    deadline = time.monotonic() + 120
    while len(list((tmp_path / "killed" / "commits").glob("*.parquet")) if (tmp_path / "killed" / "commits").exists() else []) < 3:
        assert time.monotonic() < deadline and process.poll() is None
        time.sleep(0.1)
    os.killpg(process.pid, signal.SIGKILL)
    process.wait()
    stored = len(Store(tmp_path / "killed").keys("commits"))
    assert 3 <= stored < len(commits)
    resumed = collect(root, "--config", str(config), "--store", str(tmp_path / "killed"))
    assert resumed["summary"]["already_stored"] == stored and resumed["summary"]["built"] == len(commits) - stored
    collect(root, "--config", str(config), "--store", str(tmp_path / "clean"))
    killed, clean = comparable_tables(Store(tmp_path / "killed")), comparable_tables(Store(tmp_path / "clean"))
    for table in killed:
        pd.testing.assert_frame_equal(killed[table], clean[table], check_like=True)
