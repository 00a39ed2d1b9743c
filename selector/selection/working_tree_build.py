"""The developer's own build: whether the binary in the working tree is the pushed commit's.

The pre-push hook would otherwise build the commit from scratch in a clean worktree (19 s
on LevelDB) although the developer has usually just built it.  The working tree's
`[project] binary` stands for the commit when nothing could have changed since it was
built: the commit is HEAD, no tracked file differs from it, and the binary is newer than
every tracked file.  Untracked files are not looked at; a build whose flags differ from
`[build] command` reads as a changed build configuration, and select then runs everything.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from perf_selector.collectors.repository import Repository


@dataclass(frozen=True)
class WorkingTreeBuild:
    binary: Path | None  # the working tree's binary, when it is the commit's
    note: str  # what was decided, and why: one line for the hook's output


def working_tree_build(repository: Repository, sha: str, binary: str) -> WorkingTreeBuild:
    """Whether `binary` (the configured path, relative to the top) in the working tree was built
    from commit `sha`'s files; when not, the note says why, the first reason found."""
    name = binary
    path = repository.top / binary
    head = repository.resolve("HEAD")
    if head != sha:
        return _not_used(f"{sha[:12]} is not the checked-out commit, {(head or 'none')[:12]}")
    if repository.has_uncommitted_changes():
        return _not_used("the working tree has uncommitted changes")
    if not path.is_file():
        return _not_used(f"there is no {name} in the working tree")
    built = path.stat().st_mtime_ns
    newest = _newest_tracked_file(repository, exclude=binary) or _commit_time(repository, sha)
    if newest[0] >= built:
        return _not_used(f"{name} is older than {newest[1]}")
    return WorkingTreeBuild(path, f"using the working tree's {name} for {sha[:12]} (built after its files last changed)")


def _not_used(why: str) -> WorkingTreeBuild:
    return WorkingTreeBuild(None, f"not using the working tree's build: {why}")


def _newest_tracked_file(repository: Repository, exclude: str) -> tuple[int, str] | None:
    """(mtime in ns, path) of the most recently modified tracked file, the binary left out.
    lstat: a symbolic link's own time, since following it may leave the tree."""
    newest = None
    for relative in repository.tracked_files():
        if relative == exclude:
            continue
        try:
            modified = os.lstat(repository.top / relative).st_mtime_ns
        except FileNotFoundError:  # deleted but not staged would be an uncommitted change: a race
            continue
        if newest is None or modified > newest[0]:
            newest = (modified, relative)
    return newest


def _commit_time(repository: Repository, sha: str) -> tuple[int, str]:
    """A tree with no tracked file to compare with: the commit's own time stands in."""
    commit = repository.commit(sha)
    return int(commit.author_time.timestamp() * 1e9), f"the commit ({commit.author_time:%Y-%m-%d %H:%M})"
