"""Changed labels confirmed under perturbation: re-measure both sides of each changed pair in
several perturbed run contexts, and keep the label changed only if it holds in all.

Calibration learns one build's spread under perturbed contexts (selector/collection/calibrate.py), but
layouts differ from commit to commit: one commit's spread does not bound another's, and a
commit that only moves a stack frame or a string can move an instruction count by more
than `min_effect` in the normalised context and by nothing (or the other way) in the next.
So for every pair labelled changed, the stored binaries of its two commits run again in
each of `[labels] perturbed_contexts` contexts (collectors/run_context.py
LABEL_PERTURBATIONS, the first N: none of them one calibration perturbs with), old and new in
turn within each context (selector/collection/confirmation.py's interleaved session, in that context),
so the machine's drift cancels as it does for `selector confirm`.  storage/labels.py then
keeps the label changed only if it holds in every context (a count: the effect keeps its
sign and exceeds max(min_effect, spread); a noisy metric: the paired test there shows
neither equivalence nor the other sign); otherwise the pair is undecided, the reason naming
the context and its effect.

Only changed pairs run, each (pair, context) once: the runs are stored in the `perturbed`
table (one file per new commit, written after each pair), and a pair whose contexts are
stored is never run again, by a resumed collection, a relabelling or a later `collect`.  A
store collected before this existed gets it from its next `selector collect`, which checks
the stored changed pairs that lack it.  A repeatable metric runs once a side in each context
(its count is what one run gives); a noisy one its configured repetitions and warm-ups.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence

import pyarrow as pa

from perf_selector.collectors.arrow_rows import concatenated, with_constants
from perf_selector.collectors.builds import Worktree
from perf_selector.collectors.repository import Repository
from perf_selector.collectors.run_context import LABEL_PERTURBATIONS, Perturbation
from perf_selector.selector.config import Config, has_benchmarks, label_rules
from perf_selector.selector.collection.confirmation import Candidate, NotListed, chosen_specs, current_labels, run_interleaved
from perf_selector.storage.store import Store

TABLE = "perturbed"


@dataclass(frozen=True)
class Check:
    """A changed label, and the perturbed contexts it is still to be re-measured in."""

    new: str
    old: str
    benchmark: str
    effect: float  # as labelled
    contexts: tuple[Perturbation, ...]
    rounds: int  # each runs both sides once, in each context
    warmup: int  # warm-up runs of each side first, in each context

    @property
    def runs(self) -> int:
        return len(self.contexts) * 2 * (self.rounds + self.warmup)


@dataclass
class PerturbedSummary:
    contexts: tuple[Perturbation, ...] = ()
    checks: list[Check] = field(default_factory=list)  # the pairs that ran (or were to run)
    runs: int = 0  # benchmark runs made, warm-ups and failed ones included
    skipped: dict[str, str] = field(default_factory=dict)  # "new old benchmark" -> why it could not run
    seconds: float = 0.0


def configured_contexts(config: Config) -> tuple[Perturbation, ...]:
    """The contexts a changed label must hold in (`[labels] perturbed_contexts`)."""
    return LABEL_PERTURBATIONS[:config.labels.perturbed_contexts]


def stored_contexts(perturbed: pa.Table) -> dict[tuple[str, str, str], set[Perturbation]]:
    """(new, old, benchmark) -> the contexts the `perturbed` table holds runs of (failed ones too:
    a benchmark that fails in a context is not run there again)."""
    if not perturbed.num_rows:
        return {}
    found: dict[tuple[str, str, str], set[Perturbation]] = {}
    columns = ["new", "old", "benchmark", "environment_padding", "path_padding"]
    for new, old, benchmark, environment, path in zip(*(perturbed[name].to_pylist() for name in columns)):
        found.setdefault((new, old, benchmark), set()).add(Perturbation(environment, path))
    return found


def plan_checks(labels: list[dict], stored: dict[tuple[str, str, str], set[Perturbation]],
                contexts: Sequence[Perturbation], specs: dict) -> list[Check]:
    """The changed labels (of benchmarks in `specs`, of their configured metric) that lack runs
    in some of `contexts`, with the contexts they lack."""
    checks = []
    for row in labels:
        spec = specs.get(row["benchmark"])
        if row["label"] is not True or spec is None or row["metric"] != spec.metric:
            continue
        done = stored.get((row["new"], row["old"], row["benchmark"]), set())
        missing = tuple(context for context in contexts if context not in done)
        if missing:
            repeatable = bool(row["exact"])
            checks.append(Check(row["new"], row["old"], row["benchmark"], row["effect"], missing,
                                1 if repeatable else spec.repetitions, 0 if repeatable else spec.warmup))
    return checks


def confirm_perturbed(
    repository: str | Path, config: Config, store: Store, contexts: Sequence[Perturbation] | None = None,
    labels: list[dict] | None = None, on_plan: Callable[[list[Check]], None] = lambda checks: None,
    on_run: Callable[[int, int], None] = lambda done, total: None,
) -> PerturbedSummary:
    """Re-measure, in each of `contexts` (default: the configured ones), both sides of every
    changed label of `labels` (default: the labels the store's tables make now) that lacks
    stored runs there, and store the runs, pair by pair.  `on_run(done, total)` after each run.
    The labels are not rewritten here: storage.labels.update_labels applies the runs."""
    started = time.monotonic()
    contexts = configured_contexts(config) if contexts is None else tuple(contexts)
    summary = PerturbedSummary(contexts)
    if not contexts or not has_benchmarks(config):
        return summary
    labels = current_labels(store, label_rules(config)) if labels is None else labels
    changed = sorted({row["benchmark"] for row in labels if row["label"] is True})
    if not changed:
        return summary
    specs = chosen_specs(config, None, changed)
    summary.checks = plan_checks(labels, stored_contexts(store.read(TABLE)), contexts, specs)
    on_plan(summary.checks)
    if not summary.checks:
        return summary
    repo = Repository.open(repository)
    Worktree.sweep(repo)
    commits = store.read("commits")
    digests = dict(zip(commits["sha"].to_pylist(), commits["binary_sha256"].to_pylist()))
    binary_of = store.binary_lookup(list(digests), list(digests.values()))
    total = sum(check.runs for check in summary.checks)

    def ran(candidate: Candidate, done: int) -> None:
        summary.runs += 1
        on_run(summary.runs, total)

    for check in summary.checks:
        key = f"{check.new[:12]} {check.old[:12]} {check.benchmark}"
        missing = [sha[:12] for sha in (check.old, check.new) if binary_of(sha) is None]
        if missing:
            summary.skipped[key] = (f"no stored binary of {', '.join(missing)} (collected before binaries were kept, or "
                                    "deleted from the store): its label stays as the normalised context decided it")
            continue
        candidate = Candidate(check.new, check.old, check.benchmark, "changed: re-measured under perturbation", True,
                              "", check.rounds, check.warmup)
        binaries = {"old": Path(binary_of(check.old)), "new": Path(binary_of(check.new))}
        sides = {"old": digests[check.old], "new": digests[check.new]}
        try:
            tables = [with_constants(run_interleaved(repo, config, specs[check.benchmark], candidate, binaries, sides, ran,
                                                     perturbation=context),
                                     perturbation=context.describe(), environment_padding=context.environment_padding,
                                     path_padding=context.path_padding)
                      for context in check.contexts]
        except NotListed as reason:
            summary.skipped[key] = f"not re-measured: {reason}"
            continue
        earlier = store.read_one(TABLE, check.new) if store.has(TABLE, check.new) else pa.table({})
        store.write(TABLE, check.new, concatenated([earlier, *tables]))  # the pair is done: a later kill cannot lose it
    summary.seconds = time.monotonic() - started
    return summary
