"""Benchmarks whose harness loops until a clock time has passed: calibration finds that their
count depends on the clock (it runs them once more with the clock at a quarter speed), says so
with the remedy, and with `[run] fixed_clock = true` (libfaketime) their counts repeat."""

from __future__ import annotations

import json
import os

import pytest

from perf_selector.collectors.run_context import faketime_library
from perf_selector.selector.sample_history import commit_all
from tests.helpers import gcc_config, new_project, program_text, run_selector

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
    from perf_selector.selector.calibrate import clock_growth

    assert clock_growth([100_000], [400_000]) == pytest.approx(3.0)  # four times the iterations
    assert clock_growth([330_521], [325_563]) < 0  # -1.5%: smaller, not a loop that ran longer
    assert clock_growth([330_521, 335_000], [336_000, 331_000]) < 0  # grew once, not in the second pair
    assert clock_growth([100_000, 100_000], [103_000, 104_000]) == pytest.approx(0.03)
    # a loaded machine: the second pair ran at half the speed, and the slow clock still grew it
    assert clock_growth([100_000, 50_000], [400_000, 200_000]) == pytest.approx(3.0)
    assert clock_growth([0], [5]) == 0.0
