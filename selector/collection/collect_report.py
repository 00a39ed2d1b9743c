"""Showing a collection run: a progress bar while it runs, a summary table after."""

from __future__ import annotations

import re

from pathlib import Path

import pandas as pd
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from perf_selector.collectors.metrics import is_count
from perf_selector.collectors.builds import describe_failure
from perf_selector.collectors.commit_graph import CommitInfo
from perf_selector.selector.collection.collect import SKIPPED, CollectSummary, CommitOutcome, collect
from perf_selector.selector.config import Config
from perf_selector.storage.store import Store
from perf_selector.selector.tables import LogProgress, logging_progress, print_json, print_rows, print_table, stderr


def run_collection(
    top: Path, config: Config, store: Store, commits: list[CommitInfo], jobs: int = 1, retry_failed: bool = False,
    scheduler: str | None = None, reuse: bool = True, cache: bool = True,
) -> CollectSummary:
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), TimeRemainingColumn())
    log = LogProgress("collected", len(commits)) if logging_progress() else None
    with Progress(*columns, console=stderr.console, transient=False) as progress:
        task = progress.add_task("collecting", total=len(commits))

        def advance(outcome: CommitOutcome) -> None:
            label = {"ok": "built", SKIPPED: "stored", "failed": "FAILED"}.get(outcome.status, outcome.status)
            if outcome.reused:
                label += f", {len(outcome.reused)} reused"
            progress.update(task, advance=1, description=f"{outcome.sha[:10]} {label}")
            if log:
                log.advance(f"last: {outcome.sha[:10]} {label}", worked=outcome.status != SKIPPED)

        perturbed_task = perturbed_log = None

        def perturbed(done: int, total: int) -> None:
            # a count of its own: runs of changed pairs, not commits ("collected: 159/39" before)
            nonlocal perturbed_task, perturbed_log
            if perturbed_task is None:
                perturbed_task = progress.add_task("changed labels under perturbed contexts", total=total)
                perturbed_log = LogProgress("changed labels re-measured under perturbed contexts (runs)", total) \
                    if log else None
            progress.update(perturbed_task, completed=done)
            if perturbed_log:
                perturbed_log.advance(steps=done - perturbed_log.done)

        return collect(top, config, store, commits, jobs=jobs, retry_failed=retry_failed, on_outcome=advance, scheduler=scheduler,
                       reuse=reuse, cache=cache, on_perturbed_run=perturbed)


def undecidable_labels(config: Config, store: Store) -> list[str]:
    """What collect says before it starts: the benchmarks whose labels it cannot decide as
    configured (neither calibrated exact nor run often enough for the test to reach alpha)."""
    from perf_selector.collectors.benchmark_suite import suite_of
    from perf_selector.selector.config import BenchmarkSection, label_rules
    from perf_selector.storage.labels import exact_benchmarks, fewest_decisive_runs

    exact = exact_benchmarks(store.read("calibration"), label_rules(config))
    said = []
    for section in [*config.benchmark, *config.suite]:
        single = isinstance(section, BenchmarkSection)
        named = section.name if single else f"suite {section.name}"
        is_exact = exact.get(section.name) if single else \
            any(ok for name, ok in exact.items() if suite_of(name) == section.name)
        runs, needed = section.repetitions, fewest_decisive_runs(config.labels.alpha)
        if is_exact or runs >= needed:
            continue
        exact_hint = " or `selector calibrate` (an exact count is labelled by its effect)" \
            if is_count(section.metric) else ""
        said.append(f"labels of {named} will be undecided: {runs} run{'s' if runs > 1 else ''} a side cannot reach "
                    f"alpha {config.labels.alpha:g}; set repetitions = {needed}{exact_hint}")
    return said


def report_collection(summary: CollectSummary, store: Store, output_format: str) -> None:
    outcomes = summary.outcomes
    # built = compiled + builds_reused: a commit whose build a parent's stands for is built without compiling
    reused_builds = sum(bool(o.build_reused_from) for o in outcomes if o.status == "ok")
    totals = {
        "commits": len(outcomes), "built": summary.count("ok"), "failed": summary.count("failed"),
        "already_stored": summary.count(SKIPPED), "compiled": summary.count("ok") - reused_builds,
        "builds_reused": reused_builds,
        "analyses_reused": sum(o.reused_analysis for o in outcomes),
        "measurements_reused": sum(bool(o.reused) and not o.benchmarks_run for o in outcomes),
        "benchmarks_reused": sum(len(o.reused) for o in outcomes),
        "profiled": sum(o.profiled for o in outcomes),
        "failed_runs": sum(o.failed_runs for o in outcomes),
        "store": store.location,
    }
    cache = {"used": summary.cache, "builds_with_hits": sum(o.cache_hits > 0 for o in outcomes),
             "hits": sum(o.cache_hits for o in outcomes), "misses": sum(o.cache_misses for o in outcomes)}
    time_spent = _time_spent(summary)
    not_reusable = _not_reusable(outcomes)
    failures = [{"commit": o.sha, "reason": o.reason} for o in summary.failures]
    notes = build_notes(outcomes)
    labels = summary.labels.per_benchmark if summary.labels is not None else None
    perturbed = _perturbed(summary)
    if output_format == "json":
        print_json({"summary": totals, "cache": cache, "seconds": time_spent, "not_reusable": not_reusable,
                    "build_notes": notes, "failures": failures, "labels": labels or [], "perturbed": perturbed,
                    "undecided": summary.labels.undecided if summary.labels is not None else {},
                    "unfit": summary.labels.unfit if summary.labels is not None else {}})
        return
    print_table(pd.DataFrame([{k: v for k, v in totals.items() if k != "store"}]), title=f"collected into {store.location}")
    print_table(pd.DataFrame([{key: round(value, 1) for key, value in time_spent.items()}]),
                title="seconds (build, benchmarks, profiling and the tool itself are summed over parallel jobs)")
    if cache["used"]:
        stderr.print(f"ccache: {cache['hits']} compilations answered from the cache, {cache['misses']} compiled; "
                     f"{cache['builds_with_hits']} builds had hits")
    elif summary.count("ok"):
        stderr.print("builds ran without a compiler cache (install ccache to reuse the objects of unchanged files)")
    for note in notes:
        stderr.print(note, markup=False)  # paths may hold brackets
    for reason, benchmarks in not_reusable.items():
        stderr.print(f"runs of identical binaries not reused for {', '.join(benchmarks)}: {reason}")
    if failures:
        print_table(pd.DataFrame([{"commit": f["commit"][:12], "reason": f["reason"]} for f in failures]), title="failures")
        for said in build_failures(summary, store):
            stderr.print(said, markup=False, highlight=False)  # a compiler's output has brackets
    if totals["failed_runs"]:
        stderr.print(f"{totals['failed_runs']} benchmark runs failed; `selector collect --failures` lists them with "
                     "their reasons")
    if perturbed["pairs"]:
        stderr.print(f"{perturbed['pairs']} changed labels re-measured under {len(perturbed['contexts'])} perturbed run "
                     f"contexts ({perturbed['runs']} runs); a change that did not hold in all is undecided")
    for pair, reason in perturbed["skipped"].items():
        stderr.print(f"not re-measured under perturbed contexts: {pair}: {reason}", markup=False)
    if labels is not None and len(labels):
        print_rows(labels, title="labels (each commit against its closest measured ancestor)")
    for benchmark, reason in (summary.labels.undecided if summary.labels is not None else {}).items():
        stderr.print(f"undecided labels of {benchmark}: {reason}")
    for benchmark, reason in (summary.labels.unfit if summary.labels is not None else {}).items():
        stderr.print(f"{benchmark} cannot be labelled as configured: {reason}")


SHOWN_BUILD_FAILURES = 3  # the newest; the others' output is in the commits table


def build_failures(summary: CollectSummary, store: Store) -> list[str]:
    """The failed builds of this collection as every command says them: the command, the exit
    status and the last lines of the output (the commits table keeps them)."""
    failed = [outcome for outcome in summary.failures if outcome.reason.startswith("build ")]
    said = []
    for outcome in failed[:SHOWN_BUILD_FAILURES]:
        row = store.read_one("commits", outcome.sha).to_pylist()[0]
        said.append(describe_failure(outcome.sha, row["build_reason"], row["build_command"], row["build_log_tail"]))
    if len(failed) > SHOWN_BUILD_FAILURES:
        said.append(f"{len(failed) - SHOWN_BUILD_FAILURES} more builds failed; each one's output is in the commits "
                    "table (build_log_tail)")
    return said


def _perturbed(summary: CollectSummary) -> dict:
    """What re-measuring changed labels under perturbed contexts did (selector.perturbed_labels)."""
    found = summary.perturbed
    if found is None:
        return {"contexts": [], "pairs": 0, "runs": 0, "skipped": {}}
    return {"contexts": [context.describe() for context in found.contexts],
            "pairs": len(found.checks) - len(found.skipped), "runs": found.runs, "skipped": found.skipped}


def _time_spent(summary: CollectSummary) -> dict[str, float]:
    """Where the collection's time went: wall time, and the work of its commits by kind."""
    collected = [o for o in summary.outcomes if o.status != SKIPPED]
    parts = {
        "build": sum(o.build_seconds for o in collected),
        "benchmarks": sum(o.benchmark_seconds for o in collected),
        "profiling": sum(o.profile_seconds for o in collected),
    }
    # The rest of each commit's time (worktrees, analysis, the store) and what the
    # collection does beyond its commits (labelling, snapshots) is the tool's own.
    commits_tool = sum(o.seconds for o in collected) - sum(parts.values())
    return {"wall": summary.seconds, **parts, "tool": max(commits_tool, 0.0)}


def build_notes(outcomes: list[CommitOutcome]) -> list[str]:
    """What the builds' checkouts lacked, each line once however many commits it concerned
    (a missing submodule is one line, not one a commit)."""
    return list(dict.fromkeys(note for outcome in outcomes for note in outcome.build_notes))


def _not_reusable(outcomes: list[CommitOutcome]) -> dict[str, list[str]]:
    """Why benchmarks of identical binaries were run again: reason -> benchmarks."""
    reasons: dict[str, set[str]] = {}
    for outcome in outcomes:
        for benchmark, reason in outcome.not_reusable.items():
            reasons.setdefault(reason, set()).add(benchmark)
    return {reason: sorted(benchmarks) for reason, benchmarks in sorted(reasons.items())}


# A line of a build's output that says what went wrong, as compilers, make, CMake and its
# FetchContent say it ("error:", "CMake Error", "*** ... Error 2", "Failed to clone ...")
_TELLING = re.compile(r"\berror\b|\bfailed\b|\bfatal\b|cannot|not found|no such|undefined reference", re.IGNORECASE)
_ECHO = re.compile(r"^\S*make(\[\d+\])?: \*\*\*|^\s*See also ")  # make's and CMake's echo of an error said above


def telling_line(log_tail: str) -> str:
    """The first line of a failed build's output tail that says what went wrong (a compiler's
    error, a download that failed), not make's echo of it nor CMake's "See also" at the end;
    the last line where none does."""
    lines = [line.strip() for line in log_tail.strip().splitlines() if line.strip()]
    told = next((line for line in lines if _TELLING.search(line) and not _ECHO.search(line)), None)
    return told or (lines[-1] if lines else "")


def failures_of(store: Store) -> list[dict]:
    """What failed in the store, newest commit first: each failed build (its reason and the last
    line of its log) and each commit's failed benchmark and profiling runs (one line a benchmark)."""
    commits = store.read("commits")
    if not commits.num_rows:
        return []
    rows = sorted(commits.to_pylist(), key=lambda row: str(row.get("author_time") or ""), reverse=True)
    found = []
    for row in rows:
        subject = (row.get("subject") or "")[:50]
        if row.get("build_status") == "failed":
            said = telling_line(row.get("build_log_tail") or "")
            found.append({"commit": row["sha"], "subject": subject, "what": "build",
                          "reason": f"{row.get('build_reason') or 'failed'}" + (f": {said}" if said else "")})
        for what in ("run_failures", "profile_failures"):
            for line in (row.get(what) or "").splitlines():
                found.append({"commit": row["sha"], "subject": subject, "what": what.split("_")[0], "reason": line})
    return found


def report_failures(store: Store, output_format: str) -> None:
    failures = failures_of(store)
    if output_format == "json":
        print_json({"store": store.location, "failures": failures})
        return
    if not failures:
        stderr.print(f"nothing failed in {store.location}")
        return
    print_rows([{**f, "commit": f["commit"][:12]} for f in failures],
               title=f"what failed in {store.location} (newest first)")
    if any(f["what"] == "build" for f in failures):
        stderr.print("`selector collect --retry-failed` builds the failed commits again")
