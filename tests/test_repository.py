"""Every command reads git through collectors.repository (git's own commands); its answers
are checked here against GitPython's, the design card's git library, kept as the oracle."""

from __future__ import annotations

import subprocess
from pathlib import Path

import git as gitpython
import pytest

from perf_selector.collectors.errors import UserError
from perf_selector.collectors.repository import GitCommandFailed, Repository

ENVIRONMENT = {"GIT_AUTHOR_NAME": "a", "GIT_AUTHOR_EMAIL": "a@example.com", "GIT_COMMITTER_NAME": "a",
               "GIT_COMMITTER_EMAIL": "a@example.com", "GIT_AUTHOR_DATE": "2024-03-01T12:00:00+02:00",
               "GIT_COMMITTER_DATE": "2024-03-01T12:00:00+02:00", "PATH": "/usr/bin:/bin"}


def git(root, *arguments: str) -> str:
    return subprocess.run(["git", "-C", str(root), *arguments], check=True, capture_output=True, text=True,
                          env=ENVIRONMENT).stdout.strip()


@pytest.fixture
def history(tmp_path):
    """main: first, b.mk (with a multi-line message), a merge of side (a.c, non-ASCII subject)."""
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    (root / "Makefile").write_text("all:\n")
    git(root, "add", "Makefile")
    git(root, "commit", "-q", "-m", "first")
    git(root, "checkout", "-q", "-b", "side")
    (root / "a.c").write_text("int a;\n")
    git(root, "add", "a.c")
    git(root, "commit", "-q", "-m", "side: a.c, größer")
    git(root, "checkout", "-q", "main")
    (root / "sub").mkdir()
    (root / "sub" / "b.mk").write_text("B=1\n")
    git(root, "add", "sub")
    git(root, "commit", "-q", "-m", "main: b.mk\nwrapped first paragraph\n\nbody")
    git(root, "merge", "-q", "--no-ff", "side", "-m", "merge side, with a subject: and a colon")
    return root


def test_commits_agree_with_gitpython(history):
    repository = Repository.open(history / "sub")
    theirs = gitpython.Repo(history)
    assert repository.top == history.resolve()
    assert repository.git_dir == (history / ".git").resolve() == Path(theirs.git_dir).resolve()
    for options in ({}, {"first_parent": True}, {"max_count": 2}, {"since": "2024-02-01"}):
        ours = repository.commits("HEAD", **options)
        expected = list(reversed(list(theirs.iter_commits("HEAD", **options))))
        assert [(c.sha, c.parents, c.subject, c.author_time) for c in ours] == [
            (c.hexsha, tuple(p.hexsha for p in c.parents), c.summary, c.authored_datetime) for c in expected]
    assert any(c.subject == "main: b.mk" for c in repository.commits())  # the first line, not the folded paragraph
    for revision in ("HEAD", "HEAD^2", "main~1"):
        found = repository.commit(revision)
        assert found.sha == theirs.commit(revision).hexsha == repository.resolve(revision)
        assert found.subject == theirs.commit(revision).summary
    assert len(repository.commit("HEAD").parents) == 2
    assert repository.commit("no-such-branch") is None and repository.commit("HEAD:Makefile") is None
    assert repository.tree_listing("HEAD") == theirs.git.ls_tree("-r", "HEAD")
    head = repository.resolve("HEAD")
    ancestry = repository.ancestry(head, 100)
    assert {sha: tuple(parents) for sha, parents in ancestry.items()} == {
        c.hexsha: tuple(p.hexsha for p in c.parents) for c in theirs.iter_commits("HEAD")}
    assert repository.first_parent_ancestors(head, 5) == theirs.git.rev_list("--first-parent", head).split()[1:]
    side = repository.resolve("side")
    assert repository.is_ancestor(side, head) and not repository.is_ancestor(head, side)
    assert repository.changed_paths(repository.resolve("main~1"), head) == ["a.c"]
    assert repository.hooks_directory() == (history / ".git" / "hooks").resolve()


def test_range_and_errors(history, tmp_path):
    repository = Repository.open(history)
    assert [c.subject for c in repository.commits("main~1..main")] == ["side: a.c, größer", "merge side, with a subject: and a colon"]
    with pytest.raises(UserError, match="cannot list commits of 'nope'"):
        repository.commits("nope")
    with pytest.raises(UserError, match="-n must be at least 1"):
        repository.commits(max_count=0)
    with pytest.raises(GitCommandFailed, match="git worktree remove failed"):
        repository.remove_worktree(tmp_path / "not-a-worktree")
    for outside in (tmp_path / "elsewhere", tmp_path / "missing"):
        if outside.name == "elsewhere":
            outside.mkdir()
        with pytest.raises(UserError, match="not inside a git repository"):
            Repository.open(outside)


def test_worktrees_are_made_and_removed(history, tmp_path):
    repository = Repository.open(history)
    checkout = tmp_path / "checkout"
    repository.add_worktree(checkout, repository.resolve("side"))
    assert (checkout / "a.c").exists() and not (checkout / "sub").exists()
    assert Repository.open(checkout).top == checkout.resolve()
    repository.remove_worktree(checkout)
    assert not checkout.exists()
    repository.prune_worktrees()
    assert str(checkout) not in git(history, "worktree", "list")
