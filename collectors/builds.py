"""Building one commit in its own clean git worktree, optionally through ccache."""

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
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Iterator

from perf_selector.collectors.child_processes import die_with_parent
from perf_selector.collectors.errors import UserError
from perf_selector.collectors.cache_home import cache_home
from perf_selector.collectors.file_lock import held_and_removed, lock_if_free, remove_held
from perf_selector.collectors.interrupts import interrupts_deferred
from perf_selector.collectors.slots import claim_slot
from perf_selector.collectors.repository import GitCommandFailed
from perf_selector.collectors.submodules import SubmoduleCheckouts, check_out_submodules

if TYPE_CHECKING:
    from perf_selector.collectors.repository import Repository


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
    cache_hits: int = 0  # compilations ccache answered from its cache
    cache_misses: int = 0  # compilations ccache had to run
    notes: tuple[str, ...] = ()  # what the checkout lacked (a submodule left out, and why), also atop the log tail


class Worktree:
    """A detached, clean checkout of one commit, removed on exit.

    Its path is a *slot* of the repository (``slot-0``, ``slot-1``, ...), the first one
    no other build holds, rather than a path per commit.  Compilers record the build
    directory in debug information, so with one path for every commit a build gives
    the same bytes whichever commit came before, and ccache (which hashes that
    directory) can answer the files a commit did not touch.  With one job every build
    uses slot 0: a store's binaries are reproducible from run to run.

    The commit's submodules are checked out in it from the developer's clone
    (collectors.submodules); `notes` says which could not be, and why.
    """

    def __init__(self, repository: Repository, sha: str, parent: str | None = None) -> None:
        self.repository = repository
        self.sha = sha
        repository_key = hashlib.sha256(str(Path(repository.git_dir).resolve()).encode()).hexdigest()[:12]
        self.slots = Path(parent or tempfile.gettempdir()) / "selector-worktrees" / repository_key
        self.path: Path | None = None
        self._slot_lock = None
        self.submodules = SubmoduleCheckouts()

    @property
    def notes(self) -> tuple[str, ...]:
        """One line for each submodule the checkout lacks, and why."""
        return tuple(self.submodules.missing)

    def __enter__(self) -> Path:
        try:
            with interrupts_deferred():  # the slot is claimed and recorded, or not claimed
                self.slots.mkdir(parents=True, exist_ok=True)
                self.path, self._slot_lock = self._claim_slot()
            with self._git_lock():
                self._add()
        except BaseException:
            self._release_slot()
            raise
        try:
            # Outside the lock: the clones read the submodules' repositories, not this one's worktree bookkeeping.
            self.submodules = check_out_submodules(self.repository, self.sha, self.path)
        except BaseException:
            self.__exit__()
            raise
        return self.path

    def _add(self, attempts: int = 5) -> None:
        """git worktree add, tried again when another program's worktree bookkeeping in the
        same repository (which our lock cannot hold off) gets in its way."""
        for attempt in range(attempts):
            try:
                if self.path.exists():  # left by a run that was killed, or by the failed attempt
                    self._remove()
                self.repository.prune_worktrees()
                self.repository.add_worktree(self.path, self.sha)
                return
            except GitCommandFailed:
                if attempt == attempts - 1:
                    raise
                time.sleep(0.1 * (attempt + 1))

    def __exit__(self, *exc) -> None:
        # A stop that came half way through left the slot's folders and git lock behind: it waits
        # for the worktree to go (a local `git worktree remove`, short).
        with interrupts_deferred():
            try:
                with self._git_lock():
                    self._remove()
            finally:
                self._release_slot()

    def _release_slot(self) -> None:
        """Let the slot go, its lock file removed, and the slots' folders too once empty: the
        temporary directory keeps nothing of a collection that ended (ccache's hits come from
        the slot's path, made again the same by the next claim)."""
        with interrupts_deferred():
            if self.path is not None and self._slot_lock is not None:
                # A stop (SIGTERM to the process group) can end `git worktree remove` while git
                # still deletes: what is left of the slot goes while the slot is still held.
                shutil.rmtree(self.path, ignore_errors=True)
                remove_held(self.path.with_suffix(".lock"), self._slot_lock)
                self._slot_lock = None
            for folder in (self.slots, self.slots.parent):
                try:
                    folder.rmdir()
                except OSError:  # another slot or repository still in use
                    break

    @classmethod
    def sweep(cls, repository: Repository, parent: str | None = None) -> int:
        """Remove the worktrees of slots no live process holds (left by killed collectors)."""
        stale = cls(repository, "", parent)
        removed = 0
        for lock_path in stale.slots.glob("slot-*.lock"):
            handle = lock_if_free(lock_path)
            if handle is None:
                continue  # in use
            stale.path, stale._slot_lock = lock_path.with_suffix(""), handle
            if stale.path.exists():
                with stale._git_lock():
                    stale._remove()
                removed += 1
            stale._release_slot()
        return removed

    def _claim_slot(self):
        """The first slot no live process holds, and its held lock."""
        slot, handle = claim_slot(lambda number: self.slots / f"slot-{number}.lock")
        return self.slots / f"slot-{slot}", handle

    @contextmanager
    def _git_lock(self) -> Iterator[None]:
        """git's worktree bookkeeping (add, prune, remove) is not safe to run twice at once
        in one repository: two collections of it take turns."""
        with held_and_removed(self.slots / "git.lock"):
            yield

    def _remove(self) -> None:
        # `worktree remove --force` removes the submodules' clones with the rest (git refuses
        # without --force): a slot's next build, or the sweep of a killed one's, finds no stale one.
        try:
            self.repository.remove_worktree(self.path)
        except GitCommandFailed:
            shutil.rmtree(self.path, ignore_errors=True)
            try:
                self.repository.prune_worktrees()
            except GitCommandFailed:
                pass  # its entry is pruned by the next add, whose directory is gone


@dataclass(frozen=True)
class CompilerCache:
    """ccache put in front of the compilers a build command finds on PATH.

    A directory of symlinks named like the compilers (cc, gcc, g++, clang, ...) points
    to ccache, which runs the real compiler found further down PATH.  ccache hashes the
    build directory into its keys when debug information is made, so hits come from
    earlier builds in the same worktree slot: the objects are the bytes that compiler
    would have written there, and the binary is the one a clean build gives.
    """

    executable: str
    shims: Path

    def environment(self, checkout: Path, statistics: Path) -> dict[str, str]:
        return {
            "PATH": f"{self.shims}{os.pathsep}{os.environ.get('PATH', '')}",
            "CCACHE_BASEDIR": str(checkout),
            "CCACHE_STATSLOG": str(statistics),
        }


COMPILER_NAMES = ("cc", "c++", "gcc", "g++", "clang", "clang++")


def find_compiler_cache() -> CompilerCache | None:
    """ccache if it is installed (None otherwise), with its compiler shims made once per machine."""
    executable = shutil.which("ccache")
    if executable is None:
        return None
    shims = cache_home() / "ccache-shims"  # meant to last: the user's cache, not the temporary directory
    shims.mkdir(parents=True, exist_ok=True)
    for name in COMPILER_NAMES:
        link = shims / name
        if not link.is_symlink() or os.readlink(link) != executable:
            temporary = shims / f".{name}.{os.getpid()}"
            temporary.unlink(missing_ok=True)
            temporary.symlink_to(executable)
            temporary.replace(link)  # atomic: a parallel job never sees a missing shim
    return CompilerCache(executable, shims)


def cache_counts(statistics: Path) -> tuple[int, int]:
    """(hits, misses) of the compilations recorded in a ccache statistics log."""
    try:
        lines = statistics.read_text().splitlines()
    except OSError:
        return 0, 0
    hits = sum(line in ("direct_cache_hit", "preprocessed_cache_hit") for line in lines)
    misses = sum(line == "cache_miss" for line in lines)
    return hits, misses


def changes_only(repository: Repository, old: str, new: str, patterns: list[str]) -> bool:
    """Does `new` differ from `old` only in paths matching `patterns` (fnmatch on the whole path)?"""
    if not patterns:
        return False
    changed = repository.changed_paths(old, new)
    matches = any_of(patterns)
    return all(matches(path) for path in changed)


def any_of(patterns: list[str]):
    """A match function for fnmatch `patterns` (none: nothing matches).  One regex for all of
    them: `select` tests every file of the tree on every push, and on a tree of 100,000 files
    a fnmatch call per file and pattern takes a second."""
    if not patterns:
        return lambda name: None
    return re.compile("|".join(f"(?:{fnmatch.translate(p)})" for p in patterns)).match


def run_build(checkout: Path, sha: str, command: str, binary: str, timeout: float,
              cache: CompilerCache | None = None, notes: tuple[str, ...] = ()) -> BuildResult:
    """Run the build command in `checkout` (through `cache` if given); a failure is a result, not an exception.
    `notes` (what the checkout lacks: Worktree.notes) head the log tail, where a failure is read."""
    started = time.monotonic()
    statistics = Path(tempfile.gettempdir()) / f"selector-ccache-{os.getpid()}-{sha[:16]}.log"
    statistics.unlink(missing_ok=True)
    environment = {**os.environ, **cache.environment(checkout, statistics)} if cache else None
    process = subprocess.Popen(
        command, shell=True, cwd=checkout, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
        start_new_session=True,  # so a timeout kills the whole make tree, not just the shell
        preexec_fn=die_with_parent,  # and a killed collector kills the build
        env=environment,
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
    hits, misses = cache_counts(statistics) if cache else (0, 0)
    statistics.unlink(missing_ok=True)
    tail = "\n".join([*notes, *output.decode("utf-8", "replace").splitlines()[-LOG_TAIL_LINES:]])
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
        cache_hits=hits,
        cache_misses=misses,
        notes=tuple(notes),
    )


FAILURE_LINES = 20  # of a failed build's output, in the messages that say it failed


def describe_failure(sha: str, reason: str, command: str, log_tail: str, lines: int = FAILURE_LINES) -> str:
    """A failed build as every command says it: which commit, why (the exit status, a timeout),
    the command, and the last `lines` of its output, indented, where the compiler's error is."""
    tail = [line.rstrip() for line in log_tail.splitlines()]
    while tail and not tail[-1]:
        tail.pop()
    tail = tail[-lines:]
    said = [f"the build of {sha[:12]} failed ({reason})", f"  command: {command} (in a clean checkout of {sha[:12]})"]
    if tail:
        said.append(f"  the last {len(tail)} lines of its output:" if len(tail) > 1 else "  the last line of its output:")
        said += [f"    {line}" for line in tail]
    else:
        said.append("  it printed nothing")
    return "\n".join(said)


class BuildFailed(UserError):
    """A commit did not build, so there is no binary to go on.  The fields let a caller say it
    its own way (the pre-push hook gives advice of its own); the message is describe_failure's,
    then `advice`: what to do."""

    def __init__(self, sha: str, reason: str, command: str, log_tail: str, advice: str = "") -> None:
        self.sha, self.reason, self.command, self.log_tail = sha, reason, command, log_tail
        super().__init__(describe_failure(sha, reason, command, log_tail) + (f"\n{advice}" if advice else ""))


def place_binary(stored: str | os.PathLike[str], target: Path) -> Path:
    """Put a stored binary at `target`, executable: the store keeps binaries as plain files.
    An existing file is replaced, not written through (a checkout may hold a link there)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    target.unlink(missing_ok=True)
    shutil.copyfile(stored, target)
    target.chmod(0o755)
    return target


def toolchain_version(command: str = "cc") -> str:
    """First line of the compiler's --version, recorded with each build."""
    try:
        output = subprocess.run([command, "--version"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    return output.splitlines()[0] if output else "unknown"
