"""Shared fixtures: real gcc builds of the scripted sample history; and, where pytest-xdist runs
the tests side by side, a timed test marked `alone` runs while no other test does."""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import tempfile
import uuid
from pathlib import Path

import pytest

from perf_selector.collectors.static_analysis import StaticAnalysis, analyse_binary
from perf_selector.selector.onboarding.sample_history import SampleCommit, make_sample_history, sample_cflags
from tests.helpers import selector_command

for tool in ("gcc", "g++", "git", "make"):
    if shutil.which(tool) is None:
        raise RuntimeError(f"the tests need {tool} on PATH")


def pytest_configure(config):
    """pytest-xdist's controller names the run itself, so that it knows which lock to remove."""
    if not hasattr(config, "workerinput") and getattr(config.option, "testrunuid", "") is None:
        config.option.testrunuid = uuid.uuid4().hex


def pytest_unconfigure(config):
    """The controller removes the run's lock once its workers are done (they made it)."""
    run = getattr(config.option, "testrunuid", None)
    if not hasattr(config, "workerinput") and run:
        _run_lock(run).unlink(missing_ok=True)


def _run_lock(run: str) -> Path:
    return Path(tempfile.gettempdir()) / f"perf-selector-tests-{run}.lock"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    """Under pytest-xdist, every test holds the run's lock shared from its setup to its teardown,
    and a test marked `alone` holds it exclusive: the other worker's gcc and valgrind load would
    be noise that a timed confirmation cannot see 10% through (it skipped, beside the suite), and
    a test of the machine's own state (the pids its next processes get) shares it with no one."""
    run = os.environ.get("PYTEST_XDIST_TESTRUNUID")
    if run is None:
        yield
        return
    with open(_run_lock(run), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX if item.get_closest_marker("alone") else fcntl.LOCK_SH)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


@pytest.fixture(scope="session")
def sample_builds(tmp_path_factory):
    """Build every commit of the sample history once per (optimization, pie) configuration."""
    cache: dict[tuple[str, bool], list[tuple[SampleCommit, StaticAnalysis, Path]]] = {}

    def build(optimization: str = "-O2", pie: bool = True):
        key = (optimization, pie)
        if key not in cache:
            root = tmp_path_factory.mktemp(f"sample{optimization}{'pie' if pie else 'nopie'}")
            commits = make_sample_history(root / "project", sample_cflags(optimization, pie))
            builds = []
            for index, commit in enumerate(commits):
                subprocess.run(["git", "checkout", "-q", commit.sha], cwd=root / "project", check=True)
                subprocess.run(["make", "-s", "-B", "prog"], cwd=root / "project", check=True, capture_output=True)
                binary = root / f"prog-{index}"
                shutil.copy(root / "project" / "prog", binary)
                builds.append((commit, analyse_binary(binary), binary))
            cache[key] = builds
        return cache[key]

    return build


@pytest.fixture(scope="session")
def collected_sample(tmp_path_factory):
    """The sample history (with its benchmarks) calibrated and collected through the real CLI."""
    import json

    root = tmp_path_factory.mktemp("collected") / "project"
    commits = make_sample_history(root)

    def cli(*arguments: str):
        result = subprocess.run(selector_command(*arguments, "--format", "json"), capture_output=True, text=True)
        assert result.returncode == 0, result.stderr
        return json.loads(result.stdout)

    calibration = cli("calibrate", commits[0].sha, "--repo", str(root), "--rounds", "2")
    report = cli("collect", "--repo", str(root), "-j", "2")
    return root, commits, calibration, report


@pytest.fixture(scope="session")
def evolved_sample(tmp_path_factory):
    """The evolved history (scripted steps, then 28 knob turns: 39 commits, 4 benchmarks; the demo goes on),
    calibrated and collected through the real CLI.  Returns (project root, commits)."""

    from perf_selector.selector.onboarding.sample_history import EVOLVED_STEPS

    root = tmp_path_factory.mktemp("evolved") / "project"
    commits = make_sample_history(root, steps=EVOLVED_STEPS)
    for arguments in (["calibrate", commits[0].sha, "--rounds", "2"], ["collect", "-j", "2"]):
        result = subprocess.run(selector_command(*arguments, "--repo", str(root), "--format", "json"),
                                capture_output=True, text=True)
        assert result.returncode == 0, result.stderr
    return root, commits
