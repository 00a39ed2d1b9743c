"""Numbered slots that processes claim through lock files (worktree paths, run contexts).

A slot is held by an exclusive ``flock`` on its lock file for as long as the returned
file stays open; a process that dies, even by SIGKILL, releases its slots with it, so a
later claim simply reuses them (file_lock.lock_if_free).  A holder that is done removes its lock file while still
holding it (file_lock.remove_held), so nothing is left behind in the temporary directory; a
claim that locked a file removed meanwhile sees it and tries the slot again.
"""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import IO, Callable

from perf_selector.collectors.file_lock import lock_if_free


def claim_slot(lock_file: Callable[[int], Path], limit: int | None = None) -> tuple[int, IO] | None:
    """The first slot number whose lock file (`lock_file(number)`) no live process holds, and
    that file, held; None when all `limit` slots are held."""
    for slot in itertools.count() if limit is None else range(limit):
        handle = lock_if_free(lock_file(slot))
        if handle is not None:
            return slot, handle
    return None
