"""`selector record`: make a commit CI has benchmarked the next known version.

After CI runs the selected benchmarks on a commit, `record` stores the commit's
build, static analysis, measurements and profiles, so later commits are compared
with it and `selector train` learns from it.  Measurements come from the tool's own
runner (the configured benchmarks run now), or from a results file CI already
produced (pyperf, Google Benchmark, asv); the profiles are always made here.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from collectors.builds import find_compiler_cache, toolchain_version
from collectors.errors import UserError
from collectors.repository import Repository
from collectors.result_import import import_results
from selector.collect import CollectSettings, CommitOutcome, collect_commit
from selector.config import Config
from selector.labelling import LabelSummary, update_labels
from storage.store import Store


@dataclass
class RecordResult:
    outcome: CommitOutcome
    labels: LabelSummary
    imported: int  # measurement rows taken from a results file


def record(top: Path, config: Config, store: Store, revision: str, results: list[Path] | None = None,
           results_format: str | None = None, force: bool = False) -> RecordResult:
    """Record one commit.  Several results files may be imported at once (one per CI job);
    a commit recorded before keeps the measurements of benchmarks the new files do not cover."""
    repository = Repository.open(top)
    commits = repository.commits(revision, max_count=1)
    if not commits:
        raise UserError(f"{revision!r} is not a commit of {top}")
    commit = commits[0]
    imported = None
    if results:
        configured = {b.name for b in config.benchmark}
        frames = []
        for path in results:
            frame = import_results(path, results_format)
            unknown = sorted(set(frame["benchmark"]) - configured)
            if unknown:
                raise UserError(f"{path}: benchmark(s) {', '.join(unknown)} are not configured in selector.toml; add a "
                                "[[benchmark]] of that name (its command is what profiles it)")
            _check_metrics(path, frame, config)
            frames.append(frame)
        imported = pd.concat(frames, ignore_index=True)
        if store.has("measurements", commit.sha):
            earlier = store.read_one("measurements", commit.sha)
            kept = earlier[~earlier["benchmark"].isin(set(imported["benchmark"]))].drop(columns=["commit"])
            imported = pd.concat([kept, imported], ignore_index=True)
        imported["run_order"] = range(len(imported))
    if store.has("commits", commit.sha) and store.has("measurements", commit.sha) and not force and imported is None:
        raise UserError(f"{commit.sha[:12]} is already recorded; pass --force to measure it again")
    store.sweep_temporaries()
    outcome = collect_commit(commit, str(top), config, store.location,
                             CollectSettings(toolchain_version(), find_compiler_cache()), imported=imported)
    if outcome.status != "ok":
        raise UserError(f"recording {commit.sha[:12]} failed: {outcome.reason}")
    labels = update_labels(store, config)
    store.refresh_snapshots()
    return RecordResult(outcome, labels, 0 if imported is None else len(imported))


def _check_metrics(path: Path, frame: pd.DataFrame, config: Config) -> None:
    """Results of another metric or unit are never stored beside a benchmark's own: a time in
    seconds against a count of instructions would read as a -100% change."""
    configured = {b.name: b.metric for b in config.benchmark}
    for (benchmark, metric), rows in frame.groupby(["benchmark", "metric"]):
        if configured[benchmark] != metric:
            unit = rows["unit"].iloc[0] if "unit" in rows else "?"
            raise UserError(f"{path}: {benchmark} holds {metric} ({unit}) but is configured with metric "
                            f"{configured[benchmark]!r}; results of another metric are never compared: configure "
                            f"metric = {metric!r} for it, or import results of its own metric")
