"""`selector confirm`: timed labels decided by running both binaries interleaved, in one session.

Collection measures a history commit after commit, minutes or days apart, so a pair's
two sides come from two sessions of a machine whose speed drifts (frequency, thermals,
other tenants, a kernel update between two days).  Near the noise floor that drift is
as large as the changes a label is after.  A/A calibration sees it (its
`session_false_positive_rate`), but cannot take it out of a label.  Running both
binaries in turn in one session can, as Google Benchmark's compare.py and careful
practice do: whatever the machine does then, it does to both sides alike.

So for the labels that need it (:func:`plan_confirmations`) the stored binaries of the
two commits run interleaved: a warm-up of each, then N rounds, each round the old and the
new binary once, in a random order per round (so that neither always runs second, after
the other has warmed the caches or heated the core).  Both run in one normalised run
context (collectors/run_context.py: one context folder, so the same argv[0], paths and
environment for both sides), under the machine lock that keeps collection's timed suites
alone.  A benchmark whose command names checkout files runs each binary in a checkout of
its own commit.  Rounds default to what calibration says a side needs to detect
`min_effect` (`repetitions_needed`), at least the configured repetitions and at least what
lets the test reach `alpha`, at most `max_rounds`.

The runs of each pair are written to the `confirmations` table as soon as the pair is
done: a confirmation killed half way loses only the pair it was running, and the next one
skips the pairs stored.  The labels are then recomputed: storage.labels labels a
confirmed pair from its interleaved runs with the same test, calibrated spread and noise
as any other pair, and says so (`decided_by = "confirmation"`).
"""

from __future__ import annotations

import math
import random
import re
import tempfile
import time
import zlib
from contextlib import ExitStack
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable, Sequence

import pyarrow as pa

from perf_selector.collectors.benchmark_runner import (
    INSTRUCTIONS, WARMUP_REPETITION, BenchmarkRunner, BenchmarkSpec, file_stem, metric_unit, names_checkout,
    run_folder_prefix, sweep_run_folders,
)
from perf_selector.collectors.benchmark_suite import discover, member_spec, suite_of
from perf_selector.collectors.builds import OK, Worktree, find_compiler_cache, place_binary, run_build
from perf_selector.collectors.errors import UserError
from perf_selector.collectors.host import host_facts
from perf_selector.collectors.repository import Repository
from perf_selector.collectors.run_context import NORMALISED, Perturbation, RunContext
from perf_selector.selector.collection.machine_lock import machine_lock as _machine_lock  # collection's too: one timed session at a time
from perf_selector.selector.config import Config, benchmark_specs, context_settings, label_rules, require_suite, suite_specs
from perf_selector.storage.labels import LabelRules, LabelSummary, fewest_decisive_runs, history_labels, update_labels
from perf_selector.storage.store import Store

# A decided label is borderline when its effect is within this factor of min_effect (either
# way), or its p-value within this factor of alpha: where drift between sessions could have
# made the decision.
BORDERLINE_FACTOR = 2.0
DEFAULT_MAX_ROUNDS = 30
# How storage.labels says a change is undecided because its sides ran in different run contexts.
DIFFERENT_CONTEXTS = "measured in different run contexts"
SIDES = ("old", "new")

CONFIRMED, STORED, SKIPPED, PLANNED = "confirmed", "stored", "skipped", "planned"


@dataclass(frozen=True)
class Candidate:
    """A label to confirm, and how."""

    new: str
    old: str
    benchmark: str
    why: str  # undecided, or what makes the decision borderline
    label: bool | None  # the label before confirmation
    decided_by: str
    rounds: int  # interleaved rounds: each runs both binaries once
    warmup: int  # warm-up runs of each binary first

    @property
    def key(self) -> str:
        return confirmation_key(self.new, self.old, self.benchmark)

    @property
    def runs(self) -> int:
        return 2 * (self.rounds + self.warmup)


@dataclass
class PairOutcome:
    candidate: Candidate
    status: str  # confirmed | stored (confirmed before) | skipped | planned (a dry run)
    note: str = ""
    runs: int = 0  # runs made, warm-ups and failed ones included
    failed_runs: int = 0
    seconds: float = 0.0


@dataclass
class ConfirmSummary:
    outcomes: list[PairOutcome] = field(default_factory=list)
    changed: list[dict] = field(default_factory=list)  # new, old, benchmark, before, after, decided_by, reason
    labels: LabelSummary | None = None
    seconds: float = 0.0

    def count(self, status: str) -> int:
        return sum(outcome.status == status for outcome in self.outcomes)


def confirmation_key(new: str, old: str, benchmark: str) -> str:
    """The confirmations file of a pair (a suite's benchmark name, "snappy/BM_x/8", made a file name)."""
    return f"{new}-{old}-{file_stem(benchmark)}"


def confirm(
    repository: Path, config: Config, store: Store, rounds: int | None = None, max_rounds: int = DEFAULT_MAX_ROUNDS,
    benchmarks: Sequence[str] | None = None, dry_run: bool = False, every_label: bool = False,
    commits: Sequence[str] | None = None,
    on_plan: Callable[[list[Candidate]], None] = lambda planned: None,
    on_run: Callable[[Candidate, int], None] = lambda candidate, done: None,
    on_pair: Callable[[PairOutcome], None] = lambda outcome: None,
) -> ConfirmSummary:
    """Confirm the store's undecided and borderline labels of non-repeatable metrics (with
    `every_label`, their decided labels too) by interleaved runs of both stored binaries;
    store the runs pair by pair and relabel.  `commits` (full ids): only the labels of
    those new commits (the one a CI job just collected)."""
    started = time.monotonic()
    require_suite(config)
    rules = label_rules(config)
    before = current_labels(store, rules)
    # Every stored benchmark name is known, whichever commits are asked for.
    specs = chosen_specs(config, benchmarks, sorted({row["benchmark"] for row in before}))
    if commits is not None:
        chosen = set(commits)
        before = [row for row in before if row["new"] in chosen]
    planned = plan_confirmations(before, store.read("calibration"), config, specs, rounds, max_rounds, every_label)
    pending = [candidate for candidate in planned if not store.has("confirmations", candidate.key)]
    on_plan(pending)
    summary = ConfirmSummary([PairOutcome(c, STORED, "confirmed before") for c in planned if c not in pending])
    if dry_run:
        summary.outcomes += [PairOutcome(candidate, PLANNED) for candidate in pending]
        return summary
    # What a confirmation (or collection) killed half way left: temporaries, run folders, worktrees.
    store.sweep_temporaries()
    sweep_run_folders()
    repo = Repository.open(repository)
    Worktree.sweep(repo)
    commits = store.read("commits")
    digests = dict(zip(commits["sha"].to_pylist(), commits["binary_sha256"].to_pylist())) if commits.num_rows else {}
    binary_of = store.binary_lookup(list(digests), list(digests.values()))
    for candidate in pending:
        outcome = _confirm_pair(repo, config, store, specs[candidate.benchmark], candidate, binary_of, digests, on_run)
        summary.outcomes.append(outcome)
        on_pair(outcome)
    summary.labels = update_labels(store, rules)  # the stored labels, as `before` was made: current
    store.refresh_snapshots()
    summary.changed = changed_labels(before, store.read("labels").to_pylist(), {c.key for c in planned})
    summary.seconds = time.monotonic() - started
    return summary


def chosen_specs(config: Config, benchmarks: Sequence[str] | None, stored: Sequence[str] = ()) -> dict[str, BenchmarkSpec]:
    """The benchmarks to confirm (all when `benchmarks` is None): the configured [[benchmark]]s,
    and of the `stored` names those of a configured [[suite]] (as the suite would list them;
    the pair's run lists the suite again on its binary); an unknown name is an error."""
    specs = {spec.name: spec for spec in benchmark_specs(config)}
    suites = {suite.name: suite for suite in suite_specs(config)}
    specs |= {name: member_spec(suites[suite_of(name)], name) for name in stored if suite_of(name) in suites}
    if not specs:
        raise UserError("no [[benchmark]] or [[suite]] benchmark in the configuration and the store: nothing to confirm")
    unknown = sorted(set(benchmarks or ()) - set(specs))
    if unknown:
        raise UserError(f"unknown benchmark {', '.join(unknown)} (configured or stored: {', '.join(sorted(specs)[:20])})")
    return {name: spec for name, spec in specs.items() if not benchmarks or name in benchmarks}


# ------------------------------------------------------------------ which pairs
def current_labels(store: Store, rules: LabelRules, perturbed: bool = True) -> list[dict]:
    """The labels the store's tables make now, confirmations included: not the labels as last
    written, which a confirmation deleted to be run again, or a calibration made since, has
    made stale.  `perturbed=False`: as if no changed label had been re-measured under
    perturbed contexts (corpus/perturbation_counts.py compares the two)."""
    by_commit = history_labels(store.read("commits"), store.read("measurements"), store.read("profiles"),
                               store.read("calibration"), rules, store.read("confirmations"),
                               store.read("perturbed") if perturbed else None)
    return [row for sha in sorted(by_commit) for row in by_commit[sha].to_pylist()]


def plan_confirmations(labels: list[dict], calibration: pa.Table, config: Config, specs: dict[str, BenchmarkSpec],
                       rounds: int | None = None, max_rounds: int = DEFAULT_MAX_ROUNDS,
                       every_label: bool = False) -> list[Candidate]:
    """The labels to confirm, in the order given: of
    benchmarks in `specs` whose metric is not repeatable, those undecided or borderline."""
    if not labels:
        return []
    calibrated = {row["benchmark"]: row for row in calibration.to_pylist()} if calibration.num_rows else {}
    alpha, min_effect = config.labels.alpha, config.labels.min_effect
    planned = []
    for row in labels:
        spec = specs.get(row["benchmark"])
        if spec is None or row["metric"] != spec.metric or not _needs_one_session(spec, calibrated.get(spec.name), row):
            continue
        why = why_confirm(row, alpha, min_effect)
        if why is None and every_label and row.get("decided_by") not in ("confirmation", "identical"):
            # Drift on a busy machine makes confident-looking labels too (a 27% median effect on
            # pairs of commits that change nothing executed, p = 0.008 with 5 runs a side).
            why = f"decided by {row.get('decided_by') or 'test'}: confirmed on request"
        if why is None:
            continue
        rounds_needed = rounds or rounds_for(spec, calibrated.get(spec.name), alpha, max_rounds, repeatable=row["exact"])
        planned.append(Candidate(row["new"], row["old"], spec.name, why, row["label"], row.get("decided_by") or "",
                                 rounds_needed, spec.warmup))
    return planned


def _needs_one_session(spec: BenchmarkSpec, calibration: dict | None, label: dict) -> bool:
    """Can only runs in one session and one context decide this label?  Those whose sides
    ran in different run contexts (another layout: storage.labels leaves their changes
    undecided), whatever the metric.  Else those the machine's drift between sessions can
    move: times and printed rates, and callgrind counts only where calibration found them
    unfit (threads or timing decide what runs); a label decided as exact never does."""
    if label["label"] is None and DIFFERENT_CONTEXTS in label["reason"]:
        return True
    if label["exact"]:
        return False
    if spec.metric != INSTRUCTIONS:
        return True
    return calibration is not None and calibration.get("metric") == spec.metric and calibration.get("fit") is False


def why_confirm(label: dict, alpha: float, min_effect: float) -> str | None:
    """Why this label needs an interleaved confirmation, or None: undecided, or decided by the
    test or equivalence near a threshold (the effect within BORDERLINE_FACTOR of min_effect,
    or the p-value within it of alpha)."""
    if label["label"] is None:
        return "undecided: " + label["reason"].split(":")[0]
    if (label.get("decided_by") or "test") not in ("test", "equivalence"):
        return None  # exact, or confirmed already
    size, p_value = abs(label["effect"]), label["p_value"]
    if min_effect and min_effect / BORDERLINE_FACTOR <= size <= min_effect * BORDERLINE_FACTOR:
        return f"borderline: |effect| {size:.3g} within {BORDERLINE_FACTOR:g}x of min_effect {min_effect:g}"
    if p_value is not None and not math.isnan(p_value) and alpha / BORDERLINE_FACTOR <= p_value <= alpha * BORDERLINE_FACTOR:
        return f"borderline: p {p_value:.3g} within {BORDERLINE_FACTOR:g}x of alpha {alpha:g}"
    return None


def rounds_for(spec: BenchmarkSpec, calibration: dict | None, alpha: float, max_rounds: int, repeatable: bool = False) -> int:
    """Rounds of one confirmation: what calibration says a side needs to detect min_effect
    (`repetitions_needed`), at least the configured repetitions and, unless the metric is
    repeatable (labelled by its effect), at least what lets the test's p-value reach alpha;
    at most `max_rounds`."""
    decisive = 1 if repeatable else fewest_decisive_runs(alpha)
    needed = (calibration or {}).get("repetitions_needed") or 0
    return max(1, min(max(needed, spec.repetitions, decisive), max_rounds))


# --------------------------------------------------------------- running a pair
def _confirm_pair(repo: Repository, config: Config, store: Store, spec: BenchmarkSpec, candidate: Candidate,
                  binary_of: Callable[[str], str | None], digests: dict[str, str],
                  on_run: Callable[[Candidate, int], None]) -> PairOutcome:
    shas = {"old": candidate.old, "new": candidate.new}
    missing = [sha[:12] for sha in shas.values() if binary_of(sha) is None]
    if missing:
        return PairOutcome(candidate, SKIPPED, f"no stored binary of {', '.join(missing)} (collected before binaries "
                                               "were kept, or deleted from the store): collect it again to confirm")
    started = time.monotonic()
    binaries = {side: Path(binary_of(sha)) for side, sha in shas.items()}
    try:
        runs = run_interleaved(repo, config, spec, candidate, binaries, {side: digests[sha] for side, sha in shas.items()},
                               on_run)
    except NotListed as reason:
        return PairOutcome(candidate, SKIPPED, f"not confirmed: {reason}")
    store.write("confirmations", candidate.key, runs)  # the pair is done: a later kill cannot lose it
    failed = sum(status != "ok" for status in runs["status"].to_pylist())
    note = f"{failed} runs failed: {_first_error(runs)}" if failed else ""
    return PairOutcome(candidate, CONFIRMED, note, runs.num_rows, failed, time.monotonic() - started)


def run_interleaved(repo: Repository, config: Config, spec: BenchmarkSpec, candidate: Candidate, binaries: dict[str, Path],
                    digests: dict[str, str], on_run: Callable[[Candidate, int], None] = lambda candidate, done: None,
                    perturbation: Perturbation = NORMALISED) -> pa.Table:
    """The rows of one interleaved session of the two binaries (`binaries`: side -> a stored
    binary), warm-ups first, in one run context (normalised, or `perturbation`'s:
    selector/collection/perturbed_labels.py)."""
    suite = Path(config.project.suite) if config.project.suite else None
    rows = []
    with ExitStack() as stack:
        workdir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix=run_folder_prefix())))
        checkouts = {side: _side_checkout(stack, repo, spec, config, getattr(candidate, side), binaries[side], workdir / side)
                     for side in SIDES}
        context = RunContext(context_settings(config), perturbation)
        stack.callback(context.release)
        stack.enter_context(_machine_lock(True, exclusive=True))
        # Both sides' binaries sit at the same place in their folders, so the context's stable
        # paths (argv[0], the working directory) are the same bytes for both.
        runner = BenchmarkRunner([spec], checkouts["old"] / config.project.binary, checkouts["old"], suite,
                                 cpu=config.run.cpu, workdir=workdir, context=context)
        spec = _as_listed(spec, config, runner, candidate)  # the runner bound the context to the old side
        facts = {"host": host_facts()["host"], "context": context.digest()}
        seed = zlib.crc32(f"{config.run.seed}:{candidate.key}".encode())
        for order, (side, round_number) in enumerate(interleaved_schedule(candidate.rounds, spec.warmup, seed)):
            context.bind(checkouts[side], checkouts[side] / config.project.binary, suite)
            run = runner.run_once(spec, round_number, order)
            rows.append({"side": side, "round": round_number, "run_order": order, "value": run.value, "status": run.status,
                         "error": run.error, "seconds": run.seconds, "binary_sha256": digests[side]})
            on_run(candidate, order + 1)
    constants = {"new": candidate.new, "old": candidate.old, "benchmark": spec.name, "metric": spec.metric,
                 "unit": metric_unit(spec.metric), **facts, "measured_at": datetime.now(timezone.utc)}
    return pa.Table.from_pylist([{**constants, **row} for row in rows])


def interleaved_schedule(rounds: int, warmup: int, seed: int) -> list[tuple[str, int]]:
    """(side, round) in the order they run: `warmup` warm-ups of each side alternating (round
    -1), then each round both sides, in a random order per round."""
    order = random.Random(seed)
    schedule = [(side, WARMUP_REPETITION) for _ in range(warmup) for side in SIDES]
    for round_number in range(rounds):
        sides = list(SIDES)
        order.shuffle(sides)
        schedule += [(side, round_number) for side in sides]
    return schedule


def _side_checkout(stack: ExitStack, repo: Repository, spec: BenchmarkSpec, config: Config, sha: str, stored: Path,
                   folder: Path) -> Path:
    """The folder one side runs in, its binary at `[project] binary` in it: a checkout of its
    commit when the command names checkout files, else an empty folder.  The store keeps
    binaries as plain files: copied, and made executable."""
    if names_checkout(spec):
        folder = stack.enter_context(Worktree(repo, sha))
    else:
        folder.mkdir(parents=True)
    folder = folder.resolve()
    missing = _missing_build_products(spec, folder)
    if missing:
        # the command runs a program of the build beside the analysed binary (a thin main over
        # the project's shared library): build the commit there, then put the stored binary in.
        # Each side of each context builds its commit again: ccache, as collection uses it, answers
        build = run_build(folder, sha, config.build.command, config.project.binary, config.build.timeout,
                          cache=find_compiler_cache())
        if build.status != OK:
            raise NotBuilt(f"its command runs {missing[0]} of a build of {sha[:12]}, and that build failed "
                           f"({build.reason})")
    place_binary(stored, folder / config.project.binary)
    return folder


_CHECKOUT_PATH = re.compile(r"\{checkout\}/([^\s'\"]+)")


def _missing_build_products(spec: BenchmarkSpec, folder: Path) -> list[str]:
    """The files the command names in the checkout (`{checkout}/build/main`, no other
    placeholder in them) that a checkout of the commit does not have: what its build makes."""
    named = {found for command in spec.commands() for found in _CHECKOUT_PATH.findall(command) if "{" not in found}
    return sorted(path for path in named if not (folder / path).exists())


class NotListed(Exception):
    """A suite's benchmark its suite does not list on the pair's old binary."""


class NotBuilt(NotListed):
    """A pair whose command needs a build of its commit beside the stored binary, which failed."""


def _as_listed(spec: BenchmarkSpec, config: Config, runner: BenchmarkRunner, candidate: Candidate) -> BenchmarkSpec:
    """A suite's benchmark as its suite lists it on the binary `runner` runs (the iteration
    flag that binary's framework takes, its isolation); a [[benchmark]] as it is."""
    suite_name = suite_of(spec.name)
    if suite_name is None:
        return spec
    suite = next(s for s in suite_specs(config) if s.name == suite_name)
    found = discover(suite, runner)
    listed = next((s for s in found.specs if s.name == spec.name), None)
    if listed is None:
        raise NotListed(found.problem or f"{suite_name} does not list it on {candidate.old[:12]}'s binary")
    return listed


def _first_error(runs: pa.Table) -> str:
    return next((error for error, status in zip(runs["error"].to_pylist(), runs["status"].to_pylist()) if status != "ok"), "")


# ------------------------------------------------------------------- what changed
def changed_labels(before: list[dict], after: list[dict], keys: set[str]) -> list[dict]:
    """The labels among `keys` (confirmation keys) whose value is not what it was."""
    def by_key(rows: list[dict]) -> dict[str, dict]:
        return {confirmation_key(row["new"], row["old"], row["benchmark"]): row for row in rows}

    old_rows, new_rows = by_key(before), by_key(after)
    changed = []
    for key in sorted(keys & set(old_rows) & set(new_rows)):
        was, now = old_rows[key], new_rows[key]
        if was["label"] is not now["label"]:
            changed.append({"new": now["new"], "old": now["old"], "benchmark": now["benchmark"], "before": was["label"],
                            "after": now["label"], "decided_by": now.get("decided_by") or "", "reason": now["reason"]})
    return changed
