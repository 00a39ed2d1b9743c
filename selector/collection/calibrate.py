"""`selector calibrate`: how noisy is each benchmark, and how often does the labeler cry wolf?

One build is measured against itself (A/A): each round runs 2N repetitions of a
benchmark in random order and splits them into two groups of N, which the labeler then
compares.  Any positive is a false positive.  Collection, though, compares commits
measured minutes apart, so consecutive rounds are compared too (session A/A): drift of
the machine between sessions shows there, not in the interleaved rounds.  How far apart
the medians of two sessions lie (the 1 - alpha quantile over every pair of rounds) is the
benchmark's *session drift*: a pair of commits measured in different sessions is called
changed only beyond it, and one whose drift reaches `min_effect` can only be decided by
running both binaries in one session (`selector confirm`).  A metric whose runs are all identical is
*exact*: labels of that benchmark then use the effect alone (DESIGN.md).  Every round
asked for runs: a harness that loops until a time has passed can settle on one count in a
round and another in the next, so a first round of identical runs shows nothing for certain
(`stop_when_identical` stops there all the same, a speed its caller asks for by name).  One whose runs differ by at most a tenth of `min_effect` (its
*tolerance*: multi-threaded code under callgrind) is near-exact and labelled the same
way; one whose runs differ by more than `min_effect` is *unfit* to be labelled by its
count alone, and calibration says so.

A/A in one context cannot see measurement bias (collectors/run_context.py): both
groups share one environment and one path.  So each benchmark is run again in perturbed
contexts, as other machines and shells would run it (the environment larger by a few
and by a thousand bytes, the paths longer), and the largest change of its median there
is its *layout spread*: labels call a pair changed only beyond it.

For a noisy metric, calibration also says how many repetitions a side the test needs to
detect `min_effect` at `alpha` (80% power), so `collect` can say when a benchmark's
repetitions cannot.
"""

from __future__ import annotations

import dataclasses
import math
import random
import statistics
import tempfile
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable

import pandas as pd
import pyarrow as pa

from perf_selector.collectors.metrics import is_count, metric_unit, registered
from perf_selector.collectors.benchmark_runner import BenchmarkRunner, BenchmarkSpec, file_stem, run_folder_prefix, sweep_run_folders
from perf_selector.collectors.builds import OK, BuildFailed, Worktree, run_build
from perf_selector.collectors.run_context import Perturbation, RunContext
from perf_selector.collectors.errors import UserError
from perf_selector.collectors.repository import Repository
from perf_selector.selector.benchmarks import build_benchmarks
from perf_selector.selector.config import Config, context_settings, has_benchmarks, label_rules, require_suite
from perf_selector.storage.history import built_commits
from perf_selector.storage.labels import drift_quantile, fewest_decisive_runs, label_paired, label_pair, label_spread, near_exact, update_labels
from perf_selector.storage.store import Store


FIRST_ROUNDS = 2  # a first collection's calibration (collect does it when the store has none)


def needs_calibration(config: Config, store: Store) -> bool:
    """Does the store lack the calibration its benchmarks' labels and reuse need?"""
    return has_benchmarks(config) and not store.read("calibration").num_rows


def calibrate(
    repository: Path, config: Config, store: Store, revision: str = "HEAD", rounds: int = 10,
    on_round: Callable[[str, int], None] = lambda benchmark, done: None, stop_when_identical: bool = False,
    long_run: float | None = None,
) -> pd.DataFrame:
    """A/A-measure every benchmark on the build of `revision`, `rounds` rounds each; store and return
    one row per benchmark.  `stop_when_identical`: a benchmark whose first round's runs are all
    identical stops there (faster, and blind to a count that changes from one round to the next).
    `long_run` (seconds): each benchmark runs once first, stopped at that time; one stopped there is
    not calibrated: its row is unfit, saying why and what to do."""
    if not has_benchmarks(config):
        raise UserError("no [[benchmark]] or [[suite]] in the configuration: nothing to calibrate")
    require_suite(config)
    if rounds < 1:
        raise UserError(f"--rounds must be at least 1 (got {rounds})")
    # A calibration killed half way (or a collection killed while calibrating first) leaves
    # its run folder; the next calibration or collection sweeps it.
    sweep_run_folders()
    repo = Repository.open(repository)
    sha = repo.resolve(revision)
    if sha is None:
        raise UserError(f"unknown revision {revision!r}")
    suite = Path(config.project.suite) if config.project.suite else None
    rows, failure = [], None
    for candidate in [sha, *_built_ancestors(repo, store, sha)]:
        with Worktree(repo, candidate) as checkout, tempfile.TemporaryDirectory(prefix=run_folder_prefix()) as workdir:
            build = run_build(checkout, candidate, config.build.command, config.project.binary, config.build.timeout)
            if build.status != OK:
                failure = failure or BuildFailed(candidate, build.reason, config.build.command, build.log_tail,
                                                 "cannot calibrate: no ancestor of it builds in the store either; name a "
                                                 "commit that builds (`selector calibrate COMMIT`), or fix the build")
                continue
            found = build_benchmarks(config, checkout, build.binary)
            if found.problems:
                raise UserError(f"cannot calibrate {candidate[:12]}: {found.describe_problems()}")
            for spec in found.specs:
                too_long = _first_run_too_long(spec, config, checkout, suite, Path(workdir), candidate, long_run) \
                    if long_run else None
                rows.append(too_long or _calibrate_one(spec, config, checkout, suite, Path(workdir), rounds, candidate,
                                                       on_round, stop_when_identical))
            break
    if not rows:
        raise failure
    table = pd.DataFrame(rows)
    for row in rows:
        # the row names the benchmark; the file, a name a suite's benchmark ("suite/BM_x<int>") can have
        store.write("calibration", file_stem(row["benchmark"]), pa.Table.from_pylist([row]))
    # Exactness decides how pairs are labelled: the stored labels follow the new calibration
    # now, without a new collection.
    update_labels(store, label_rules(config))
    store.refresh_snapshots()
    return table


def _built_ancestors(repo: Repository, store: Store, sha: str, depth: int = 49) -> list[str]:
    """The stored ancestors of `sha` (first parents, newest first) whose build succeeded: where
    calibration goes when the commit asked for does not build (the newest of a range often)."""
    built = built_commits(store.read("commits"))
    if not built:
        return []
    ancestors = repo.first_parent_ancestors(sha, depth)
    return [ancestor for ancestor in ancestors if ancestor in built][:1]


# What differs between the machines and shells that run a benchmark: the environment's
# size (a few bytes, a few hundred, a thousand) and the paths' length.  Sizes not multiples
# of 16 move the stack's alignment; a thousand bytes moves it across pages too.
PERTURBATIONS = (Perturbation(environment_padding=7), Perturbation(environment_padding=200),
                 Perturbation(environment_padding=1000), Perturbation(path_padding=5), Perturbation(path_padding=40))
POWER = 0.8  # of the test to detect min_effect, for repetitions_needed


def _calibrate_one(spec: BenchmarkSpec, config: Config, checkout: Path, suite, workdir: Path, rounds: int, sha: str,
                   on_round, stop_when_identical: bool = False) -> dict:
    values, sessions, false_positives, done, seconds = _aa_rounds(spec, config, checkout, suite, workdir, rounds, sha,
                                                                  on_round, stop_when_identical)
    # Collection compares commits measured at different times: consecutive rounds are
    # A/A comparisons across sessions, which also see the machine's drift.
    session_pairs = [
        label_pair(first, second, config.labels.alpha, config.labels.min_effect, exact=False, direction=spec.direction)
        for first, second in zip(sessions, sessions[1:])
    ]
    session_positives = sum(bool(label.label) for label in session_pairs)
    mean, median = statistics.fmean(values), statistics.median(values)
    cv = statistics.pstdev(values) / mean if mean else 0.0
    tolerance = (max(values) - min(values)) / abs(median) if median else 0.0
    min_effect, alpha = config.labels.min_effect, config.labels.alpha
    repeatable = near_exact(tolerance, min_effect)
    drift = 0.0 if repeatable else session_drift(sessions, alpha)
    # Every count is checked, repeatable or not: a harness that loops until a time has passed
    # counts differently on every run of a loaded machine, and the clock, with its remedy, is
    # then the reason to give, not threads.  The growth must exceed the A/A spread.
    clock_threshold = max(tolerance, min_effect / 10)
    clock_change = _clock_change(spec, config, checkout, suite, workdir, clock_threshold) \
        if is_count(spec.metric) and config.run.fixed_clock is False else 0.0
    clocked = clock_change > clock_threshold
    repeatable = repeatable and not clocked
    layout_spread, contexts = _layout_spread(spec, config, checkout, suite, workdir, sha, values, repeatable)
    needed = 1 if repeatable else repetitions_needed(cv, min_effect, alpha)
    return {
        "benchmark": spec.name,
        "metric": spec.metric,
        "commit": sha,
        "repetitions": spec.repetitions,
        "rounds": done,
        "runs": len(values),
        "run_seconds": statistics.median(seconds),
        "median": median,
        "cv": cv,
        "exact": len(set(values)) == 1 and not clocked,
        "tolerance": tolerance,
        "layout_spread": layout_spread,
        "spread": label_spread(spec.metric, repeatable, tolerance, layout_spread),
        "contexts": contexts,
        "session_drift": drift,
        **(_clock_unfit(spec, clock_change) if clocked else _fitness(spec, tolerance, repeatable, needed, min_effect, drift)),
        "clock_change": clock_change,
        "repetitions_needed": needed,
        "false_positives": false_positives,
        "false_positive_rate": false_positives / done,
        "session_false_positives": session_positives,
        "session_false_positive_rate": session_positives / len(session_pairs) if session_pairs else 0.0,
        "alpha": alpha,
        "min_effect": min_effect,
        "measured_at": datetime.now(timezone.utc),
    }


def session_drift(sessions: list[list[float]], alpha: float) -> float:
    """How far apart the medians of two sessions of one build lie: the 1 - `alpha` quantile
    of |median_j / median_i - 1| over every pair of sessions (0 with fewer than two).  It
    holds the machine's drift and the medians' own scatter at the configured repetitions:
    the effect an unpaired label of one build against itself shows, which a change must
    exceed.  Sessions minutes apart see less drift than days apart can: a lower bound."""
    medians = [statistics.median(values) for values in sessions if values]
    effects = [later / earlier - 1 for position, earlier in enumerate(medians) for later in medians[position + 1:]
               if earlier]
    return drift_quantile(effects, alpha)


def _aa_rounds(spec: BenchmarkSpec, config: Config, checkout: Path, suite, workdir: Path, rounds: int, sha: str,
               on_round, stop_when_identical: bool = False) -> tuple[list[float], list[list[float]], int, int, list[float]]:
    """All A/A values in the normalised context, group A of each round (a session each),
    the rounds the labeller called changed, the rounds run (all `rounds`, unless
    `stop_when_identical` and the first round's runs are identical) and each run's seconds."""
    doubled = dataclasses.replace(spec, repetitions=2 * spec.repetitions)
    values: list[float] = []
    seconds: list[float] = []
    sessions: list[list[float]] = []
    false_positives = done = 0
    for round_number in range(rounds):
        runs = _measured(doubled, config, checkout, suite, workdir, config.run.seed * 1000 + round_number, RunContext(
            context_settings(config)))
        # Repetitions 0..N-1 are group A, N..2N-1 group A'; the schedule interleaved them at random.
        group_a = [run.value for run in runs if run.repetition < spec.repetitions]
        group_b = [run.value for run in runs if run.repetition >= spec.repetitions]
        values += group_a + group_b
        seconds += [run.seconds for run in runs]
        sessions.append(group_a)
        label = label_pair(group_a, group_b, config.labels.alpha, config.labels.min_effect, exact=False, direction=spec.direction)
        false_positives += bool(label.label)
        done += 1
        on_round(spec.name, done)
        if stop_when_identical and round_number == 0 and len(set(values)) == 1:
            break  # asked for by name: identical runs in one round taken for exact
    return values, sessions, false_positives, done, seconds


LONG_RUN_SECONDS = 10.0  # a run longer than this, under the profiler, is felt on every commit collected


def too_long_to_measure(table: pd.DataFrame) -> list[str]:
    """One line for each benchmark calibrated in full whose run takes over LONG_RUN_SECONDS as
    measured (under valgrind when its metric is a valgrind tool's): what it costs on every commit,
    and how to make it cheaper without editing the project's benchmarks.  (One whose first run
    stopped calibration already says so in its unfit_reason.)"""
    return [_too_long_line(row.benchmark, row.metric, row.repetitions, row.run_seconds)
            for row in table.itertuples() if row.run_seconds > LONG_RUN_SECONDS and row.rounds > 0]


def _too_long_line(benchmark: str, metric_name: str, repetitions: int, seconds: float, stopped: bool = False) -> str:
    """What the benchmark costs on every commit and how to shorten it (the name first unless it
    `stopped`: that line is a row's unfit_reason, printed after the name)."""
    metric = registered(metric_name)
    under = f" under {metric.tool}" if metric and metric.tool else ""
    takes = f"one run takes over {seconds:.0f} s{under} (stopped there)" if stopped else \
        f"{benchmark}: one run takes {seconds:.0f} s{under}"
    return (f"{takes}, {repetitions} repetitions {'over ' if stopped else ''}{repetitions * seconds:.0f} s on "
            "every commit collected; too long to measure on every commit: give it a smaller input through "
            "[project] suite ({suite} in its command), or fewer iterations by an argument, rather than editing the "
            "project's script")


def _first_run_too_long(spec: BenchmarkSpec, config: Config, checkout: Path, suite, workdir: Path, sha: str,
                        long_run: float) -> dict | None:
    """The row of a benchmark whose first run is stopped after `long_run` seconds, not calibrated
    further; None when that run ends in time (it is then calibrated as asked).  One run of a
    script that takes 15 minutes under callgrind says all a user needs to know, where ten
    rounds would take hours."""
    if spec.timeout <= long_run:
        return None  # its own timeout comes first: calibration says it failed, as before
    probe = dataclasses.replace(spec, repetitions=1, warmup=0, timeout=long_run)
    runs = [run for run in _runner(probe, config, checkout, suite, workdir, config.run.seed * 1000, RunContext(
        context_settings(config))).run().runs if not run.warmup]
    if not any(run.status != "ok" and run.seconds >= long_run for run in runs):
        _succeeded(runs)  # a run that failed otherwise stops calibration, naming why
        return None
    reason = (_too_long_line(spec.name, spec.metric, spec.repetitions, long_run, stopped=True) +
              f"; not calibrated (its first run is over the {long_run:g} s asked): until it is, its counts are not "
              "known exact and its labels may stay undecided; shorten it, or calibrate it with --long-run 0")
    return {"benchmark": spec.name, "metric": spec.metric, "commit": sha, "repetitions": spec.repetitions, "rounds": 0,
            "runs": 0, "run_seconds": float(long_run), "median": float("nan"), "cv": float("nan"), "exact": False,
            "tolerance": float("nan"), "layout_spread": 0.0, "spread": 0.0, "contexts": "",
            "session_drift": float("nan"), "fit": False, "unfit_reason": reason, "clock_change": float("nan"),
            "repetitions_needed": spec.repetitions, "false_positives": 0, "false_positive_rate": float("nan"),
            "session_false_positives": 0, "session_false_positive_rate": float("nan"),
            "alpha": config.labels.alpha, "min_effect": config.labels.min_effect,
            "measured_at": datetime.now(timezone.utc)}


def _clock_change(spec: BenchmarkSpec, config: Config, checkout: Path, suite, workdir: Path, threshold: float) -> float:
    """A count's relative growth with the clock at a quarter speed against the same clock library
    at full speed (libfaketime): 0 for a benchmark whose work does not depend on the clock; a
    harness that loops until a time has passed runs more iterations.  One run of each first;
    only a growth beyond `threshold` is run once more on both sides and must hold there too,
    as `clock_growth` judges.  Without libfaketime the check cannot run: 0."""
    from perf_selector.collectors.run_context import SLOW_CLOCK, TRUE_CLOCK, faketime_library

    if faketime_library() is None:
        return 0.0
    once = dataclasses.replace(spec, repetitions=1, warmup=0)
    counts: dict[str, list[float]] = {TRUE_CLOCK: [], SLOW_CLOCK: []}

    def measure(clock: str, seed: int) -> None:
        context = RunContext(dataclasses.replace(context_settings(config), clock=clock))
        try:
            counts[clock].append(_measured(once, config, checkout, suite, workdir, seed, context)[0].value)
        finally:
            context.release()

    measure(TRUE_CLOCK, config.run.seed * 1000 + 900)
    measure(SLOW_CLOCK, config.run.seed * 1000 + 901)
    if clock_growth(counts[TRUE_CLOCK], counts[SLOW_CLOCK]) > threshold:
        measure(TRUE_CLOCK, config.run.seed * 1000 + 902)
        measure(SLOW_CLOCK, config.run.seed * 1000 + 903)
    return clock_growth(counts[TRUE_CLOCK], counts[SLOW_CLOCK])


def clock_growth(true_clock: list[float], slow_clock: list[float]) -> float:
    """How much more work the slow clock's run did than the true clock's run just before it, in
    the pair where it did least, relative.  A harness that loops until a time has passed only
    ever does more under a slower clock, so a count that shrinks is not one (a run libfaketime
    failed to fake reads the real clock and skips the library's own locking: the runner now
    removes what made that happen, run_context.remove_faketime_leftovers, and a stray run of any
    cause cannot call a benchmark clocked), and a growth one pair of runs showed must show in
    every pair.  Pairs,
    not all runs against all: a timed loop's count also follows the machine's load, which
    drifts between pairs more than within one."""
    growths = [(slow - true) / abs(true) if true else 0.0 for true, slow in zip(true_clock, slow_clock)]
    return min(growths) if growths else 0.0


def _clock_unfit(spec: BenchmarkSpec, change: float) -> dict:
    remedy = ("give it a fixed iteration count (Google Benchmark: --benchmark_min_time=<N>x) or set [run] fixed_clock = "
              "true (a deterministic clock: docs/configuration.md)")
    return {"fit": False, "unfit_reason": (
        f"its count depends on the clock: with the clock at a quarter speed it changed by {change:+.1%} (the harness loops "
        f"until a time has passed), so it is not exact and the count cannot label it; {remedy}")}


def _layout_spread(spec: BenchmarkSpec, config: Config, checkout: Path, suite, workdir: Path, sha: str,
                   normal: list[float], repeatable: bool) -> tuple[float, str]:
    """The largest relative change under the perturbed contexts, and each context's change.

    A repeatable metric needs one run in each context, against the normalised runs.  A
    noisy one is measured in pairs, each round one run in the normalised context and one in
    the perturbed one in a random order, and judged by the paired test: run one context
    after the other and the machine's drift between them would pass for layout (on a busy
    machine, sequential contexts of a 20 ms benchmark differed by up to 124%).  A change
    counts only where the test finds it (at alpha): noise alone must not widen the spread."""
    median = statistics.median(normal)
    spread, described = 0.0, []
    for position, perturbation in enumerate(PERTURBATIONS):
        seed = config.run.seed * 1000 + 500 + position
        if repeatable:
            change, found = _sequential_change(spec, config, checkout, suite, workdir, seed, perturbation, median), True
        else:
            change, found = _paired_change(spec, config, checkout, suite, workdir, seed, perturbation)
        if found:
            spread = max(spread, abs(change))
        described.append(f"{perturbation.describe()}: {change:+.3%}{'' if found else ' (not significant)'}")
    return spread, "; ".join(described)


def _sequential_change(spec: BenchmarkSpec, config: Config, checkout: Path, suite, workdir: Path, seed: int,
                       perturbation: Perturbation, median: float) -> float:
    """A repeatable metric's relative change in a perturbed context: one run there."""
    context = RunContext(context_settings(config), perturbation)
    try:
        runs = _measured(dataclasses.replace(spec, repetitions=1), config, checkout, suite, workdir, seed, context)
    finally:
        context.release()
    return (runs[0].value - median) / abs(median) if median else 0.0


def _paired_change(spec: BenchmarkSpec, config: Config, checkout: Path, suite, workdir: Path, seed: int,
                   perturbation: Perturbation) -> tuple[float, bool]:
    """A noisy metric's relative change in a perturbed context, from rounds of one normalised
    and one perturbed run (in a random order), and whether the paired test finds it."""
    contexts = [RunContext(context_settings(config)), RunContext(context_settings(config), perturbation)]
    try:
        runners = [_runner(spec, config, checkout, suite, workdir, seed, context) for context in contexts]
        order = random.Random(seed)
        values: list[list[float]] = [[], []]
        for number in range(max(spec.repetitions, 6)):  # six rounds: the fewest where Wilcoxon can reach 0.05
            for side in order.sample([0, 1], 2):
                values[side].append(_succeeded([runners[side].run_once(spec, number, 2 * number + side)])[0].value)
    finally:
        for context in contexts:
            context.release()
    label = label_paired(values[0], values[1], config.labels.alpha, 0.0)
    return label.effect, label.p_value < config.labels.alpha


def _measured(spec: BenchmarkSpec, config: Config, checkout: Path, suite, workdir: Path, seed: int,
              context: RunContext) -> list:
    """The measured runs of `spec` on the checkout's build in `context`; a failed run stops calibration."""
    return _succeeded([run for run in _runner(spec, config, checkout, suite, workdir, seed, context).run().runs
                       if not run.warmup])


def _runner(spec: BenchmarkSpec, config: Config, checkout: Path, suite, workdir: Path, seed: int,
            context: RunContext) -> BenchmarkRunner:
    return BenchmarkRunner([spec], checkout / config.project.binary, checkout, suite, cpu=config.run.cpu, seed=seed,
                           workdir=workdir, context=context)


def _succeeded(runs: list) -> list:
    """`runs`, when every one succeeded; a failed run stops calibration, naming why."""
    failed = [run for run in runs if run.status != "ok"]
    if failed:
        raise UserError(f"benchmark {failed[0].benchmark} failed during calibration: {failed[0].error}")
    return runs


def repetitions_needed(cv: float, min_effect: float, alpha: float, power: float = POWER) -> int:
    """Runs a side for the Mann-Whitney test to detect a change of `min_effect` at `alpha`
    with `power`, for a metric of relative noise `cv`: the normal approximation's
    2 ((z_{1-alpha/2} + z_power) cv / min_effect)^2, over the test's efficiency (3/pi), and at
    least what lets its smallest p-value fall below alpha."""
    from scipy.stats import norm

    smallest = fewest_decisive_runs(alpha)
    if min_effect <= 0:
        return smallest
    z = norm.ppf(1 - alpha / 2) + norm.ppf(power)
    return max(smallest, math.ceil(2 * (z * cv / min_effect) ** 2 * math.pi / 3))


def _fitness(spec: BenchmarkSpec, tolerance: float, repeatable: bool, needed: int, min_effect: float,
             drift: float = 0.0) -> dict:
    """Whether the benchmark's metric can label it as configured, and why not."""
    if is_count(spec.metric) and tolerance > min_effect:
        return {"fit": False, "unfit_reason": (
            f"A/A {metric_unit(spec.metric)} counts of one build differ by {tolerance:.3%} (> min_effect {min_effect:g}): unfit to be "
            f"labelled by the count alone (threads or timing decide what runs); labels use the test, which needs "
            f"{needed} repetitions a side, or isolate the benchmark's own work")}
    reasons = []
    if not repeatable and spec.repetitions < needed:
        reasons.append(f"{spec.repetitions} repetitions cannot detect min_effect {min_effect:g} at this noise: set "
                       f"repetitions = {needed} (or raise min_effect)")
    if not repeatable and drift >= min_effect:
        reasons.append(f"two sessions of one build differ by up to {drift:.2%} (>= min_effect {min_effect:g}): labels of "
                       "commits measured in different sessions cannot show min_effect and are left undecided; selector "
                       "confirm decides them by running both binaries in one session (or raise min_effect)")
    return {"fit": not reasons, "unfit_reason": "; ".join(reasons)}
