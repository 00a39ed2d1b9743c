"""Temporary files a command keeps until it ends, removed however it ends.

`select` keeps a copy of a binary it built in a clean worktree past the worktree (the
features align its code).  `atexit` alone removed it only on a normal teardown, and the push
path ends without one (os._exit, for speed: selector/cli.py), as does a process stopped by
SIGTERM: a day of selections left folders holding binaries in the temporary directory.  The
CLI calls `remove_all` on every way out, SIGTERM and SIGINT included.
"""

from __future__ import annotations

import atexit
import shutil
from pathlib import Path

_kept: list[Path] = []


def remove_at_exit(path: Path) -> Path:
    """`path` (a file or folder) is removed when the command ends; returns it."""
    _kept.append(Path(path))
    return path


def remove_all() -> None:
    while _kept:
        path = _kept.pop()
        if path.is_dir():
            shutil.rmtree(path, ignore_errors=True)
        else:
            path.unlink(missing_ok=True)


atexit.register(remove_all)  # a command run in-process (the tests' CliRunner, the notebooks) ends this way
