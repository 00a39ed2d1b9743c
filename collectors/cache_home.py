"""The user's cache directory for what the tool keeps between commands (compiler shims,
the machine's measurement lock): ``$XDG_CACHE_HOME/perf-selector``, else
``~/.cache/perf-selector``, where ccache and pip keep theirs.  The temporary directory
holds only what a command removes when it ends (issue 49)."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def cache_home() -> Path:
    """The tool's folder in the user's cache directory, made if missing; where that cannot be
    made (a CI container whose HOME is read-only or absent), one of the user's own in the
    temporary directory."""
    base = os.environ.get("XDG_CACHE_HOME") or ""
    root = Path(base) if os.path.isabs(base) else Path.home() / ".cache"  # the XDG spec ignores a relative path
    folder = root / "perf-selector"
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError:
        folder = Path(tempfile.gettempdir()) / f"perf-selector-cache-{os.getuid()}"
        folder.mkdir(parents=True, exist_ok=True)
    return folder
