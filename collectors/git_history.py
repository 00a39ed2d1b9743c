"""Choosing the commits to collect, with GitPython."""

from __future__ import annotations

import os
from datetime import datetime, timezone

import git

from collectors.commit_graph import CommitInfo
from collectors.errors import UserError

__all__ = ["CommitInfo", "open_repository", "select_commits"]


def open_repository(path: str | os.PathLike[str]) -> git.Repo:
    try:
        return git.Repo(path, search_parent_directories=True)
    except (git.NoSuchPathError, git.InvalidGitRepositoryError):
        raise UserError(f"{path}: not inside a git repository") from None


def select_commits(
    repository: git.Repo,
    revision: str = "HEAD",
    since: str | None = None,
    max_count: int | None = None,
    first_parent: bool = False,
) -> list[CommitInfo]:
    """Commits reachable from `revision` (a sha, branch or ``A..B`` range), oldest first.

    ``max_count`` keeps the newest N; ``since`` is any date git understands
    ("2 weeks ago", "2024-01-31"); ``first_parent`` follows only the mainline.
    """
    options: dict[str, object] = {"first_parent": first_parent}
    if since:
        options["since"] = since
    if max_count is not None:
        if max_count < 1:
            raise UserError(f"-n must be at least 1 (got {max_count})")
        options["max_count"] = max_count
    try:
        commits = list(repository.iter_commits(revision, **options))
    except (git.GitCommandError, ValueError) as error:
        detail = getattr(error, "stderr", "") or str(error)
        raise UserError(f"cannot list commits of {revision!r}: {detail.strip().splitlines()[-1] if detail.strip() else error}") from None
    return [
        CommitInfo(
            sha=c.hexsha,
            parents=tuple(p.hexsha for p in c.parents),
            author_time=datetime.fromtimestamp(c.authored_date, tz=timezone.utc),
            subject=c.summary if isinstance(c.summary, str) else c.summary.decode("utf-8", "replace"),
        )
        for c in reversed(commits)
    ]
