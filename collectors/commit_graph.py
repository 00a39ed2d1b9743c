"""Walking the commit graph: the closest ancestor that has what we need."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from datetime import datetime
from typing import Callable, Mapping, Sequence


@dataclass(frozen=True)
class CommitInfo:
    sha: str
    parents: tuple[str, ...]
    author_time: datetime
    subject: str


def closest_ancestor(sha: str, parents: Mapping[str, Sequence[str]], usable: Callable[[str], bool]) -> tuple[str, int] | None:
    """The nearest proper ancestor of `sha` for which `usable` holds, and its distance in hops.

    Breadth-first over all parents (merges included), first parents first on ties;
    commits that are not usable (failed builds, no measurements) are walked through.
    Ancestors missing from `parents` end the walk on that path.
    """
    queue = deque((parent, 1) for parent in parents.get(sha, ()))
    seen = set()
    while queue:
        candidate, hops = queue.popleft()
        if candidate in seen:
            continue
        seen.add(candidate)
        if usable(candidate):
            return candidate, hops
        queue.extend((parent, hops + 1) for parent in parents.get(candidate, ()))
    return None
