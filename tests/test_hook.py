"""The pre-push hook on a developer's machine: it selects with the developer's own build
when the working tree holds the pushed commit's, says why when it does not, advises a
hook user when the commit does not build, and keeps the store out of git."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from perf_selector.collectors.repository import Repository
from perf_selector.selector.onboarding.sample_history import make_sample_history
from perf_selector.selector.selection.working_tree_build import working_tree_build
from tests.helpers import run_selector


def git(root: Path, *arguments: str) -> str:
    return subprocess.run(["git", *arguments], cwd=root, check=True, capture_output=True, text=True).stdout.strip()


@pytest.fixture
def project(tmp_path) -> Path:
    """The sample project (nothing collected: every benchmark runs), pushable to a bare remote."""
    root = tmp_path / "project"
    make_sample_history(root)
    (root / ".selector").mkdir()
    git(tmp_path, "init", "-q", "--bare", str(tmp_path / "remote.git"))
    git(root, "remote", "add", "origin", str(tmp_path / "remote.git"))
    return root


def _build(root: Path) -> None:
    subprocess.run(["make", "-s", "prog"], cwd=root, check=True, capture_output=True)


def _touch_after(path: Path, reference: Path) -> None:
    """Make `path` newer than `reference`, whatever the file system's time resolution."""
    later = reference.stat().st_mtime_ns + 2_000_000_000
    os.utime(path, ns=(later, later))


def test_the_working_tree_build_stands_for_head_only_when_nothing_changed_since(project):
    root = project
    repository = Repository.open(root)
    head = repository.resolve("HEAD")

    def decided(sha: str = head) -> tuple[Path | None, str]:
        found = working_tree_build(repository, sha, "prog")
        return found.binary, found.note

    assert decided() == (None, "not using the working tree's build: there is no prog in the working tree")
    _build(root)
    binary, note = decided()
    assert binary == root / "prog" and note.startswith("using the working tree's prog")
    (root / "notes.txt").write_text("untracked files are not the commit's\n")
    assert decided()[0] == root / "prog"
    assert decided(repository.resolve("HEAD~1")) == \
        (None, f"not using the working tree's build: {repository.resolve('HEAD~1')[:12]} is not the checked-out commit, {head[:12]}")
    _touch_after(root / "src" / "table.c", root / "prog")  # saved again after the build (same text): rebuild first
    assert decided() == (None, "not using the working tree's build: prog is older than src/table.c")
    _touch_after(root / "prog", root / "src" / "table.c")
    (root / "src" / "table.c").write_text((root / "src" / "table.c").read_text() + "/* edited */\n")
    _touch_after(root / "prog", root / "src" / "table.c")
    assert decided() == (None, "not using the working tree's build: the working tree has uncommitted changes")
    git(root, "checkout", "-q", "src/table.c")
    _touch_after(root / "prog", root / "src" / "table.c")
    assert decided()[0] == root / "prog"


def test_the_hook_selects_with_the_developers_build_and_falls_back_saying_why(project):
    root = project
    assert run_selector("hook", "install", "--repo", str(root)).returncode == 0
    _build(root)
    push = subprocess.run(["git", "push", "-q", "origin", "main"], cwd=root, capture_output=True, text=True)
    output = push.stdout + push.stderr
    assert push.returncode == 0 and "note: using the working tree's prog" in output, output
    assert "clean worktree" not in output and "run: checksum sort fib weights" in output

    _touch_after(root / "src" / "kernels.c", root / "prog")
    push = subprocess.run(["git", "push", "-q", "origin", "main:other"], cwd=root, capture_output=True, text=True)
    output = push.stdout + push.stderr
    assert push.returncode == 0, output
    assert "note: not using the working tree's build: prog is older than src/kernels.c" in output
    assert "in a clean worktree" in output and "run: checksum sort fib weights" in output

    (root / "prog").write_text("not a program\n")  # newer than every tracked file, but no binary
    _touch_after(root / "prog", root / "src" / "kernels.c")  # which was dated 2 s ahead above
    push = subprocess.run(["git", "push", "-q", "origin", "main:third"], cwd=root, capture_output=True, text=True)
    output = push.stdout + push.stderr
    assert push.returncode == 0 and "note: using the working tree's prog" in output, output
    assert "note: not using the working tree's build:" in output and "not an ELF file" in output
    assert "in a clean worktree" in output and "run: checksum sort fib weights" in output


def test_a_failed_build_in_the_hook_says_what_a_hook_user_can_do(project):
    root = project
    config = root / "selector.toml"
    config.write_text(config.read_text().replace('command = "make -s prog"', 'command = "make -s no-such-target"'))
    assert run_selector("hook", "install", "--repo", str(root)).returncode == 0
    push = subprocess.run(["git", "push", "-q", "origin", "main"], cwd=root, capture_output=True, text=True)
    output = push.stdout + push.stderr
    assert push.returncode == 0, output  # advisory: the push goes on
    assert "not using the working tree's build: the working tree has uncommitted changes" in output
    assert "failed (exit status 2)" in output and "command: make -s no-such-target" in output
    assert "No rule to make target 'no-such-target'" in output.split("command:")[1]  # the build's output follows
    assert "git push --no-verify" in output and "--binary" not in output
    assert run_selector("hook", "install", "--repo", str(root), "--strict").returncode == 0
    push = subprocess.run(["git", "push", "-q", "origin", "main:strict"], cwd=root, capture_output=True, text=True)
    assert push.returncode != 0 and "git push --no-verify" in push.stdout + push.stderr


def test_hook_install_has_git_ignore_the_store_once(tmp_path):
    root = tmp_path / "fresh"
    root.mkdir()
    git(root, "init", "-q")
    installed = run_selector("hook", "install", "--repo", str(root))
    assert installed.returncode == 0 and "created .gitignore with /.selector/" in installed.stdout
    assert (root / ".gitignore").read_text().splitlines()[-1] == "/.selector/"
    (root / ".gitignore").write_text((root / ".gitignore").read_text() + "build/")  # no final newline
    again = run_selector("hook", "install", "--repo", str(root))
    assert "git ignores /.selector/ already" in again.stdout
    assert (root / ".gitignore").read_text().count(".selector") == 1

    (root / ".gitignore").write_text("build/")
    added = run_selector("hook", "install", "--repo", str(root), "--store", str(root / "stores" / "main"))
    assert "added /stores/main/ to .gitignore" in added.stdout
    assert (root / ".gitignore").read_text().splitlines()[0] == "build/"
    (root / "stores" / "main").mkdir(parents=True)
    (root / "stores" / "main" / "commits.parquet").write_text("")
    assert git(root, "status", "--porcelain", "--untracked-files=all") == "?? .gitignore"

    before = (root / ".gitignore").read_text()
    elsewhere = run_selector("hook", "install", "--repo", str(root), "--store", str(tmp_path / "shared-store"))
    assert f"the store is outside the repository ({tmp_path / 'shared-store'})" in elsewhere.stdout
    assert run_selector("hook", "install", "--repo", str(root), "--store", "s3://bucket/store").returncode == 0
    assert (root / ".gitignore").read_text() == before


def test_the_hook_says_how_many_commits_back_it_compares_and_that_their_changes_are_included(tmp_path):
    """Only an older commit is collected: the pushed commit is compared with it, and the hook
    says so, rather than showing the change of a commit in between as the pushed one's."""
    from perf_selector.selector.onboarding.sample_history import DEFAULT_STEPS

    root = tmp_path / "project"
    commits = make_sample_history(root, steps=DEFAULT_STEPS[:4])  # initial, neutral, hot (checksum), cold, add-top
    git(tmp_path, "init", "-q", "--bare", str(tmp_path / "remote.git"))
    git(root, "remote", "add", "origin", str(tmp_path / "remote.git"))
    collected = run_selector("collect", commits[1].sha, "-n", "1", "--no-calibrate", "--repo", str(root))
    assert collected.returncode == 0, collected.stderr
    assert run_selector("hook", "install", "--repo", str(root)).returncode == 0
    _build(root)
    push = subprocess.run(["git", "push", "-q", "origin", "main"], cwd=root, capture_output=True, text=True)
    output = push.stdout + push.stderr
    assert push.returncode == 0, output
    head, against = commits[-1].sha, commits[1].sha
    assert f"{against[:10]} (3 back)" in output, output
    said = " ".join(output.split())  # the note, whatever the terminal's width wrapped
    assert (f"every benchmark is compared with {against[:10]}, 3 commits back (the closest collected ancestor): the "
            f"changes of the 2 commits between it and {head[:10]} are included, not only {head[:10]}'s own") in said, output
    assert "checksum" in output.split("run:")[-1]  # the change two commits back (checksum's) still runs it


def test_a_hook_an_older_version_wrote_is_found_and_installing_again_mends_it(tmp_path):
    """A hook from before the perf_selector namespace runs `python -m perf_selector`, which fails
    every push: the hook module finds it (doctor fails on it) and `install` rewrites it."""
    from perf_selector.selector.selection.hook import MARKER, OLD_MODULE, hook_script, install, outdated_hook

    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    repository = Repository.open(tmp_path)
    hook = repository.hooks_directory() / "pre-push"
    hook.parent.mkdir(parents=True, exist_ok=True)
    hook.write_text(f"#!/bin/sh\n{MARKER}\nprintf '%s\\n' \"$input\" | python3 -m {OLD_MODULE} hook run -- \"$@\"\n")
    assert outdated_hook(repository) == hook
    install(repository)
    assert outdated_hook(repository) is None
    assert hook.read_text() == hook_script(False, False, None)
    assert "-m perf_selector hook run" in hook.read_text()
