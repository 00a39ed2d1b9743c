"""A lock file that does not outlive its lock.

Commits of one binary identity measure one at a time (selector/collection/measurement_reuse.py); their
lock files, one a binary identity, were never removed, and a day of collections left hundreds
of empty ones in the temporary directory.  Here the file is removed while still held, and a
waiter that opened it before the removal notices it locked a file no longer at that path.
"""

from __future__ import annotations

import fcntl
import os
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Iterator


@contextmanager
def held_and_removed(path: Path) -> Iterator[None]:
    """An exclusive lock on the file `path`, removed when the lock is let go.  A waiter that
    opened the file before its removal has locked a file no longer at `path`: it sees that (the
    path names another file, or none) and locks the path's new file instead."""
    handle = _locked(path)
    try:
        yield
    finally:
        remove_held(path, handle)


def _locked(path: Path) -> IO:
    """The file `path`, made if missing, held.  A stop while waiting leaves no file that no
    process holds: the file this wait made is removed unless another process has it."""
    handle = None
    try:
        while True:
            handle = open(path, "a")
            fcntl.flock(handle, fcntl.LOCK_EX)
            if still_at(path, handle):
                return handle
            handle.close()
    except BaseException:
        if handle is not None:
            handle.close()
        _remove_if_free(path)
        raise


def _remove_if_free(path: Path) -> None:
    handle = lock_if_free(path)
    if handle is not None:  # else its holder removes it
        remove_held(path, handle)


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


def still_at(path: Path, handle: IO) -> bool:
    """Whether the open file `handle` is still the file at `path` (not removed, not replaced):
    a lock taken on a file its holder has since removed guards nothing."""
    try:
        here, mine = os.stat(path), os.fstat(handle.fileno())
    except FileNotFoundError:
        return False
    return (here.st_ino, here.st_dev) == (mine.st_ino, mine.st_dev)


def remove_held(path: Path, handle: IO) -> None:
    """Remove the lock file `path` while `handle` still holds it, then let the lock go: whoever
    locks next makes the file anew."""
    Path(path).unlink(missing_ok=True)
    handle.close()
