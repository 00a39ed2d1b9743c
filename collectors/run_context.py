"""The context a benchmark process runs in: the same for every commit, unless perturbed.

Measurement bias (Mytkowicz et al., "Producing wrong data without doing anything
obviously wrong", ASPLOS 2009): the size of the environment and the length of the
program's path sit at the top of its stack, so they move the stack's alignment, and
with it timings and even instruction counts (string and memory routines that take a
different path on another alignment, hashes of addresses).  A collection that runs one
commit from ``slot-0`` with the caller's environment and the next from another path
and another shell's environment compares two layouts, not two programs.

So every benchmark runs in a *normalised context*:

- a fixed, minimal environment (``PATH``, ``HOME``, ``LANG``/``LC_ALL``, ``PWD``), which
  the configuration extends (``[run] environment``, ``[run] pass_environment``);
- fixed paths: the checkout, the binary's folder and the suite are reached through
  symbolic links in a context folder of a fixed length (``<tmp>/selector-context/NN``,
  NN the first slot no other live process holds), which is the working directory too.
  Placeholders (``{binary}``, ``{checkout}``, ``{suite}``) are filled with those paths,
  so argv[0] and every path a command names have the same bytes' length whichever
  worktree slot built the commit.

Calibration perturbs what differs between users' machines on purpose: the environment's
size (``environment_padding``: an extra variable of that many bytes) and the paths'
length (``path_padding``: a longer context folder name), and measures the spread each
benchmark shows under it (selector/collection/calibrate.py).
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping, Sequence

from perf_selector.collectors.child_processes import process_alive
from perf_selector.collectors.errors import UserError
from perf_selector.collectors.file_lock import remove_held
from perf_selector.collectors.interrupts import interrupts_deferred
from perf_selector.collectors.slots import claim_slot

# A PATH that does not depend on who runs the collection: benchmark commands that need
# another set `[run] environment` (PATH = ...).  Tools the runner itself starts
# (valgrind, taskset, perf) are found in the caller's PATH and named by absolute path.
FIXED_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
PADDING_VARIABLE = "SELECTOR_CONTEXT_PADDING"
MAX_SLOTS = 100  # two digits: every slot's path has one length


@dataclass(frozen=True)
class ContextSettings:
    """What a project's configuration adds to the normalised context."""

    environment: Mapping[str, str] = field(default_factory=dict)  # set for every run
    pass_environment: Sequence[str] = ()  # names copied from the caller's environment, when set there
    clock: str | None = None  # a libfaketime FAKETIME setting the benchmark's clock follows (fixed_clock(), SLOW_CLOCK)


@dataclass(frozen=True)
class Perturbation:
    """A deliberate change of the context (calibration): bytes added to the environment, and
    characters added to the context folder's name (every path a command names)."""

    environment_padding: int = 0
    path_padding: int = 0

    def describe(self) -> str:
        if not self.environment_padding and not self.path_padding:
            return "normalised"
        parts = [f"environment +{self.environment_padding} B" if self.environment_padding else "",
                 f"paths +{self.path_padding} characters" if self.path_padding else ""]
        return ", ".join(part for part in parts if part)


NORMALISED = Perturbation()

# A deterministic clock (`[run] fixed_clock`): every reading of the clock advances it by a fixed
# step from a fixed date (libfaketime's incremental mode), so a harness that loops until a time
# has passed runs the same iterations at every run, whatever the machine's speed.  One second by
# default: a harness that times batches (Google Benchmark, most hand-written ones) sees its first
# batch take a second and stops there.


def fixed_clock(step_seconds: float = 1.0) -> str:
    """The FAKETIME setting of a deterministic clock advancing `step_seconds` at each reading."""
    return f"@2000-01-01 00:00:00 i{step_seconds:g}"


# Calibration's check that a count does not depend on the clock: time passing at a quarter speed,
# against the same library at full speed (libfaketime's own start-up and the environment's size,
# which moves the stack, are then the same on both sides: both settings have one length).
SLOW_CLOCK, TRUE_CLOCK = "+0 x0.25", "+0 x1.00"
FAKETIME_LIBRARIES = ("/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1", "/usr/lib/aarch64-linux-gnu/faketime/libfaketime.so.1",
                      "/usr/lib/faketime/libfaketime.so.1", "/usr/local/lib/faketime/libfaketime.so.1")


def faketime_library() -> str | None:
    """libfaketime's preload library (Debian package faketime), or None."""
    return next((path for path in FAKETIME_LIBRARIES if os.path.exists(path)), None)


# libfaketime (0.9.10, Debian 12) gives each process a semaphore and a shared memory object named by
# its pid (/dev/shm/sem.faketime_sem_<pid>, /dev/shm/faketime_shm_<pid>) and removes them only when
# that process exits normally.  One replaced by exec leaves them behind, and valgrind's launcher
# execs the tool, so every callgrind run under a fake clock leaves a pair.  A later process that
# gets one of those pids fails to create its own, silently, and then reads the real clock: a
# fixed-clock count that is not fixed, and libfaketime's own count changes with it (it skips the
# semaphore).  With a few thousand left (pid_max 32768) that was one run in twenty here.
FAKETIME_LEFTOVER = re.compile(r"(?:sem\.faketime_sem|faketime_shm)_(\d+)")
SHARED_MEMORY = Path("/dev/shm")


def remove_faketime_leftovers(directory: Path = SHARED_MEMORY) -> int:
    """Remove libfaketime's objects of processes that are no longer alive and that this user
    owns (another user's are theirs to keep); the number removed."""
    try:
        names = os.listdir(directory)
    except OSError:  # no /dev/shm: libfaketime cannot have left anything there
        return 0
    removed = 0
    for name in names:
        match = FAKETIME_LEFTOVER.fullmatch(name)
        if match is None or process_alive(int(match.group(1))):
            continue
        path = directory / name
        try:
            if path.stat().st_uid == os.getuid():
                path.unlink()
                removed += 1
        except OSError:  # gone already (another collector's sweep), or not ours to remove
            continue
    return removed

# The contexts a changed label is re-measured in before it stays changed (selector/collection/perturbed_labels.py;
# `[labels] perturbed_contexts` takes the first N): none of them one that calibration perturbs with
# (selector/collection/calibrate.py PERTURBATIONS), so a label is checked in layouts its spread was not learnt
# from.  Sizes that are not multiples of 16 move the stack's alignment; 2500 bytes moves it across a
# page as well; a longer path moves argv[0] and every path a command names.
LABEL_PERTURBATIONS = (
    Perturbation(environment_padding=61), Perturbation(path_padding=17),
    Perturbation(environment_padding=2500, path_padding=17), Perturbation(environment_padding=2500),
    Perturbation(environment_padding=61, path_padding=17), Perturbation(environment_padding=333, path_padding=3),
)


class RunContext:
    """One claimed context folder: its links to a checkout, a binary's folder and a suite,
    and the environment of the processes run there.  The claim (a lock on the slot's lock
    file) lasts as long as this object, or until :meth:`release`; a killed process's claim
    ends with it, and the folder is simply reused."""

    def __init__(self, settings: ContextSettings | None = None, perturbation: Perturbation = NORMALISED,
                 root: Path | None = None) -> None:
        self.settings = settings or ContextSettings()
        self.perturbation = perturbation
        self.root = Path(root or Path(tempfile.gettempdir()) / "selector-context")
        self._lock = None
        try:
            with interrupts_deferred():  # the slot is claimed and recorded, or not claimed
                self.folder, self._lock = self._claim()
        except BaseException:
            self.release()
            raise

    @property
    def checkout(self) -> Path:
        return self.folder / "checkout"

    @property
    def suite(self) -> Path:
        return self.folder / "suite"

    def bind(self, checkout: Path, binary: Path, suite: Path | None) -> tuple[Path, Path, Path | None]:
        """Point the links at this build, and return the stable paths of the checkout, the
        binary and the suite (None stays None) that commands are to name."""
        checkout = Path(checkout).resolve()
        binary = Path(binary).absolute()
        _link(self.checkout, checkout)
        if suite is not None:
            _link(self.suite, Path(suite).resolve())
        try:
            stable_binary = self.checkout / binary.relative_to(checkout)
        except ValueError:  # a binary outside the checkout (select --binary): its folder gets a link
            _link(self.folder / "bin", binary.parent)
            stable_binary = self.folder / "bin" / binary.name
        return self.checkout, stable_binary, (self.suite if suite is not None else None)

    def environment(self) -> dict[str, str]:
        """The environment of every process run here: fixed, then the configuration's."""
        environment = {"PATH": FIXED_PATH, "HOME": os.environ.get("HOME", "/"), "LANG": "C", "LC_ALL": "C",
                       "PWD": str(self.checkout)}
        environment.update({name: os.environ[name] for name in self.settings.pass_environment if name in os.environ})
        environment.update(self.settings.environment)
        if self.settings.clock:
            library = faketime_library()
            if library is None:
                raise UserError("a fixed or scaled clock needs libfaketime (Debian: apt-get install faketime)")
            environment.update({"LD_PRELOAD": library, "FAKETIME": self.settings.clock,
                                "FAKETIME_DONT_FAKE_MONOTONIC": "0", "FAKETIME_NO_CACHE": "1"})
        if self.perturbation.environment_padding:
            environment[PADDING_VARIABLE] = "x" * self.perturbation.environment_padding
        return environment

    def digest(self) -> str:
        """What identifies the context a run had: the environment's names and sizes and the
        paths' length (contents that differ only by slot number do not move the layout)."""
        environment = self.environment()
        shape = sorted((name, len(value)) for name, value in environment.items() if name != "PWD")
        text = repr((shape, len(str(self.checkout)), len(str(self.suite))))
        return hashlib.sha256(text.encode()).hexdigest()[:12]

    def release(self) -> None:
        """Let the slot go: its folder of links and its lock file removed (the lock last, so
        no other process claims the slot while the folder goes), the root too once empty."""
        with interrupts_deferred():  # a stop half way through left the slot's folder behind
            if self._lock is not None:
                shutil.rmtree(self.folder, ignore_errors=True)  # links only: rmtree never follows them
                remove_held(self.folder.with_name(self.folder.name + ".lock"), self._lock)
                self._lock = None
                try:
                    self.root.rmdir()
                except OSError:  # other slots in use
                    pass

    def _claim(self):
        """The first slot no live process holds, and its held lock."""
        self.root.mkdir(parents=True, exist_ok=True)
        suffix = "-" + "p" * (self.perturbation.path_padding - 1) if self.perturbation.path_padding else ""
        claimed = claim_slot(lambda slot: self.root / f"{slot:02d}{suffix}.lock", MAX_SLOTS)
        if claimed is None:
            raise RuntimeError(f"all {MAX_SLOTS} benchmark context slots under {self.root} are held by live processes")
        slot, handle = claimed
        folder = self.root / f"{slot:02d}{suffix}"
        folder.mkdir(exist_ok=True)
        return folder, handle


def tool_path(name: str) -> str:
    """A tool the runner starts itself, by absolute path from the caller's PATH (the benchmark's
    own PATH is fixed); the bare name when it is not found, so the error names it."""
    return shutil.which(name) or name


def _link(link: Path, target: Path) -> None:
    """`link` pointing at `target`, replaced atomically if it pointed elsewhere."""
    if link.is_symlink() and os.readlink(link) == str(target):
        return
    temporary = link.with_name(f".{link.name}.{os.getpid()}")
    if temporary.is_symlink() or temporary.exists():
        temporary.unlink()
    temporary.symlink_to(target)
    os.replace(temporary, link)
