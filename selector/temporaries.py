"""Temporary files a command keeps until it ends, removed however it ends.

`select` keeps a copy of a binary it built in a clean worktree past the worktree (the
features align its code).  `atexit` alone removed it only on a normal teardown, and the push
path ends without one (os._exit, for speed: selector/cli.py), as does a process stopped by
SIGTERM: a day of selections left folders holding binaries in the temporary directory.  The
CLI calls `remove_all` on every way out, SIGTERM and SIGINT included.  A folder is recorded
as it is made and forgotten only once removed, with stops held back in between
(collectors/interrupts.py): a SIGTERM that came as one was being removed left it behind.
"""

from __future__ import annotations

import atexit
import shutil
import tempfile
from pathlib import Path

from perf_selector.collectors.interrupts import interrupts_deferred

_kept: list[Path] = []


def temporary_directory(prefix: str) -> Path:
    """A new folder in the temporary directory, removed when the command ends."""
    with interrupts_deferred():
        path = Path(tempfile.mkdtemp(prefix=prefix))
        _kept.append(path)
    return path


def remove_all() -> None:
    with interrupts_deferred():
        while _kept:
            shutil.rmtree(_kept[-1], ignore_errors=True)
            _kept.pop()


atexit.register(remove_all)  # a command run in-process (the tests' CliRunner, the notebooks) ends this way
