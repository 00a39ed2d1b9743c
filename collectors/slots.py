"""Numbered slots that processes claim through lock files (worktree paths, run contexts).

A slot is held by an exclusive ``flock`` on its lock file for as long as the returned
file stays open; a process that dies, even by SIGKILL, releases its slots with it, so a
later claim simply reuses them.
"""

from __future__ import annotations

import fcntl
import itertools
from pathlib import Path
from typing import IO, Callable


def claim_slot(lock_file: Callable[[int], Path], limit: int | None = None) -> tuple[int, IO] | None:
    """The first slot number whose lock file (`lock_file(number)`) no live process holds, and
    that file, held; None when all `limit` slots are held."""
    for slot in itertools.count() if limit is None else range(limit):
        handle = open(lock_file(slot), "w")
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.close()
            continue
        return slot, handle
    return None
