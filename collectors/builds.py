"""Building one commit in its own clean git worktree."""

from __future__ import annotations

import fnmatch
import hashlib
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import git


OK, FAILED = "ok", "failed"
LOG_TAIL_LINES = 40


@dataclass
class BuildResult:
    sha: str
    status: str  # ok | failed
    reason: str  # "" when ok; "exit status 2", "timed out after 900 s", "binary prog not produced"
    log_tail: str
    seconds: float
    binary: Path | None  # the built file, valid until the worktree context closes
    build_config: str  # digest of the build files in the commit's tree


class Worktree:
    """A detached, clean checkout of one commit, removed on exit.

    Its path depends only on the repository and the commit, so building a commit
    again gives the same bytes (compilers record the build directory in debug
    information): a store's binaries are reproducible from run to run.
    """

    def __init__(self, repository: git.Repo, sha: str, parent: str | None = None) -> None:
        self.repository = repository
        self.sha = sha
        repository_key = hashlib.sha256(str(Path(repository.git_dir).resolve()).encode()).hexdigest()[:12]
        self.path = Path(parent or tempfile.gettempdir()) / "selector-worktrees" / repository_key / sha[:16]

    def __enter__(self) -> Path:
        if self.path.exists():  # left by a run that was killed
            self._remove()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.repository.git.worktree("prune")  # forget worktrees whose directories are gone
        # Forced twice: a run killed inside `worktree add` leaves its entry locked.
        self.repository.git.worktree("add", "--detach", "-f", "-f", str(self.path), self.sha)
        return self.path

    def __exit__(self, *exc) -> None:
        self._remove()

    def _remove(self) -> None:
        from git import GitCommandError  # GitPython is imported by those who make worktrees

        try:
            self.repository.git.worktree("remove", "--force", str(self.path))
        except GitCommandError:
            shutil.rmtree(self.path, ignore_errors=True)
            self.repository.git.worktree("prune")


def build_config_digest(repository: git.Repo, sha: str, patterns: list[str]) -> str:
    """Digest of the files that configure the build (Makefile, CMakeLists.txt, ...) at `sha`."""
    return config_files_digest(repository.git.ls_tree("-r", sha), patterns)


def config_files_digest(listing: str, patterns: list[str]) -> str:
    """Digest of the files of a ``git ls-tree -r`` listing whose names match `patterns`."""
    # One regex for all patterns: `select` runs this on every push, and on a tree of 100,000
    # files a fnmatch call per file and pattern takes a second.
    configures = re.compile("|".join(f"(?:{fnmatch.translate(p)})" for p in patterns)).match if patterns else lambda name: None
    digest = hashlib.sha256()
    for line in listing.splitlines():
        meta, path = line.split("\t", 1)
        if configures(os.path.basename(path)):
            digest.update(f"{path} {meta.split()[2]}\n".encode())
    return digest.hexdigest()[:16]


def run_build(checkout: Path, sha: str, command: str, binary: str, timeout: float, build_config: str) -> BuildResult:
    """Run the build command in `checkout`; a failure is a result, not an exception."""
    started = time.monotonic()
    process = subprocess.Popen(
        command, shell=True, cwd=checkout, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
        start_new_session=True,  # so a timeout kills the whole make tree, not just the shell
    )
    try:
        # communicate() waits on the pipe and returns as soon as the build ends (wait(timeout)
        # would poll with sleeps of up to 50 ms, blurring the build's time).
        output, _ = process.communicate(timeout=timeout)
        reason = "" if process.returncode == 0 else f"exit status {process.returncode}"
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        output, _ = process.communicate()
        reason = f"timed out after {timeout:g} s"
    seconds = time.monotonic() - started
    tail = "\n".join(output.decode("utf-8", "replace").splitlines()[-LOG_TAIL_LINES:])
    built = checkout / binary
    if not reason and not built.is_file():
        reason = f"the build succeeded but did not produce {binary}"
    return BuildResult(
        sha=sha,
        status=FAILED if reason else OK,
        reason=reason,
        log_tail=tail,
        seconds=seconds,
        binary=None if reason else built,
        build_config=build_config,
    )


def toolchain_version(command: str = "cc") -> str:
    """First line of the compiler's --version, recorded with each build."""
    try:
        output = subprocess.run([command, "--version"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    return output.splitlines()[0] if output else "unknown"
