"""`selector hook install --config FILE`: a configuration kept outside the repository is
recorded in the hook, so a real `git push` selects with it (no copy or symlink at the top);
and what the push prints fits a terminal (no line over 200 characters)."""

from __future__ import annotations

import subprocess
from pathlib import Path

from perf_selector.selector.onboarding.sample_history import make_sample_history
from tests.helpers import run_selector


def git(root: Path, *arguments: str) -> str:
    return subprocess.run(["git", *arguments], cwd=root, check=True, capture_output=True, text=True).stdout.strip()


def test_the_hook_reads_the_configuration_it_was_installed_with(tmp_path):
    root = tmp_path / "project"
    make_sample_history(root)
    outside = tmp_path / "elsewhere" / "selector.toml"
    outside.parent.mkdir()
    (root / "selector.toml").rename(outside)
    git(root, "rm", "-q", "--cached", "selector.toml")
    git(root, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "configuration kept outside")
    (root / ".selector").mkdir()
    git(tmp_path, "init", "-q", "--bare", str(tmp_path / "remote.git"))
    git(root, "remote", "add", "origin", str(tmp_path / "remote.git"))

    refused = run_selector("hook", "install", "--repo", str(root), "--config", str(tmp_path / "missing.toml"))
    assert refused.returncode != 0 and "missing.toml" in refused.stderr
    installed = run_selector("hook", "install", "--repo", str(root), "--config", str(outside))
    assert installed.returncode == 0, installed.stderr
    assert f"--config {outside}" in (root / ".git" / "hooks" / "pre-push").read_text()
    push = subprocess.run(["git", "push", "-q", "origin", "main"], cwd=root, capture_output=True, text=True)
    output = push.stdout + push.stderr
    assert push.returncode == 0 and "run: checksum sort fib weights" in output, output
    assert "no selector.toml" not in output
    # what a user reads on every push fits a terminal
    assert max(map(len, output.splitlines())) <= 200, max(output.splitlines(), key=len)
