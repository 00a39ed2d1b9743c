"""Collection: build each chosen commit, analyse its binary, run and profile its
benchmarks, and store the results; then label each commit against its closest
measured ancestor.

One task per commit, independent of the others, so tasks run in a process pool or on a
Dask cluster; a commit that changes only unaffected paths waits for the parent whose
build it takes, and commits of one binary identity take turns measuring, so the second
reuses the first's runs (selector.measurement_reuse).  A task writes its ``commits`` row last: a commit with
that row is complete, which is what resuming relies on (anything else of an
interrupted task is rewritten whole, atomically, when it runs again).
"""

from __future__ import annotations

import tempfile
import time
import zlib
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable, Iterable

import pyarrow as pa
import pyarrow.compute as pc

from perf_selector.collectors.arrow_rows import concatenated, table_of_rows, with_constants
from perf_selector.collectors.benchmark_runner import (
    INSTRUCTIONS, BenchmarkRunner, metric_unit, names_checkout, run_folder_prefix, sweep_run_folders,
)
from perf_selector.collectors.child_processes import die_with_parent
from perf_selector.collectors.build_config import commit_config, kind_of
from perf_selector.collectors.builds import (
    OK, CompilerCache, Worktree, changes_only, find_compiler_cache, place_binary, run_build, toolchain_version,
)
from perf_selector.collectors.errors import UserError
from perf_selector.collectors.commit_graph import CommitInfo
from perf_selector.collectors.repository import GitCommandFailed, Repository
from perf_selector.collectors.host import host_facts
from perf_selector.collectors.run_context import RunContext
from perf_selector.collectors.profiler import profile_suite
from perf_selector.collectors.static_analysis import analyse_binary, content_digest
from perf_selector.storage.history import benchmarks_in, built_commits, measured_runs
from perf_selector.collectors.benchmark_suite import suite_of
from perf_selector.selector.benchmarks import BuildBenchmarks, build_benchmarks
from perf_selector.selector.collection.machine_lock import machine_lock as _machine_lock
from perf_selector.selector.config import (Config, benchmark_specs, configured_metrics, context_settings, has_benchmarks, label_rules,
                             require_suite)
from perf_selector.storage.labels import LabelSummary, store_history_labels, update_labels
from perf_selector.selector.collection.perturbed_labels import PerturbedSummary, confirm_perturbed
from perf_selector.selector.collection.measurement_reuse import (
    ReuseContext, complete_benchmarks, copy_reused, copy_runs, identity_lock, plan_reuse, record_owners,
    reuse_context, why_not_reusable,
)
from perf_selector.storage.store import Store

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
    build_seconds: float = 0.0
    benchmark_seconds: float = 0.0  # the benchmark runs (warm-ups included)
    profile_seconds: float = 0.0  # profiling runs and reading their output
    cache_hits: int = 0  # compilations ccache answered
    cache_misses: int = 0
    build_reused_from: str = ""  # the parent whose build stands for this commit's (it changed only unaffected paths)
    benchmarks_run: int = 0  # benchmarks run (or imported) rather than reused
    reused: dict[str, str] = field(default_factory=dict)  # benchmark -> commit whose runs stand for its
    not_reusable: dict[str, str] = field(default_factory=dict)  # benchmark -> why it had to run
    build_notes: tuple[str, ...] = ()  # what its build's checkout lacked (a submodule left out, and why)


@dataclass(frozen=True)
class CollectSettings:
    """What every commit of one collection is collected with."""

    toolchain: str
    cache: CompilerCache | None = None  # ccache in front of the compilers, when found and wanted
    reuse: ReuseContext | None = None  # reuse of identical binaries' runs, when wanted


@dataclass
class CollectSummary:
    outcomes: list[CommitOutcome] = field(default_factory=list)
    labels: LabelSummary | None = None
    perturbed: PerturbedSummary | None = None  # changed labels re-measured under perturbed contexts
    seconds: float = 0.0  # the whole collection, wall time
    cache: bool = False  # builds went through ccache

    def count(self, status: str) -> int:
        return sum(o.status == status for o in self.outcomes)

    @property
    def failures(self) -> list[CommitOutcome]:
        return [o for o in self.outcomes if o.status not in (OK, SKIPPED)]


def pending_commits(
    store: Store, commits: Iterable[CommitInfo], retry_failed: bool = False, needs_measurements: bool = False
) -> tuple[list[CommitInfo], list[CommitInfo]]:
    """Split commits into (to collect, already stored).

    A stored commit is collected again when its build failed and `retry_failed`, when a
    file it needs is missing (its analysis, or with benchmarks configured its
    measurements and profiles: collected before the suite was set up, or deleted because
    it was damaged).
    """
    stored = store.read("commits")
    built = {sha: status == OK for sha, status in zip(stored["sha"].to_pylist(), stored["build_status"].to_pylist())} \
        if stored.num_rows else {}
    needed = ("functions", "objects", *(("measurements", "profiles") if needs_measurements else ()))
    complete = set.intersection(*(set(store.keys(table)) for table in needed))
    todo, done = [], []
    for commit in commits:
        if commit.sha not in built:
            todo.append(commit)
        elif (retry_failed and not built[commit.sha]) or (built[commit.sha] and commit.sha not in complete):
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
    reuse: bool = True,
    cache: bool = True,
    on_perturbed_run: Callable[[int, int], None] = lambda done, total: None,
) -> CollectSummary:
    """Collect `commits` (oldest first) into `store`; already stored commits are skipped.

    Then every changed label (the ones this collection made, and stored ones that lack it) is
    re-measured on both sides under the `[labels] perturbed_contexts` perturbed run contexts
    that are not stored yet (selector.perturbed_labels; `on_perturbed_run(done, total)` after
    each run), and the labels are written: a changed one stays changed only if it held in all.

    With `reuse`, a commit whose binary is identical to a measured one takes that one's
    runs for every benchmark calibration found exact (see selector.measurement_reuse);
    with `cache`, builds go through ccache when it is installed.

    With `scheduler` (a Dask distributed address, tcp://host:8786) each commit is one
    task on the cluster: its build, benchmarks and profiles stay on one worker, which
    writes to the store itself, so the store and the repository must be reachable from
    every worker under the same path or URL.
    """
    if jobs < 1:
        raise UserError(f"--jobs must be at least 1 (got {jobs})")
    if has_benchmarks(config):
        require_suite(config)
    started = time.monotonic()
    store.sweep_temporaries()
    sweep_run_folders()
    repo = Repository.open(repository)
    Worktree.sweep(repo)
    todo, done = pending_commits(store, commits, retry_failed, needs_measurements=has_benchmarks(config))
    upgrade_build_configs(store, repo, config, skip={commit.sha for commit in todo})
    summary = CollectSummary()
    for commit in done:
        outcome = CommitOutcome(commit.sha, SKIPPED)
        summary.outcomes.append(outcome)
        on_outcome(outcome)
    toolchain = toolchain_version()
    settings = CollectSettings(toolchain, find_compiler_cache() if cache else None,
                               reuse_context(store, config, toolchain, enabled=reuse))
    arguments = (str(repository), config, store.location, settings)
    summary.cache = settings.cache is not None
    donors = build_donors(repo, config, store, todo) if reuse else {}
    if scheduler:
        _collect_on_cluster(todo, arguments, donors, scheduler, summary, on_outcome)
    elif jobs == 1:
        for commit in todo:
            outcome = collect_commit(commit, *arguments, donor=donors.get(commit.sha))
            summary.outcomes.append(outcome)
            on_outcome(outcome)
    else:
        _collect_in_pool(todo, arguments, donors, jobs, summary, on_outcome)
    if has_benchmarks(config):
        rules = label_rules(config)
        labels = store_history_labels(store, rules)
        summary.perturbed = confirm_perturbed(repository, config, store, on_run=on_perturbed_run,
                                              labels=[row for sha in sorted(labels) for row in labels[sha].to_pylist()])
        # Labelled anew only when runs were stored: otherwise the tables are as they were labelled.
        summary.labels = update_labels(store, rules, None if summary.perturbed.runs else labels)
    store.refresh_snapshots()
    summary.seconds = time.monotonic() - started
    return summary


def build_donors(repo, config: Config, store: Store, todo: list[CommitInfo]) -> dict[str, str]:
    """commit -> the parent whose build and runs stand for it: a parent built (or to be built
    in this collection) from which the commit changes only `[build] unaffected` paths."""
    if not config.build.unaffected or not todo:
        return {}
    candidates = built_commits(store.read("commits")) | {commit.sha for commit in todo}
    return {
        commit.sha: parent
        for commit in todo
        for parent in commit.parents[:1]  # the first parent: the mainline's previous state
        if parent in candidates and changes_only(repo, parent, commit.sha, config.build.unaffected)
    }


def connect_scheduler(scheduler: str):
    """A client of the Dask scheduler at `scheduler`, or a one-line UserError."""
    from distributed import Client

    try:
        return Client(scheduler, timeout="10s")
    except (OSError, TimeoutError, ValueError) as error:
        raise UserError(f"cannot reach the Dask scheduler at {scheduler} ({error})") from None


def _collect_on_cluster(todo, arguments, donors, scheduler: str, summary, on_outcome) -> None:
    from distributed import as_completed

    with connect_scheduler(scheduler) as client:
        # pure=False: a task's result is its side effects in the store, never reuse a cached one.
        # A commit whose donor is not stored by the time it runs is built as any other.
        futures = [client.submit(collect_commit, commit, *arguments, donor=donors.get(commit.sha), pure=False,
                                 key=f"collect-{commit.sha}") for commit in todo]
        try:
            for future in as_completed(futures):
                outcome = future.result()
                summary.outcomes.append(outcome)
                on_outcome(outcome)
        except BaseException:
            client.cancel(futures)
            raise


def _collect_in_pool(todo, arguments, donors, jobs, summary, on_outcome) -> None:
    """Commits run side by side, except that a commit waits for the donor of its build (so
    it copies it instead of building in parallel with it)."""
    pending = {commit.sha for commit in todo}
    waiting: dict[str, list[CommitInfo]] = {}
    with ProcessPoolExecutor(max_workers=jobs, initializer=die_with_parent) as pool:

        def submit(commit: CommitInfo) -> Future:
            return pool.submit(collect_commit, commit, *arguments, donor=donors.get(commit.sha))

        running: set[Future] = set()
        for commit in todo:
            if donors.get(commit.sha) in pending:
                waiting.setdefault(donors[commit.sha], []).append(commit)
            else:
                running.add(submit(commit))
        try:
            while running:
                finished, running = wait(running, return_when=FIRST_COMPLETED)
                for future in finished:
                    outcome = future.result()
                    running |= {submit(commit) for commit in waiting.pop(outcome.sha, [])}
                    summary.outcomes.append(outcome)
                    on_outcome(outcome)
        except BaseException:
            for future in running:
                future.cancel()
            raise


def collect_commit(commit: CommitInfo, repository_path: str, config: Config, store_location: str,
                   settings: CollectSettings, imported: pa.Table | None = None, donor: str | None = None) -> CommitOutcome:
    """Build, analyse and store one commit.  Failures are recorded, not raised.

    With `imported` measurements (results CI produced with its own harness, see
    `selector record`), the benchmarks are not run again; only the profiles are made.
    With a `donor` (a stored parent from which this commit changes only unaffected
    paths), the donor's build and exact runs stand for this commit's: nothing is built."""
    started = time.monotonic()
    store = Store(store_location)
    row = {
        "sha": commit.sha,
        "parents": list(commit.parents),
        "author_time": commit.author_time,
        "subject": commit.subject,
        "build_command": config.build.command,
        "build_config": "",
        "toolchain": settings.toolchain,
        "binary_sha256": "",
        "content_digest": "",
        "symbol_source": "",
        "decoder": "",
        "analysis_notes": "",
        "functions": 0,
        "build_reason": "",
        "build_log_tail": "",
        "build_seconds": 0.0,
        "cache_hits": 0,
        "cache_misses": 0,
        "benchmarks_measured": 0,
        "run_failures": "",
        "profile_failures": "",
        "benchmarks_reused": 0,
    }
    outcome = CommitOutcome(commit.sha, OK)
    timing = any(metric != INSTRUCTIONS for metric in configured_metrics(config))
    try:
        repository = Repository.open(repository_path)
        donated = _donated_runs(store, donor, row, config, settings) if donor and imported is None else None
        if donated is not None:
            _collect_from_donor(store, repository, commit.sha, donor, donated, config, settings.reuse, row, outcome, timing)
        else:
            _build_and_measure(store, repository, commit.sha, config, settings, row, outcome, timing, imported)
        row["build_config"] = build_config_of(repository, commit.sha, store.local_binary(row["binary_sha256"])
                                              if row["binary_sha256"] else None, config)
    except Exception as error:  # noqa: BLE001 - one commit's trouble (git, the disk, a bug) must not end the run
        reason = f"internal error: {type(error).__name__}: {' '.join(str(error).split())}"[:500]
        row.update(build_status="failed", build_reason=reason)
        outcome.status, outcome.reason = "failed", reason
    row.update(child_seconds=outcome.child_seconds, benchmark_seconds=outcome.benchmark_seconds,
               profile_seconds=outcome.profile_seconds, build_reused_from=outcome.build_reused_from)
    row["collected_at"] = datetime.now(timezone.utc)
    store.write("commits", commit.sha, pa.Table.from_pylist([row]))
    outcome.seconds = time.monotonic() - started
    return outcome


def build_config_of(repository: Repository, sha: str, binary: str | None, config: Config) -> str:
    """A commit's `build_config` (collectors.build_config): the flags its `binary` records,
    or without that record (or without a binary) the digest of its build files."""
    return commit_config(binary, lambda: repository.tree_listing(sha), config.build.config_files, config.build.unaffected)


def upgrade_build_configs(store: Store, repository: Repository, config: Config, skip: set[str] = frozenset()) -> int:
    """Give the commits a store holds from before build configurations had a kind (a digest
    of every file named like a build file anywhere in the tree) their current one, read from
    their stored binaries (or their build files: build_config_of), and store it; returns how
    many.  Collection starts with this, so an older store is brought up to date without
    collecting again; the rest of each row is left as it was.  Commits in `skip` are about
    to be collected anew.  (Reading a store does the same in memory for the binaries'
    flags: storage.history.with_current_build_configs.)"""
    stored = store.read("commits")
    if not stored.num_rows or "build_config" not in stored.column_names:
        return 0
    shas = stored["sha"].to_pylist()
    binary = store.binary_lookup(shas, stored["binary_sha256"].to_pylist() if "binary_sha256" in stored.column_names
                                 else [None] * stored.num_rows)
    upgraded = 0
    for sha, current in zip(shas, stored["build_config"].to_pylist()):
        if kind_of(current) is not None or sha in skip or not store.has("commits", sha):
            continue
        try:
            value = build_config_of(repository, sha, binary(sha), config)
        except GitCommandFailed:
            continue  # a commit this clone does not have: left as it was
        row = store.read_one("commits", sha)
        row = row.set_column(row.column_names.index("build_config"), "build_config", pa.array([value] * row.num_rows))
        store.write("commits", sha, row)
        upgraded += 1
    return upgraded


def _build_and_measure(store: Store, repository, sha: str, config: Config, settings: CollectSettings, row: dict,
                       outcome: CommitOutcome, timing: bool, imported: pa.Table | None) -> None:
    worktree = Worktree(repository, sha)
    with worktree as checkout:
        with _machine_lock(timing, exclusive=False):
            build = run_build(checkout, sha, config.build.command, config.project.binary, config.build.timeout,
                              settings.cache, notes=worktree.notes)
        outcome.child_seconds += build.seconds
        outcome.build_notes = build.notes
        outcome.build_seconds, outcome.cache_hits, outcome.cache_misses = build.seconds, build.cache_hits, build.cache_misses
        row.update(build_status=build.status, build_reason=build.reason, build_log_tail=build.log_tail, build_seconds=build.seconds,
                   cache_hits=build.cache_hits, cache_misses=build.cache_misses)
        if build.status != OK:
            outcome.status, outcome.reason = build.status, f"build {build.reason}"
        else:
            row["binary_sha256"] = store.put_binary(build.binary)
            try:
                outcome.reused_analysis = _store_analysis(store, sha, row)
                outcome.functions = row["functions"]
            except UserError as error:  # the binary exists but cannot be analysed (stripped, not x86-64, ...)
                row.update(build_status="failed", build_reason=f"analysis: {error}")
                outcome.status, outcome.reason = "failed", f"analysis: {error}"
        if outcome.status == OK and has_benchmarks(config):
            reuse = settings.reuse if imported is None else None
            _measure(store, sha, config, checkout, row, outcome, timing, reuse, imported)


def _donated_runs(store: Store, donor: str, row: dict, config: Config, settings: CollectSettings) -> dict[str, str] | None:
    """benchmark -> donor for the runs the donor's build can give this commit, or None when this
    commit must be built after all: the donor is not stored with a successful build of the same
    command and toolchain, or a benchmark that cannot be copied needs a built checkout."""
    if settings.reuse is None or not settings.reuse.enabled or not store.has("commits", donor):
        return None
    built = store.read_one("commits", donor).to_pylist()[0]
    # Not the build configuration digest: a build file under an unaffected path (another
    # build system's CMakeLists.txt) changes it, and is by declaration not this build's.
    if built["build_status"] != OK or any(built[key] != row[key] for key in ("build_command", "toolchain")):
        return None
    specs = benchmark_specs(config)
    complete = _complete_runs(store, donor, config) if has_benchmarks(config) else set()
    copied = {spec.name for spec in specs if spec.name in complete and not why_not_reusable(spec, settings.reuse)}
    # A suite's benchmarks are the donor's, whose binary this commit takes: listed from it,
    # and copied as [[benchmark]]s are (reuse allowed, calibrated exact).
    reusable_suites = {suite.name for suite in config.suite if suite.reuse}
    copied |= {name for name in complete if suite_of(name) in reusable_suites and settings.reuse.exact.get(name)}
    if any(names_checkout(spec) for spec in specs if spec.name not in copied):
        return None
    row.update(binary_sha256=built["binary_sha256"], build_status=OK, build_seconds=0.0,
               build_log_tail=f"not built: changes only [build] unaffected paths since {donor}, whose build it takes")
    return {name: donor for name in copied}


def _complete_runs(store: Store, sha: str, config: Config) -> set[str]:
    """Benchmarks of `sha` whose stored runs can stand for another commit's (complete_benchmarks)."""
    if not store.has("measurements", sha):
        return set()
    profiled = None
    if config.profile.tool != "none":
        profiled = benchmarks_in(store.read_one("profiles", sha)) if store.has("profiles", sha) else set()
    return complete_benchmarks(store.read_one("measurements", sha), profiled)


def _collect_from_donor(store: Store, repository, sha: str, donor: str, donated: dict[str, str], config: Config,
                        reuse: ReuseContext, row: dict, outcome: CommitOutcome, timing: bool) -> None:
    """Store the donor's build, analysis and copied runs as this commit's; run the benchmarks
    that cannot be copied on the donor's binary in a checkout of this commit."""
    outcome.build_reused_from = donor
    outcome.reused_analysis = _store_analysis(store, sha, row)
    outcome.functions = row["functions"]
    if not has_benchmarks(config):
        return
    copied_runs, copied_profiles = copy_runs(store, sha, donated)
    outcome.reused = dict(donated)
    measurements, profile_rows, failures = pa.table({}), pa.table({}), {}
    suite = Path(config.project.suite) if config.project.suite else None
    explicit_left = [spec for spec in benchmark_specs(config) if spec.name not in donated]
    if explicit_left or config.suite:  # a suite's benchmarks are known once listed from the binary
        with Worktree(repository, sha) as checkout:
            binary = checkout / config.project.binary
            place_binary(store.local_binary(row["binary_sha256"]), binary)
            found = build_benchmarks(config, checkout, binary)
            to_run = [spec for spec in found.specs if spec.name not in donated]
            outcome.not_reusable = {spec.name: why_not_reusable(spec, reuse) or f"the runs of {donor[:12]} are incomplete"
                                    for spec in to_run}
            outcome.benchmarks_run = len(to_run)
            measurements, profile_rows, failures = _run_suite(sha, config, to_run, checkout, suite, outcome, timing, None)
            failures.update(_discovery_failures(found))
    _store_runs(store, sha, concatenated([measurements, copied_runs]), concatenated([profile_rows, copied_profiles]), failures,
                row, outcome)


def _measure(store: Store, sha: str, config: Config, checkout: Path, row: dict, outcome: CommitOutcome, timing: bool,
             reuse: ReuseContext | None, imported: pa.Table | None = None) -> None:
    """Run the benchmarks (unless their results are `imported`, or an identical binary's
    runs can stand for them) and the profilers on the built checkout; store measurements
    and profiles."""
    suite = Path(config.project.suite) if config.project.suite else None
    binary = checkout / config.project.binary
    found = build_benchmarks(config, checkout, binary)
    specs = found.specs
    plan = plan_reuse(specs, binary, row["content_digest"], checkout, suite, reuse) if reuse and reuse.enabled else None
    outcome.not_reusable = dict(plan.refused) if plan else {}
    with identity_lock(plan.binary_identity if plan and plan.identities else None):
        reused_runs, reused_profiles, outcome.reused = copy_reused(store, sha, plan) if plan else (pa.table({}), pa.table({}), {})
        to_run = [spec for spec in specs if spec.name not in outcome.reused]
        outcome.benchmarks_run = len(to_run)
        measurements, profile_rows, profile_failures = _run_suite(sha, config, to_run, checkout, suite, outcome, timing, imported)
        profile_failures.update(_discovery_failures(found))
        if outcome.reused:
            measurements = concatenated([measurements, reused_runs])
            profile_rows = concatenated([profile_rows, reused_profiles])
        _store_runs(store, sha, measurements, profile_rows, profile_failures, row, outcome)
        if plan:
            profiled = None if config.profile.tool == "none" else benchmarks_in(profile_rows)
            record_owners(store, sha, plan, measurements, profiled)


def _discovery_failures(found: BuildBenchmarks) -> dict[str, str]:
    """Suites that could not be listed, as failures the commit's row keeps (with the profiles')."""
    return {f"suite {suite}": f"its benchmarks could not be listed: {problem}" for suite, problem in found.problems.items()}


def _store_runs(store: Store, sha: str, measurements: pa.Table, profile_rows: pa.Table, profile_failures: dict[str, str],
                row: dict, outcome: CommitOutcome) -> None:
    store.write("measurements", sha, measurements)
    store.write("profiles", sha, profile_rows)
    counted = len(benchmarks_in(measured_runs(measurements)))
    failed = measurements.filter(pc.not_equal(measurements["status"], "ok")).to_pylist() if measurements.num_rows else []
    row.update(
        benchmarks_measured=counted,
        benchmarks_reused=len(outcome.reused),
        run_failures="\n".join(sorted({f"{r['benchmark']}: {r['error']}" for r in failed})),
        profile_failures="\n".join(f"{name}: {why}" for name, why in profile_failures.items()),
    )
    outcome.measured = counted > 0
    outcome.profiled = bool(benchmarks_in(profile_rows))
    outcome.failed_runs = len(failed)


def _run_suite(sha: str, config: Config, specs: list, checkout: Path, suite: Path | None, outcome: CommitOutcome,
               timing: bool, imported: pa.Table | None) -> tuple[pa.Table, pa.Table, dict[str, str]]:
    """Measurements, profile rows and profile failures of running (or importing) `specs`."""
    from perf_selector.collectors.profiler import ROW_COLUMNS

    if not specs:
        return pa.table({}), table_of_rows([], [*ROW_COLUMNS, "commit", "reused_from"]), {}
    with tempfile.TemporaryDirectory(prefix=run_folder_prefix()) as workdir, _machine_lock(timing, exclusive=True):
        runner = BenchmarkRunner(
            specs, checkout / config.project.binary, checkout, suite, cpu=config.run.cpu,
            seed=zlib.crc32(f"{config.run.seed}:{sha}".encode()), workdir=Path(workdir),
            context=RunContext(context_settings(config)),
        )
        facts = {**host_facts(), "context": runner.context.digest()}
        result = runner.run() if imported is None else None
        outcome.benchmark_seconds = runner.child_seconds
        profiling_started = time.monotonic()
        profiles = profile_suite(runner, config.profile.tool, result.callgrind_files if result else None)
        outcome.profile_seconds = time.monotonic() - profiling_started
        outcome.child_seconds += runner.child_seconds
    metrics = {spec.name: spec.metric for spec in specs}
    if imported is not None:
        measurements = with_constants(imported, commit=sha)
    else:
        measurements = pa.Table.from_pylist(
            [
                {"commit": sha, "benchmark": run.benchmark, "metric": metrics[run.benchmark],
                 "unit": metric_unit(metrics[run.benchmark]), "repetition": run.repetition, "warmup": run.warmup,
                 "run_order": run.order, "value": run.value, "status": run.status, "error": run.error, "seconds": run.seconds,
                 **facts}
                for run in result.runs
            ]
        )
    return with_constants(measurements, reused_from=""), with_constants(profiles.rows, commit=sha, reused_from=""), profiles.failures


def _store_analysis(store: Store, sha: str, row: dict) -> bool:
    """Write functions and objects of `sha`; reuse the analysis of an identical binary. Returns True if reused."""
    binary = store.local_binary(row["binary_sha256"])
    key = content_digest(binary)
    owner = store.owner("analyses", key)
    if owner and owner != sha and all(store.has(table, owner) for table in ("commits", "functions", "objects")):
        functions = store.read_one("functions", owner)
        objects = store.read_one("objects", owner)
        previous = store.read_one("commits", owner).to_pylist()[0]
        row.update(symbol_source=previous["symbol_source"], decoder=previous["decoder"], analysis_notes=previous["analysis_notes"])
        reused = True
    else:
        analysis = analyse_binary(binary)
        functions, objects = analysis.functions, analysis.objects
        row.update(symbol_source=analysis.symbol_source, decoder=analysis.decoder, analysis_notes="\n".join(analysis.notes))
        reused = False
    row["content_digest"] = key
    store.write("functions", sha, with_constants(functions, commit=sha))
    store.write("objects", sha, with_constants(objects, commit=sha))
    if not reused:
        store.set_owner("analyses", key, sha)
    row["functions"] = functions.num_rows
    return reused
