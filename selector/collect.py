"""Collection: build each chosen commit, analyse its binary, run and profile its
benchmarks, and store the results; then label each commit against its closest
measured ancestor.

One task per commit, independent of the others, so tasks run in a process pool today
and on other executors later.  A task writes its ``commits`` row last: a commit with
that row is complete, which is what resuming relies on (anything else of an
interrupted task is rewritten whole, atomically, when it runs again).
"""

from __future__ import annotations

import fcntl
import tempfile
import time
import zlib
from contextlib import contextmanager
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable, Iterable

import pandas as pd

from collectors.benchmark_runner import INSTRUCTIONS, BenchmarkRunner
from collectors.builds import OK, Worktree, build_config_digest, run_build, toolchain_version
from collectors.errors import UserError
from collectors.git_history import CommitInfo, open_repository
from collectors.host import host_facts
from collectors.profiler import profile_suite
from collectors.static_analysis import analyse_binary, content_digest
from selector.config import Config, benchmark_specs
from selector.labelling import LabelSummary, update_labels
from selector.store import Store

SKIPPED = "stored"  # already in the store from an earlier run


@dataclass
class CommitOutcome:
    sha: str
    status: str  # ok | failed | stored
    reason: str = ""
    functions: int = 0
    reused_analysis: bool = False
    measured: bool = False
    profiled: bool = False
    failed_runs: int = 0
    seconds: float = 0.0
    child_seconds: float = 0.0  # waiting for builds, benchmarks and profilers


@dataclass
class CollectSummary:
    outcomes: list[CommitOutcome] = field(default_factory=list)
    labels: LabelSummary | None = None

    def count(self, status: str) -> int:
        return sum(o.status == status for o in self.outcomes)

    @property
    def failures(self) -> list[CommitOutcome]:
        return [o for o in self.outcomes if o.status not in (OK, SKIPPED)]


def pending_commits(
    store: Store, commits: Iterable[CommitInfo], retry_failed: bool = False, needs_measurements: bool = False
) -> tuple[list[CommitInfo], list[CommitInfo]]:
    """Split commits into (to collect, already stored).

    A stored commit is collected again when its build failed and `retry_failed`, or
    when benchmarks are configured and it has no measurements yet (it was collected
    before the suite was set up).
    """
    stored = store.read("commits")
    built = dict(zip(stored["sha"], stored["build_status"] == OK)) if len(stored) else {}
    measured = set(store.keys("measurements")) if needs_measurements else set()
    todo, done = [], []
    for commit in commits:
        if commit.sha not in built:
            todo.append(commit)
        elif (retry_failed and not built[commit.sha]) or (built[commit.sha] and needs_measurements and commit.sha not in measured):
            todo.append(commit)
        else:
            done.append(commit)
    return todo, done


def collect(
    repository: str | Path,
    config: Config,
    store: Store,
    commits: list[CommitInfo],
    jobs: int = 1,
    retry_failed: bool = False,
    on_outcome: Callable[[CommitOutcome], None] = lambda outcome: None,
    scheduler: str | None = None,
) -> CollectSummary:
    """Collect `commits` (oldest first) into `store`; already stored commits are skipped.

    With `scheduler` (a Dask distributed address, tcp://host:8786) each commit is one
    task on the cluster: its build, benchmarks and profiles stay on one worker, which
    writes to the store itself, so the store and the repository must be reachable from
    every worker under the same path or URL.
    """
    if jobs < 1:
        raise UserError(f"--jobs must be at least 1 (got {jobs})")
    store.sweep_temporaries()
    todo, done = pending_commits(store, commits, retry_failed, needs_measurements=bool(config.benchmark))
    summary = CollectSummary()
    for commit in done:
        outcome = CommitOutcome(commit.sha, SKIPPED)
        summary.outcomes.append(outcome)
        on_outcome(outcome)
    toolchain = toolchain_version()
    arguments = (str(repository), config, store.location, toolchain)
    if scheduler:
        _collect_on_cluster(todo, arguments, scheduler, summary, on_outcome)
    elif jobs == 1:
        for commit in todo:
            outcome = collect_commit(commit, *arguments)
            summary.outcomes.append(outcome)
            on_outcome(outcome)
    else:
        _collect_in_pool(todo, arguments, jobs, summary, on_outcome)
    if config.benchmark:
        summary.labels = update_labels(store, config)
    store.refresh_snapshots()
    return summary


def connect_scheduler(scheduler: str):
    """A client of the Dask scheduler at `scheduler`, or a one-line UserError."""
    from distributed import Client

    try:
        return Client(scheduler, timeout="10s")
    except (OSError, TimeoutError, ValueError) as error:
        raise UserError(f"cannot reach the Dask scheduler at {scheduler} ({error})") from None


def _collect_on_cluster(todo, arguments, scheduler: str, summary, on_outcome) -> None:
    from distributed import as_completed

    with connect_scheduler(scheduler) as client:
        # pure=False: a task's result is its side effects in the store, never reuse a cached one
        futures = [client.submit(collect_commit, commit, *arguments, pure=False, key=f"collect-{commit.sha}") for commit in todo]
        try:
            for future in as_completed(futures):
                outcome = future.result()
                summary.outcomes.append(outcome)
                on_outcome(outcome)
        except BaseException:
            client.cancel(futures)
            raise


def _collect_in_pool(todo, arguments, jobs, summary, on_outcome) -> None:
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        running: set[Future] = {pool.submit(collect_commit, commit, *arguments) for commit in todo}
        try:
            while running:
                finished, running = wait(running, return_when=FIRST_COMPLETED)
                for future in finished:
                    outcome = future.result()
                    summary.outcomes.append(outcome)
                    on_outcome(outcome)
        except BaseException:
            for future in running:
                future.cancel()
            raise


def collect_commit(commit: CommitInfo, repository_path: str, config: Config, store_location: str, toolchain: str,
                   imported: pd.DataFrame | None = None) -> CommitOutcome:
    """Build, analyse and store one commit.  Failures are recorded, not raised.

    With `imported` measurements (results CI produced with its own harness, see
    `selector record`), the benchmarks are not run again; only the profiles are made."""
    started = time.monotonic()
    store = Store(store_location)
    repository = open_repository(repository_path)
    build_config = build_config_digest(repository, commit.sha, config.build.config_files)
    row = {
        "sha": commit.sha,
        "parents": list(commit.parents),
        "author_time": commit.author_time,
        "subject": commit.subject,
        "build_command": config.build.command,
        "build_config": build_config,
        "toolchain": toolchain,
        "binary_sha256": "",
        "content_digest": "",
        "symbol_source": "",
        "decoder": "",
        "analysis_notes": "",
        "functions": 0,
        "build_reason": "",
        "build_log_tail": "",
        "build_seconds": 0.0,
        "benchmarks_measured": 0,
        "run_failures": "",
        "profile_failures": "",
    }
    outcome = CommitOutcome(commit.sha, OK)
    timing = any(spec.metric != INSTRUCTIONS for spec in benchmark_specs(config))
    with Worktree(repository, commit.sha) as checkout:
        with _machine_lock(timing, exclusive=False):
            build = run_build(checkout, commit.sha, config.build.command, config.project.binary, config.build.timeout, build_config)
        outcome.child_seconds += build.seconds
        row.update(build_status=build.status, build_reason=build.reason, build_log_tail=build.log_tail, build_seconds=build.seconds)
        if build.status != OK:
            outcome.status, outcome.reason = build.status, f"build {build.reason}"
        else:
            row["binary_sha256"] = store.put_binary(build.binary)
            try:
                outcome.reused_analysis = _store_analysis(store, commit.sha, row)
                outcome.functions = row["functions"]
            except UserError as error:  # the binary exists but cannot be analysed (stripped, not x86-64, ...)
                row.update(build_status="failed", build_reason=f"analysis: {error}")
                outcome.status, outcome.reason = "failed", f"analysis: {error}"
        if outcome.status == OK and config.benchmark:
            _measure(store, commit.sha, config, checkout, row, outcome, timing, imported)
    row["child_seconds"] = outcome.child_seconds
    row["collected_at"] = datetime.now(timezone.utc)
    store.write("commits", commit.sha, pd.DataFrame([row]))
    outcome.seconds = time.monotonic() - started
    return outcome


def _measure(store: Store, sha: str, config: Config, checkout: Path, row: dict, outcome: CommitOutcome, timing: bool,
             imported: pd.DataFrame | None = None) -> None:
    """Run the benchmarks (unless their results are `imported`) and the profilers on the built
    checkout; store measurements and profiles."""
    specs = benchmark_specs(config)
    suite = Path(config.project.suite) if config.project.suite else None
    with tempfile.TemporaryDirectory(prefix="selector-runs-") as workdir, _machine_lock(timing, exclusive=True):
        runner = BenchmarkRunner(
            specs, checkout / config.project.binary, checkout, suite, cpu=config.run.cpu,
            seed=zlib.crc32(f"{config.run.seed}:{sha}".encode()), workdir=Path(workdir),
        )
        facts = host_facts()
        result = runner.run() if imported is None else None
        profiles = profile_suite(runner, config.profile.tool, result.callgrind_files if result else None)
        outcome.child_seconds += runner.child_seconds
    metrics = {spec.name: spec.metric for spec in specs}
    if imported is not None:
        measurements = imported.assign(commit=sha)
    else:
        measurements = pd.DataFrame(
            [
                {"commit": sha, "benchmark": run.benchmark, "metric": metrics[run.benchmark], "repetition": run.repetition,
                 "run_order": run.order, "value": run.value, "status": run.status, "error": run.error, "seconds": run.seconds,
                 **facts}
                for run in result.runs
            ]
        )
    store.write("measurements", sha, measurements)
    store.write("profiles", sha, profiles.rows.assign(commit=sha))
    measured = measurements[(measurements["repetition"] >= 0) & (measurements["status"] == "ok")]["benchmark"].nunique()
    failed = measurements[measurements["status"] != "ok"]
    row.update(
        benchmarks_measured=int(measured),
        run_failures="\n".join(sorted({f"{r.benchmark}: {r.error}" for r in failed.itertuples()})),
        profile_failures="\n".join(f"{name}: {why}" for name, why in profiles.failures.items()),
    )
    outcome.measured = measured > 0
    outcome.profiled = profiles.rows["benchmark"].nunique() > 0
    outcome.failed_runs = len(failed)


@contextmanager
def _machine_lock(timing: bool, exclusive: bool):
    """Keep timed benchmark runs alone on this machine.

    Builds take the lock shared, a timed suite takes it exclusive: parallel jobs may
    build side by side, but a suite is timed only while no build (and no other suite)
    runs.  Measured on lz4 with -j 2 and no such lock, wall-time labels gave 2 false
    positives in 22 pairs of identical code.  Callgrind counts need no lock.
    """
    if not timing:
        yield
        return
    with open(Path(tempfile.gettempdir()) / "selector-measurement.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _store_analysis(store: Store, sha: str, row: dict) -> bool:
    """Write functions and objects of `sha`; reuse the analysis of an identical binary. Returns True if reused."""
    binary = store.local_binary(row["binary_sha256"])
    key = content_digest(binary)
    owner = store.analysis_owner(key)
    if owner and owner != sha and all(store.has(table, owner) for table in ("commits", "functions", "objects")):
        functions = store.read_one("functions", owner)
        objects = store.read_one("objects", owner)
        previous = store.read_one("commits", owner).iloc[0]
        row.update(symbol_source=previous["symbol_source"], decoder=previous["decoder"], analysis_notes=previous["analysis_notes"])
        reused = True
    else:
        analysis = analyse_binary(binary)
        functions, objects = analysis.functions, analysis.objects
        row.update(symbol_source=analysis.symbol_source, decoder=analysis.decoder, analysis_notes="\n".join(analysis.notes))
        reused = False
    row["content_digest"] = key
    store.write("functions", sha, functions.assign(commit=sha))
    store.write("objects", sha, objects.assign(commit=sha))
    if not reused:
        store.set_analysis_owner(key, sha)
    row["functions"] = len(functions)
    return reused
