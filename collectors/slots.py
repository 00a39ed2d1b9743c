"""Numbered slots that processes claim through lock files (worktree paths, run contexts).

A slot is held by an exclusive ``flock`` on its lock file for as long as the returned
file stays open; a process that dies, even by SIGKILL, releases its slots with it, so a
later claim simply reuses them.  A holder that is done removes its lock file while still
holding it (file_lock.remove_held), so nothing is left behind in the temporary directory; a
claim that locked a file removed meanwhile sees it and tries the slot again.
"""

from __future__ import annotations

import fcntl
import itertools
from pathlib import Path
from typing import IO, Callable

from perf_selector.collectors.file_lock import still_at


def claim_slot(lock_file: Callable[[int], Path], limit: int | None = None) -> tuple[int, IO] | None:
    """The first slot number whose lock file (`lock_file(number)`) no live process holds, and
    that file, held; None when all `limit` slots are held."""
    for slot in itertools.count() if limit is None else range(limit):
        handle = lock_if_free(lock_file(slot))
        if handle is not None:
            return slot, handle
    return None


def lock_if_free(path: Path) -> IO | None:
    """The lock file `path`, locked, when no live process holds it; None when one does."""
    while True:
        try:
            handle = open(path, "a")
        except FileNotFoundError:  # the last holder removed the emptied folder as we came
            path.parent.mkdir(parents=True, exist_ok=True)
            continue
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.close()
            return None
        if still_at(path, handle):
            return handle
        handle.close()  # its holder removed it as we locked: the path's new file decides
