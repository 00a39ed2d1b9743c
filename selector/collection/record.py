"""`selector record`: make a commit CI has benchmarked the next known version.

After CI runs the selected benchmarks on a commit, `record` stores the commit's
build, static analysis, measurements and profiles, so later commits are compared
with it and `selector train` learns from it.  Measurements come from the tool's own
runner (the configured benchmarks run now), or from a results file CI already
produced (pyperf, asv, or a benchmark framework's: collectors/frameworks); the profiles are
always made here.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

from perf_selector.collectors.arrow_rows import concatenated

from perf_selector.collectors.builds import find_compiler_cache, toolchain_version
from perf_selector.collectors.errors import UserError
from perf_selector.collectors.repository import Repository
from perf_selector.collectors.result_import import import_results
from perf_selector.selector.collection.collect import CollectSettings, CommitOutcome, collect_commit
from perf_selector.collectors.benchmark_suite import kept_by, member_name, suite_of
from perf_selector.collectors.frameworks import RESULTS_FORMATS, framework
from perf_selector.collectors.metrics import INSTRUCTIONS
from perf_selector.selector.config import Config, SuiteSection, label_rules, require_suite, suite_specs
from perf_selector.storage.labels import LabelSummary, update_labels
from perf_selector.storage.store import Store


@dataclass
class RecordResult:
    outcome: CommitOutcome
    labels: LabelSummary
    imported: int  # measurement rows taken from a results file


def record(top: Path, config: Config, store: Store, revision: str, results: list[Path] | None = None,
           results_format: str | None = None, force: bool = False, suite: str | None = None) -> RecordResult:
    """Record one commit.  Several results files may be imported at once (one per CI job);
    a commit recorded before keeps the measurements of benchmarks the new files do not cover.

    Results of a framework's binary are a `suite`'s (by default the configuration's only suite of
    a framework that writes results files): Google Benchmark's "BM_x/8" is stored as
    "<suite>/BM_x/8", its metric read from the report as the suite's (real_time, cpu_time or a
    counter)."""
    repository = Repository.open(top)
    commits = repository.commits(revision, max_count=1)
    if not commits:
        raise UserError(f"{revision!r} is not a commit of {top}")
    commit = commits[0]
    imported = None
    if not results:
        require_suite(config)  # it runs the benchmarks
    if results:
        into = _import_suite(config, suite)
        tables = []
        for path in results:
            table = _as_configured(path, import_results(path, results_format, _field(into)), config, into)
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


def _import_suite(config: Config, name: str | None) -> SuiteSection | None:
    """The [[suite]] imported results of a framework belong to: `name`, or the only suite of a
    framework that writes results files; None when there is none to choose."""
    if name is not None:
        chosen = next((s for s in config.suite if s.name == name), None)
        if chosen is None:
            raise UserError(f"--suite {name}: no such [[suite]] (configured: {', '.join(s.name for s in config.suite) or 'none'})")
        return chosen
    writing = [s for s in config.suite if framework(s.framework).results_format in RESULTS_FORMATS]
    return writing[0] if len(writing) == 1 else None


def _field(suite: SuiteSection | None) -> str:
    """What to read of a framework's results file for `suite`'s metric (its default for the others)."""
    return framework(suite.framework).import_field(suite.metric) if suite is not None else ""


def _as_configured(path: Path, table: pa.Table, config: Config, suite: SuiteSection | None) -> pa.Table:
    """`table` with every benchmark named as the store names it: a [[benchmark]]'s name, a
    suite's "<suite>/<name>" as given, or a name of `suite` (the only one of its filter kept)."""
    configured = {b.name for b in config.benchmark}
    suites = {s.name for s in config.suite}
    names = table["benchmark"].to_pylist()
    stored = [name if name in configured or suite_of(name) in suites else None for name in names]
    foreign = sorted({name for name, known in zip(names, stored) if known is None})
    if foreign and suite is None:
        hint = (" or name the [[suite]] they are of with --suite" if config.suite else "")
        raise UserError(f"{path}: benchmark(s) {', '.join(foreign[:5])}{' ...' if len(foreign) > 5 else ''} are not configured "
                        f"in selector.toml; add a [[benchmark]] of that name (its command is what profiles it){hint}")
    if foreign:
        if suite.metric == INSTRUCTIONS.name:
            raise UserError(f"{path}: [[suite]] {suite.name} counts instructions under callgrind, and these results are "
                            "times: they are never stored beside counts. Run `selector record` without --import (it "
                            "runs the suite), or configure the suite with a time its framework reports "
                            f"({', '.join(framework(suite.framework).times) or 'none'})")
        spec = next(s for s in suite_specs(config) if s.name == suite.name)
        keep = [known is not None or kept_by(spec, name) for name, known in zip(names, stored)]
        metrics = [metric if known else suite.metric for known, metric in zip(stored, table["metric"].to_pylist())]
        stored = [known or member_name(suite.name, name) for name, known in zip(names, stored)]
        table = table.set_column(table.schema.get_field_index("benchmark"), "benchmark", pa.array(stored, pa.string()))
        table = table.set_column(table.schema.get_field_index("metric"), "metric", pa.array(metrics, pa.string()))
        table = table.filter(pa.array(keep))
        if not table.num_rows:
            raise UserError(f"{path}: every benchmark in it is one [[suite]] {suite.name} leaves out (include/exclude)")
    return table


def _check_metrics(path: Path, table: pa.Table, config: Config) -> None:
    """Results of another metric or unit are never stored beside a benchmark's own: a time in
    seconds against a count of instructions would read as a -100% change."""
    configured = label_rules(config).metrics  # a suite's benchmarks take their suite's metric
    units = table["unit"].to_pylist() if "unit" in table.column_names else ["?"] * table.num_rows
    first_unit = {}
    for benchmark, metric, unit in zip(table["benchmark"].to_pylist(), table["metric"].to_pylist(), units):
        first_unit.setdefault((benchmark, metric), unit)
    for (benchmark, metric), unit in sorted(first_unit.items()):
        if configured[benchmark] != metric:
            raise UserError(f"{path}: {benchmark} holds {metric} ({unit}) but is configured with metric "
                            f"{configured[benchmark]!r}; results of another metric are never compared: configure "
                            f"metric = {metric!r} for it, or import results of its own metric")
