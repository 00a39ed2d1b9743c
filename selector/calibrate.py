"""`selector calibrate`: how noisy is each benchmark, and how often does the labeler cry wolf?

One build is measured against itself (A/A): each round runs 2N repetitions of a
benchmark in random order and splits them into two groups of N, which the labeler then
compares.  Any positive is a false positive.  Collection, though, compares commits
measured minutes apart, so consecutive rounds are compared too (session A/A): drift of
the machine between sessions shows there, not in the interleaved rounds.  A metric whose runs are all identical is
*exact*: labels of that benchmark then use the effect alone (DESIGN.md), and one round
is enough to show it.
"""

from __future__ import annotations

import dataclasses
import statistics
import tempfile
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from collectors.benchmark_runner import BenchmarkRunner, BenchmarkSpec
from collectors.builds import OK, Worktree, build_config_digest, run_build
from collectors.errors import UserError
from collectors.repository import Repository
from selector.config import Config, benchmark_specs, label_rules
from storage.labels import label_pair, update_labels
from storage.store import Store


def calibrate(
    repository: Path, config: Config, store: Store, revision: str = "HEAD", rounds: int = 10,
    on_round: Callable[[str, int], None] = lambda benchmark, done: None,
) -> pd.DataFrame:
    """A/A-measure every benchmark on the build of `revision`; store and return one row per benchmark."""
    specs = benchmark_specs(config)
    if not specs:
        raise UserError("no [[benchmark]] in the configuration: nothing to calibrate")
    if rounds < 1:
        raise UserError(f"--rounds must be at least 1 (got {rounds})")
    repo = Repository.open(repository)
    sha = repo.resolve(revision)
    if sha is None:
        raise UserError(f"unknown revision {revision!r}")
    suite = Path(config.project.suite) if config.project.suite else None
    rows = []
    for candidate in [sha, *_built_ancestors(repo, store, sha)]:
        with Worktree(repo, candidate) as checkout, tempfile.TemporaryDirectory(prefix="selector-calibrate-") as workdir:
            build = run_build(checkout, candidate, config.build.command, config.project.binary, config.build.timeout,
                              build_config_digest(repo, candidate, config.build.config_files))
            if build.status != OK:
                failure = f"the build of {candidate[:12]} failed ({build.reason})"
                continue
            for spec in specs:
                rows.append(_calibrate_one(spec, config, checkout, suite, Path(workdir), rounds, candidate, on_round))
            break
    if not rows:
        raise UserError(f"cannot calibrate: {failure}, and no ancestor of it is stored with a successful build; "
                        "name a commit that builds")
    table = pd.DataFrame(rows)
    for row in rows:
        store.write("calibration", row["benchmark"], pa.Table.from_pylist([row]))
    # Exactness decides how pairs are labelled: the stored labels follow the new calibration
    # now, without a new collection.
    update_labels(store, label_rules(config))
    store.refresh_snapshots()
    return table


def _built_ancestors(repo: Repository, store: Store, sha: str, depth: int = 49) -> list[str]:
    """The stored ancestors of `sha` (first parents, newest first) whose build succeeded: where
    calibration goes when the commit asked for does not build (the newest of a range often)."""
    commits = store.read("commits")
    if not commits.num_rows:
        return []
    built = set(commits.filter(pc.equal(commits["build_status"], OK))["sha"].to_pylist())
    ancestors = repo.first_parent_ancestors(sha, depth)
    return [ancestor for ancestor in ancestors if ancestor in built][:1]


def _calibrate_one(spec: BenchmarkSpec, config: Config, checkout: Path, suite, workdir: Path, rounds: int, sha: str,
                   on_round) -> dict:
    doubled = dataclasses.replace(spec, repetitions=2 * spec.repetitions)
    values: list[float] = []
    sessions: list[list[float]] = []  # group A of each round: one separate session each
    false_positives = 0
    done = 0
    for round_number in range(rounds):
        runner = BenchmarkRunner([doubled], checkout / config.project.binary, checkout, suite, cpu=config.run.cpu,
                                 seed=config.run.seed * 1000 + round_number, workdir=workdir)
        runs = [run for run in runner.run().runs if not run.warmup]
        failed = [run for run in runs if run.status != "ok"]
        if failed:
            raise UserError(f"benchmark {spec.name} failed during calibration: {failed[0].error}")
        # Repetitions 0..N-1 are group A, N..2N-1 group A'; the schedule interleaved them at random.
        group_a = [run.value for run in runs if run.repetition < spec.repetitions]
        group_b = [run.value for run in runs if run.repetition >= spec.repetitions]
        values += group_a + group_b
        sessions.append(group_a)
        label = label_pair(group_a, group_b, config.labels.alpha, config.labels.min_effect, exact=False, direction=spec.direction)
        false_positives += bool(label.label)
        done += 1
        on_round(spec.name, done)
        if round_number == 0 and len(set(values)) == 1:
            break  # identical runs: the metric is exact, more rounds cannot say otherwise
    # Collection compares commits measured at different times: consecutive rounds are
    # A/A comparisons across sessions, which also see the machine's drift.
    session_pairs = [
        label_pair(first, second, config.labels.alpha, config.labels.min_effect, exact=False, direction=spec.direction)
        for first, second in zip(sessions, sessions[1:])
    ]
    session_positives = sum(bool(label.label) for label in session_pairs)
    mean = statistics.fmean(values)
    return {
        "benchmark": spec.name,
        "metric": spec.metric,
        "commit": sha,
        "repetitions": spec.repetitions,
        "rounds": done,
        "runs": len(values),
        "median": statistics.median(values),
        "cv": statistics.pstdev(values) / mean if mean else 0.0,
        "exact": len(set(values)) == 1,
        "false_positives": false_positives,
        "false_positive_rate": false_positives / done,
        "session_false_positives": session_positives,
        "session_false_positive_rate": session_positives / len(session_pairs) if session_pairs else 0.0,
        "alpha": config.labels.alpha,
        "min_effect": config.labels.min_effect,
        "measured_at": datetime.now(timezone.utc),
    }
