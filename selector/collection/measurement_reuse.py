"""Reusing the runs of an identical binary instead of measuring it again.

A commit that changes only documentation, tests or CI files builds the same program
as its parent.  Where the metric is exact (calibration showed identical A/A runs), its
benchmark runs and profiles would repeat the parent's to the last instruction, so they
are recorded as copies of those, marked with the commit they came from
(``reused_from``), and nothing is run.

What must be identical for a benchmark's runs to stand for another commit's is its
*measurement identity*: the binary's code and data (the content digest) and the names
its profile gives them (the symbol table), the benchmark's settings, the suite's files,
the checkout files its command names (a script, a second program the build made), the
compiler, the profiler and the CPU model.  A benchmark whose command names the checkout
as a whole, or that sets ``reuse = false``, is always run; so is any metric that is not
exact, and any benchmark profiled by sampling (perf).
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import tempfile
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Iterator

from perf_selector.collectors.file_lock import held_and_removed
from perf_selector.collectors.benchmark_runner import BenchmarkSpec, command_words, expand
from perf_selector.collectors.elf_image import symbol_table_digest
from perf_selector.collectors.host import host_facts
from perf_selector.collectors.arrow_rows import concatenated, with_constants
from perf_selector.storage.history import not_warmups

if TYPE_CHECKING:
    import pyarrow as pa

    from perf_selector.selector.config import Config
    from perf_selector.storage.store import Store

EXACT_PROFILERS = ("callgrind", "none")  # perf samples differ from run to run
MEASURED_INDEX = "measured"


@dataclass(frozen=True)
class ReuseContext:
    """What a collection knows once for all its commits."""

    enabled: bool
    exact: dict[str, bool]  # benchmark -> calibration found its metric exact
    profiler: str  # the profile tool and its version
    suite_digest: str
    toolchain: str
    cpu_model: str
    harness: dict[str, str] = field(default_factory=dict)  # benchmark -> its harness digest (config.harness_digest)


def reuse_context(store: Store, config: Config, toolchain: str, enabled: bool = True) -> ReuseContext:
    from perf_selector.selector.config import BySuite, harness_digest, has_benchmarks
    from perf_selector.selector.config import label_rules
    from perf_selector.storage.labels import exact_benchmarks

    if not enabled or not has_benchmarks(config):
        return ReuseContext(False, {}, "", "", toolchain, "")
    return ReuseContext(
        enabled=True,
        exact=exact_benchmarks(store.read("calibration"), label_rules(config)),
        profiler=f"{config.profile.tool} {_valgrind_version() if config.profile.tool == 'callgrind' else ''}".strip(),
        suite_digest=_tree_digest(Path(config.project.suite)) if config.project.suite else "",
        toolchain=toolchain,
        cpu_model=str(host_facts()["cpu_model"]),
        harness=BySuite({benchmark.name: harness_digest(config, benchmark.name) for benchmark in config.benchmark},
                        {suite.name: harness_digest(config, f"{suite.name}/") for suite in config.suite}),
    )


@dataclass
class ReusePlan:
    """For one commit: the identity of each benchmark that may be reused, and why the others may not."""

    binary_identity: str
    identities: dict[str, str]  # benchmark -> measurement identity
    refused: dict[str, str]  # benchmark -> why its runs cannot be reused


def why_not_reusable(spec: BenchmarkSpec, context: ReuseContext) -> str:
    """Why runs of an identical binary cannot stand for this benchmark's ("" when they can)."""
    if not spec.reuse:
        return "reuse = false in its configuration"
    if context.profiler.split(" ")[0] not in EXACT_PROFILERS:
        return f"{context.profiler} profiles are samples, not exact"
    if spec.name not in context.exact:
        return "not calibrated (selector calibrate shows whether its metric is exact)"
    if not context.exact[spec.name]:
        return "its metric is not exact (calibration found A/A runs that differ)"
    return ""


def plan_reuse(specs: list[BenchmarkSpec], binary: Path, content_digest: str, checkout: Path, suite: Path | None,
               context: ReuseContext) -> ReusePlan:
    binary_identity = hashlib.blake2b(f"{content_digest}:{symbol_table_digest(binary)}".encode(), digest_size=16).hexdigest()
    plan = ReusePlan(binary_identity, {}, {})
    for spec in specs:
        why_not = why_not_reusable(spec, context)
        inputs = None if why_not else _checkout_inputs_digest(spec, binary, checkout, suite)
        if not why_not and inputs is None:
            why_not = "its command names the whole checkout"
        if why_not:
            plan.refused[spec.name] = why_not
            continue
        identity = [binary_identity, context.harness[spec.name], inputs, context.suite_digest, context.toolchain,
                    context.profiler, context.cpu_model]
        plan.identities[spec.name] = hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()[:32]
    return plan


def copy_reused(store: Store, sha: str, plan: ReusePlan) -> tuple[pa.Table, pa.Table, dict[str, str]]:
    """The measurements and profiles of the benchmarks an identical binary answers for, as
    rows of `sha` marked with where they came from; and benchmark -> that commit."""
    import pyarrow as pa

    owners = {benchmark: store.owner(MEASURED_INDEX, identity) for benchmark, identity in plan.identities.items()}
    owners = {benchmark: owner for benchmark, owner in owners.items()
              if owner and owner != sha and store.has("measurements", owner) and store.has("profiles", owner)}
    if not owners:
        return pa.table({}), pa.table({}), {}
    measurements, profiles = copy_runs(store, sha, owners)
    return measurements, profiles, owners


def copy_runs(store: Store, sha: str, owners: dict[str, str]) -> tuple[pa.Table, pa.Table]:
    """The measured runs and profiles of benchmark -> commit, as rows of `sha` marked with the
    commit that measured them (a copy of a copy names the original)."""
    measurements, profiles = [], []
    for owner in sorted(set(owners.values())):
        benchmarks = sorted(benchmark for benchmark, of in owners.items() if of == owner)
        runs = not_warmups(_of_benchmarks(store.read_one("measurements", owner), benchmarks))
        measurements.append(_copied(runs, sha, owner))
        profiles.append(_copied(_of_benchmarks(store.read_one("profiles", owner), benchmarks), sha, owner))
    return concatenated(measurements), concatenated(profiles)


def _of_benchmarks(table: pa.Table, benchmarks: list[str]) -> pa.Table:
    import pyarrow as pa
    import pyarrow.compute as pc

    if not table.num_rows:
        return table
    return table.filter(pc.is_in(table["benchmark"].cast(pa.large_string()), value_set=pa.array(benchmarks, pa.large_string())))


def _copied(rows: pa.Table, sha: str, owner: str) -> pa.Table:
    """`rows` as `sha`'s, marked with the commit that measured them."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if "reused_from" in rows.column_names:
        earlier = pc.fill_null(rows["reused_from"].cast(pa.large_string()), "")
        original = pc.if_else(pc.equal(earlier, ""), pa.scalar(owner, pa.large_string()), earlier)
        rows = rows.set_column(rows.schema.get_field_index("reused_from"), "reused_from", original)
    else:
        rows = with_constants(rows, reused_from=owner)
    return with_constants(rows, commit=sha)


def complete_benchmarks(measurements: pa.Table, profiled: set[str] | None) -> set[str]:
    """Benchmarks whose measured runs (warm-ups aside) all succeeded and that have a profile
    (`profiled`: the benchmarks that do; None when nothing is profiled): runs that can
    stand for another commit's."""
    runs = not_warmups(measurements).select(["benchmark", "status"]).to_pylist() if measurements.num_rows else []
    failing = {run["benchmark"] for run in runs if run["status"] != "ok"}
    complete = {run["benchmark"] for run in runs} - failing
    return complete if profiled is None else complete & profiled


def record_owners(store: Store, sha: str, plan: ReusePlan, measurements: pa.Table, profiled: set[str] | None) -> None:
    """Make `sha` the source of reuse for each benchmark it measured itself, in full."""
    import pyarrow.compute as pc

    if not measurements.num_rows:
        return
    measured_here = complete_benchmarks(measurements.filter(pc.fill_null(pc.equal(measurements["reused_from"], ""), False)),
                                        profiled)
    for benchmark, identity in plan.identities.items():
        if benchmark in measured_here:
            store.set_owner(MEASURED_INDEX, identity, sha)


@contextmanager
def identity_lock(binary_identity: str | None) -> Iterator[None]:
    """Commits of one binary identity measure one at a time, so with parallel jobs the
    second waits for the first's runs and reuses them instead of repeating them."""
    if binary_identity is None:
        yield
        return
    with held_and_removed(Path(tempfile.gettempdir()) / f"selector-measure-{binary_identity}.lock"):
        yield


def _checkout_inputs_digest(spec: BenchmarkSpec, binary: Path, checkout: Path, suite: Path | None) -> str | None:
    """Digest of the checkout files the benchmark's command names, absolute or relative to
    the checkout (where it runs); None when it names the checkout itself."""
    digest = hashlib.sha256()
    checkout = checkout.resolve()
    words = {word for command in spec.commands() for word in command_words(expand(command, binary, checkout, suite))}
    for word in sorted(words):
        path = (checkout / word).resolve() if not os.path.isabs(word) else Path(word).resolve()
        if path == checkout:
            return None
        if path == binary.resolve() or checkout not in path.parents or not path.exists():
            continue
        digest.update(f"{path.relative_to(checkout)}\0{_tree_digest(path)}\0".encode())
    return digest.hexdigest()


def _tree_digest(path: Path) -> str:
    """Digest of a file, or of a directory's files with their relative names (.git left out)."""
    digest = hashlib.sha256()
    files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file() and ".git" not in p.parts)
    for file in files:
        digest.update(f"{file.relative_to(path) if file != path else ''}\0".encode())
        with open(file, "rb") as handle:
            digest.update(hashlib.file_digest(handle, "sha256").digest())
    return digest.hexdigest()


def _valgrind_version() -> str:
    try:
        return subprocess.run(["valgrind", "--version"], capture_output=True, text=True, timeout=30).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
