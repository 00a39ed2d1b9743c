"""Benchmarks whose harness loops until a clock time has passed: calibration finds that their
count depends on the clock (it runs them once more with the clock at a quarter speed), says so
with the remedy, and with `[run] fixed_clock = true` (libfaketime) their counts repeat."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from perf_selector.collectors.child_processes import process_alive
from perf_selector.collectors.run_context import faketime_library
from perf_selector.selector.onboarding.sample_history import commit_all
from tests.helpers import compile_c, gcc_config, new_project, program_text, run_selector

needs_faketime = pytest.mark.skipif(
    faketime_library() is None and not os.environ.get("SELECTOR_REQUIRE_FAKETIME"),
    reason="libfaketime is not installed (Debian: faketime)")

CONFIG = gcc_config("""
[[benchmark]]
name = "timed"
command = "{binary}"
metric = "instructions"
repetitions = 2
""")


def _calibrated(tmp_path, fixed_clock: bool) -> dict:
    root = new_project(tmp_path / ("fixed" if fixed_clock else "real"),
                       CONFIG + ("\n[run]\nfixed_clock = true\n" if fixed_clock else ""))
    (root / "prog.c").write_text(program_text("timed_loop.c"))
    commit_all(root, "a timed loop")
    result = run_selector("calibrate", "--repo", str(root), "--rounds", "2", "--format", "json")
    assert result.returncode == 0, result.stderr
    return next(row for row in json.loads(result.stdout) if row["benchmark"] == "timed")


@needs_faketime
def test_a_count_that_depends_on_the_clock_is_not_exact_and_says_the_remedy(tmp_path):
    row = _calibrated(tmp_path, fixed_clock=False)
    assert not row["exact"] and row["fit"] is False, row
    assert abs(row["clock_change"]) > 0.5  # a quarter-speed clock: several times the iterations
    assert "depends on the clock" in row["unfit_reason"] and "fixed_clock" in row["unfit_reason"]


@needs_faketime
def test_with_a_fixed_clock_the_count_repeats_and_is_exact(tmp_path):
    row = _calibrated(tmp_path, fixed_clock=True)
    assert row["exact"] and row["fit"] is not False, row
    assert row["clock_change"] == 0.0  # a fixed clock needs no check


def test_only_a_growth_every_slow_run_shows_is_taken_for_a_timed_loop():
    """A timed loop does more work under a slower clock, in every run: a count that shrinks
    (the clock library's start-up, a machine whose whole-process counts wander by a percent)
    or that grew once and not again is not one."""
    from perf_selector.selector.collection.calibrate import clock_growth

    assert clock_growth([100_000], [400_000]) == pytest.approx(3.0)  # four times the iterations
    assert clock_growth([330_521], [325_563]) < 0  # -1.5%: smaller, not a loop that ran longer
    assert clock_growth([330_521, 335_000], [336_000, 331_000]) < 0  # grew once, not in the second pair
    assert clock_growth([100_000, 100_000], [103_000, 104_000]) == pytest.approx(0.03)
    # a loaded machine: the second pair ran at half the speed, and the slow clock still grew it
    assert clock_growth([100_000, 50_000], [400_000, 200_000]) == pytest.approx(3.0)
    assert clock_growth([0], [5]) == 0.0


def test_leftovers_of_processes_no_longer_alive_are_removed_and_no_other_file(tmp_path):
    """libfaketime's semaphore and shared memory of a process that has ended go; those of a live
    process, and anything not libfaketime's, stay."""
    from perf_selector.collectors.run_context import remove_faketime_leftovers

    ended = _ended_pid()
    names = [f"sem.faketime_sem_{ended}", f"faketime_shm_{ended}", f"sem.faketime_sem_{os.getpid()}",
             f"faketime_shm_{os.getpid()}", f"faketime_shm_{ended}.bak", "sem.other_7"]
    for name in names:
        (tmp_path / name).write_bytes(b"\0" * 32)
    assert remove_faketime_leftovers(tmp_path) == 2
    assert sorted(path.name for path in tmp_path.iterdir()) == sorted(names[2:])


def _ended_pid() -> int:
    process = subprocess.Popen(["true"])
    process.wait()
    return process.pid


def _next_pids(count: int) -> list[int]:
    """The pids the next processes will most likely be given (the kernel hands them out in order)."""
    last = int(Path("/proc/sys/kernel/ns_last_pid").read_text())
    limit = int(Path("/proc/sys/kernel/pid_max").read_text())
    return [(last + step) % limit for step in range(1, count + 1)]


@needs_faketime
@pytest.mark.alone  # it plants files for the machine's next pids: no other test's process may take one
def test_a_fixed_clock_holds_when_leftovers_of_ended_processes_carry_the_next_pids(tmp_path):
    """libfaketime leaves its objects behind after a process replaced by exec (valgrind's launcher
    does that), and a later process given one of their pids silently reads the real clock. With
    leftovers planted for every pid the next runs can get, the timed loop under the fixed clock
    still counts what it counts on a clean machine: the runner removes them before each run."""
    from perf_selector.collectors.benchmark_runner import BenchmarkRunner, BenchmarkSpec
    from perf_selector.collectors.run_context import SHARED_MEMORY, ContextSettings, RunContext, fixed_clock

    if not Path("/proc/sys/kernel/ns_last_pid").exists() or not SHARED_MEMORY.is_dir():
        pytest.skip("no /proc/sys/kernel/ns_last_pid or no /dev/shm: the next pids cannot be foreseen, or nothing is left")
    binary = compile_c(program_text("timed_loop.c"), tmp_path / "timed_loop", "-O2 -g")
    spec = BenchmarkSpec("timed", "{binary}", metric="instructions", repetitions=1, warmup=0)
    (tmp_path / "runs").mkdir()
    runner = BenchmarkRunner([spec], binary, tmp_path, workdir=tmp_path / "runs",
                             context=RunContext(ContextSettings(clock=fixed_clock())))
    clean = runner.run_once(spec, 0, 0)
    assert clean.status == "ok", clean.error
    counts = []
    for repetition in range(1, 4):
        # never a live process's objects, nor a file already there: the test removes what it planted
        planted = [path for pid in _next_pids(300) if not process_alive(pid)
                   for path in (SHARED_MEMORY / f"{kind}_{pid}" for kind in ("sem.faketime_sem", "faketime_shm"))
                   if not path.exists()]
        try:
            for path in planted:
                path.write_bytes(b"\0" * 32)
            counts.append(runner.run_once(spec, repetition, repetition).value)
        finally:
            for path in planted:
                path.unlink(missing_ok=True)
    assert counts == [clean.value] * 3
