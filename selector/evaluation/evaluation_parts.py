"""The finished parts of a `selector evaluate` run, kept so that a run cut off half way resumes.

A corpus evaluation fits thousands of models and takes hours; a stop (a session's end, a
reboot, Ctrl-C) must not throw away the projects already done.  Each unit of work (one
project's own Method 4 backtest, one project held out of the others) is written, as it
finishes, under `<out>/parts/` by a key: a digest of everything its figures depend on
(its projects' names, tuples, features, labels and plans; the models and settings; the
code of the package and the versions of the learning libraries).  A run with the same key
takes the part as it is; anything changed, even one line of code, makes a new key, so a
part is never reused for inputs it was not computed from.
"""

from __future__ import annotations

import hashlib
import json
import os
import pickle
import tempfile
from functools import cache
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

# What holds collectors/ storage/ features/ models/ selector/: the repository's top, or the installed
# perf_selector/ (this file is selector/evaluation/evaluation_parts.py in both).
PACKAGE_ROOT = Path(__file__).resolve().parents[2]
CODE_FOLDERS = ("collectors", "storage", "features", "models", "selector")
LEARNING_LIBRARIES = ("numpy", "pandas", "scikit-learn", "xgboost", "scipy")


def code_files() -> list[Path]:
    """The package's Python sources, in a fixed order."""
    return [path for folder in CODE_FOLDERS for path in sorted((PACKAGE_ROOT / folder).rglob("*.py"))]


@cache
def code_fingerprint() -> str:
    """A digest of the package's Python sources and the learning libraries' versions."""
    digest = hashlib.sha256()
    sources = code_files()
    if not sources:  # a digest of no code would keep every part across any change of it
        raise RuntimeError(f"no Python sources under {PACKAGE_ROOT}: the code fingerprint would not follow the code")
    for path in sources:
        digest.update(str(path.relative_to(PACKAGE_ROOT)).encode())
        digest.update(path.read_bytes())
    for library in LEARNING_LIBRARIES:
        try:
            digest.update(f"{library}=={version(library)}".encode())
        except PackageNotFoundError:
            digest.update(f"{library} absent".encode())
    return digest.hexdigest()


def frame_digest(frame: pd.DataFrame) -> str:
    """A digest of a frame's columns, their types and values, in row order."""
    digest = hashlib.sha256(json.dumps([[str(c), str(t)] for c, t in frame.dtypes.items()]).encode())
    for column in frame.columns:
        values = frame[column]
        try:
            hashed = pd.util.hash_pandas_object(values, index=False).to_numpy()
        except TypeError:  # cells pandas cannot hash (lists, arrays): by their text
            hashed = pd.util.hash_pandas_object(values.map(repr), index=False).to_numpy()
        digest.update(hashed.tobytes())
    return digest.hexdigest()


def project_digest(project) -> str:
    """What a project contributes to an evaluation: its name, tuples with features and labels,
    its Method 4 plan, its benchmarks and minimum effect."""
    data = project.data
    digest = hashlib.sha256(project.name.encode())
    digest.update(frame_digest(data.table).encode())
    digest.update(frame_digest(data.plan.tuples).encode())
    digest.update(json.dumps([data.plan.method, data.plan.parameters, data.plan.leaks_future, data.benchmarks,
                              data.min_effect], sort_keys=True, default=str).encode())
    for split in data.plan.splits:
        digest.update(repr(split.epoch).encode())
        digest.update(np.asarray(split.train).tobytes())
        digest.update(b"|")
        digest.update(np.asarray(split.test).tobytes())
    return digest.hexdigest()


class Parts:
    """The parts of one evaluation's output folder (`<out>/parts/`); with no folder, none kept."""

    def __init__(self, directory: Path | None, reuse: bool = True):
        self.directory = directory
        self.reuse = reuse  # False: compute every part again (and keep the new ones)
        self.taken = 0  # parts read from an earlier run
        self.used: set[str] = set()

    def key(self, kind: str, *inputs: Any) -> str:
        described = json.dumps([kind, code_fingerprint(), *inputs], sort_keys=True, default=str)
        return f"{kind}-{hashlib.sha256(described.encode()).hexdigest()[:24]}"

    def load(self, key: str) -> Any | None:
        """The part stored under `key` by an earlier run, or None (also for one left unreadable)."""
        self.used.add(key)
        if self.directory is None or not self.reuse or not (self.directory / key).is_file():
            return None
        try:
            value = pickle.loads((self.directory / key).read_bytes())
        except Exception:  # written by other library versions that cannot read it back: computed again
            return None
        self.taken += 1
        return value

    def save(self, key: str, value: Any) -> None:
        """Writes the part whole or not at all (a temporary file renamed into place)."""
        if self.directory is None:
            return
        self.directory.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=self.directory, prefix=f".{key}.")
        try:
            with os.fdopen(handle, "wb") as stream:
                pickle.dump(value, stream, protocol=pickle.HIGHEST_PROTOCOL)
            os.replace(temporary, self.directory / key)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise

    def forget_others(self) -> None:
        """Removes the parts this run did not use (kept for other inputs or code): the folder
        holds what the run's results came from, and does not grow run after run."""
        if self.directory is None or not self.directory.is_dir():
            return
        for path in self.directory.iterdir():
            if path.name not in self.used:
                path.unlink()
