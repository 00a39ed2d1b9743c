"""Reading a repository with git's own commands, for the push path.

The rest of the tool reads git through GitPython (:mod:`collectors.git_history`).
`selector select` runs on every push and needs four answers from git: the top of the
checkout, one commit, its tree's file list and its ancestry.  Each is one ``git``
process here, as GitPython would run them too; importing GitPython alone took
40-90 ms of a selection.
"""

from __future__ import annotations

import os
import subprocess
from datetime import datetime
from pathlib import Path

from collectors.commit_graph import CommitInfo
from collectors.errors import UserError


def top_level(path: str | os.PathLike[str]) -> Path:
    """The top of the checkout that holds `path` (the error of ``open_repository`` otherwise)."""
    result = _git(path, "rev-parse", "--show-toplevel", check=False) if Path(path).is_dir() else None
    if result is None or result.returncode != 0 or not result.stdout.strip():
        raise UserError(f"{path}: not inside a git repository")
    return Path(result.stdout.strip())


def commit(top: str | os.PathLike[str], revision: str) -> CommitInfo | None:
    """The commit `revision` names, or None when it names none."""
    found = _git(top, "rev-parse", "--verify", "--quiet", "--end-of-options", f"{revision}^{{commit}}", check=False)
    if found.returncode != 0:
        return None
    sha = found.stdout.strip()
    sha, parents, author_time, subject = _git(top, "show", "-s", "--format=%H%x00%P%x00%aI%x00%s", sha).stdout.rstrip("\n").split("\0", 3)
    return CommitInfo(sha=sha, parents=tuple(parents.split()), author_time=datetime.fromisoformat(author_time), subject=subject)


def tree_listing(top: str | os.PathLike[str], sha: str) -> str:
    """``git ls-tree -r``: mode, type, object and path of every file of the commit's tree."""
    return _git(top, "ls-tree", "-r", sha).stdout


def ancestry(top: str | os.PathLike[str], sha: str, max_count: int) -> dict[str, list[str]]:
    """The parents of `sha` and of its ancestors, newest first, at most `max_count` commits."""
    parents = {}
    for line in _git(top, "rev-list", "--parents", f"--max-count={max_count}", sha).stdout.splitlines():
        commit_sha, *its_parents = line.split()
        parents[commit_sha] = its_parents
    return parents


def is_ancestor(top: str | os.PathLike[str], ancestor: str, sha: str) -> bool:
    """Is `ancestor` reachable from `sha` (``git merge-base --is-ancestor``; a commit is its own)?"""
    return _git(top, "merge-base", "--is-ancestor", ancestor, sha, check=False).returncode == 0


def _git(directory: str | os.PathLike[str], *arguments: str, check: bool = True) -> subprocess.CompletedProcess:
    try:
        return subprocess.run(["git", "-C", str(directory), *arguments], capture_output=True, text=True, check=check)
    except subprocess.CalledProcessError as error:
        raise UserError(f"git {' '.join(arguments[:2])} failed in {directory}: {error.stderr.strip()}") from None
    except FileNotFoundError:
        raise UserError("git is not installed (or not on PATH)") from None
