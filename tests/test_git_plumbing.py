"""The push path reads git with git's own commands: the same answers GitPython gives."""

from __future__ import annotations

import subprocess
from datetime import timezone

import pytest

from collectors import git_plumbing
from collectors.errors import UserError
from collectors.git_history import open_repository, select_commits


def git(root, *arguments: str) -> str:
    environment = {"GIT_AUTHOR_NAME": "a", "GIT_AUTHOR_EMAIL": "a@example.com", "GIT_COMMITTER_NAME": "a",
                   "GIT_COMMITTER_EMAIL": "a@example.com", "GIT_AUTHOR_DATE": "2024-03-01T12:00:00+02:00",
                   "GIT_COMMITTER_DATE": "2024-03-01T12:00:00+02:00", "PATH": "/usr/bin:/bin"}
    return subprocess.run(["git", "-C", str(root), *arguments], check=True, capture_output=True, text=True,
                          env=environment).stdout.strip()


def test_commit_tree_and_ancestry_agree_with_gitpython(tmp_path):
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    (root / "Makefile").write_text("all:\n")
    git(root, "add", "Makefile")
    git(root, "commit", "-q", "-m", "first")
    git(root, "checkout", "-q", "-b", "side")
    (root / "a.c").write_text("int a;\n")
    git(root, "add", "a.c")
    git(root, "commit", "-q", "-m", "side: a.c")
    git(root, "checkout", "-q", "main")
    (root / "sub").mkdir()
    (root / "sub" / "b.mk").write_text("B=1\n")
    git(root, "add", "sub")
    git(root, "commit", "-q", "-m", "main: b.mk")
    git(root, "merge", "-q", "--no-ff", "side", "-m", "merge side, with a subject: and a colon")

    assert git_plumbing.top_level(root / "sub") == root.resolve()
    repository = open_repository(root)
    expected = {c.sha: c for c in select_commits(repository, "HEAD")}
    for revision in ("HEAD", "HEAD^2", "main~1", min(expected)):
        found = git_plumbing.commit(root, revision)
        theirs = expected[repository.commit(revision).hexsha]
        assert (found.sha, found.parents, found.subject) == (theirs.sha, theirs.parents, theirs.subject)
        assert found.author_time.astimezone(timezone.utc) == theirs.author_time
    assert len(git_plumbing.commit(root, "HEAD").parents) == 2
    assert git_plumbing.commit(root, "no-such-branch") is None and git_plumbing.commit(root, "HEAD:Makefile") is None
    assert git_plumbing.tree_listing(root, "HEAD") == repository.git.ls_tree("-r", "HEAD") + "\n"
    ancestry = git_plumbing.ancestry(root, git_plumbing.commit(root, "HEAD").sha, 100)
    assert set(ancestry) == set(expected) and all(tuple(ancestry[sha]) == expected[sha].parents for sha in expected)


def test_outside_a_repository_is_the_usual_one_line_error(tmp_path):
    with pytest.raises(UserError, match="not inside a git repository"):
        git_plumbing.top_level(tmp_path)
    with pytest.raises(UserError, match="not inside a git repository"):
        git_plumbing.top_level(tmp_path / "missing")
