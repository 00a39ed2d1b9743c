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

import pyarrow as pa
import pyarrow.compute as pc

from collectors.arrow_rows import concatenated

from collectors.builds import find_compiler_cache, toolchain_version
from collectors.errors import UserError
from collectors.repository import Repository
from collectors.result_import import import_results
from selector.collect import CollectSettings, CommitOutcome, collect_commit
from selector.config import Config, label_rules, require_suite
from storage.labels import LabelSummary, update_labels
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
    if not results:
        require_suite(config)  # it runs the benchmarks
    if results:
        configured = {b.name for b in config.benchmark}
        tables = []
        for path in results:
            table = import_results(path, results_format)
            unknown = sorted(set(table["benchmark"].to_pylist()) - configured)
            if unknown:
                raise UserError(f"{path}: benchmark(s) {', '.join(unknown)} are not configured in selector.toml; add a "
                                "[[benchmark]] of that name (its command is what profiles it)")
            _check_metrics(path, table, config)
            tables.append(table)
        imported = concatenated(tables)
        if store.has("measurements", commit.sha):
            earlier = store.read_one("measurements", commit.sha)
            replaced = pc.is_in(earlier["benchmark"].cast(pa.large_string()),
                                value_set=pc.unique(imported["benchmark"].cast(pa.large_string())))
            kept = earlier.filter(pc.invert(replaced)).drop_columns(["commit"])
            imported = concatenated([kept, imported])
        imported = imported.set_column(imported.schema.get_field_index("run_order"), "run_order",
                                       pa.array(range(imported.num_rows), pa.int64()))
    if store.has("commits", commit.sha) and store.has("measurements", commit.sha) and not force and imported is None:
        raise UserError(f"{commit.sha[:12]} is already recorded; pass --force to measure it again")
    store.sweep_temporaries()
    outcome = collect_commit(commit, str(top), config, store.location,
                             CollectSettings(toolchain_version(), find_compiler_cache()), imported=imported)
    if outcome.status != "ok":
        raise UserError(f"recording {commit.sha[:12]} failed: {outcome.reason}")
    labels = update_labels(store, label_rules(config))
    store.refresh_snapshots()
    return RecordResult(outcome, labels, 0 if imported is None else len(imported))


def _check_metrics(path: Path, table: pa.Table, config: Config) -> None:
    """Results of another metric or unit are never stored beside a benchmark's own: a time in
    seconds against a count of instructions would read as a -100% change."""
    configured = {b.name: b.metric for b in config.benchmark}
    units = table["unit"].to_pylist() if "unit" in table.column_names else ["?"] * table.num_rows
    first_unit = {}
    for benchmark, metric, unit in zip(table["benchmark"].to_pylist(), table["metric"].to_pylist(), units):
        first_unit.setdefault((benchmark, metric), unit)
    for (benchmark, metric), unit in sorted(first_unit.items()):
        if configured[benchmark] != metric:
            raise UserError(f"{path}: {benchmark} holds {metric} ({unit}) but is configured with metric "
                            f"{configured[benchmark]!r}; results of another metric are never compared: configure "
                            f"metric = {metric!r} for it, or import results of its own metric")
