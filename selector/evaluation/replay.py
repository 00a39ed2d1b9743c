"""`selector evaluate --replay`: what a team lives through.

The store's history is walked in commit order (its built commits by author time, as
`History.built` orders them) as a team that used `select` from its first commit would have
lived it, and a skipped run is really skipped: the team never measured that benchmark on
that commit, so the benchmark's next comparison is against the commit where it last RAN.

Definitions (per policy and benchmark b):

- **Decision points.** The commits where b was measured (and profiled, when the store has
  profiles): only there can the replay run b and later compare with it.  The first of them
  is b's *baseline*: every policy runs it (`select` runs a benchmark with nothing to compare
  with) and it is not counted among the decisions.
- **Against.** At each later decision point c, the policy decides run or skip comparing c
  with ``against``: the closest ancestor of c at which the policy ran b (walking the commit
  graph as the pairing rule does, storage.history.closest_pairs, but over the replay's runs
  instead of every profiled commit).  The features are those `select` builds
  (features.builder.FeatureBuilder) for the tuple (c, against, b); the decision is
  `select`'s rule (models.decision).  A run is labelled by the project's label rules from
  the stored measurements of c and ``against`` (storage.labels.PairLabeller, as
  `selector backtest` labels pairs that are not closest ones).
- **Changes** (the ground truth): every (c, b) whose stored label, c against its closest
  measured and profiled ancestor (the labels `selector collect` writes: consecutive collected
  commits), is changed.
- **Caught at its commit**: the policy ran b at c.
- **Caught late**: b was skipped at c, and the first later run of b (in commit order) whose
  comparison spans c (c is an ancestor-or-self of the run's commit c' and not of its
  ``against``) is labelled changed: the team sees the change then.  *Commits later* is the
  number of commits in the walk from c to c' (1: the next commit).
- **Never**: neither; including when the spanning run's comparison is unchanged or undecided
  (two changes that cancel, or noise), and when no later run spans c before the history ends.
- **Runs** is the share of the decisions (baselines aside) that ran; **time** the share of
  benchmark seconds spent, each decision weighted by its benchmark's measured cost on its
  commit (store_backtest.benchmark_costs, as the evaluation's time saved weighs it).

Policies: ``always`` (every benchmark at every commit), ``executed-changed`` (the rule
alone, with the build-configuration and predicted-effect rules around it, as `select`
applies a bundle that steps aside for it), ``shipped`` (the shipped cross-project bundle, or
one given, with the policy its settings record) and ``own``: with `evaluate --replay`, the
project's model retrained every N commits of the walk on the store as it stood before them
(retrained_policy: `selector train`'s choice of learner and policy, out of sample), used as
`select` uses it (the shipped model for a benchmark whose own model learnt from too few
changes); otherwise (the backtest's timeline, `--retrain-every 0`) the project's bundle in
<store>/models, trained on this very history, so its figures are in sample (optimistic).

No information from the future reaches a decision: its features read the static analysis of
c and ``against``, and ``against``'s profile, measurements and the labels before it.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable, Iterable, Mapping, Sequence

import numpy as np
import pandas as pd
import pyarrow.compute as pc

from perf_selector.collectors.commit_graph import closest_ancestor
from perf_selector.collectors.errors import UserError
from perf_selector.features.builder import FeatureBuilder
from perf_selector.features.tuples import ancestors
from perf_selector.models.decision import decide, decide_rows, executed_rule_scores, policy_summary
from perf_selector.selector.markdown_section import number, write_section
from perf_selector.selector.config import Config, label_rules
from perf_selector.selector.evaluation.evaluation_pack import Pack
from perf_selector.selector.evaluation.feature_table import benchmarks_of
from perf_selector.selector.evaluation.project_evaluation import open_projects
from perf_selector.selector.evaluation.store_backtest import benchmark_costs
from perf_selector.storage.history import History, load_history
from perf_selector.storage.labels import PairLabeller, binary_digests
from perf_selector.storage.store import Store

ALWAYS, RULE, SHIPPED, OWN = "always", "executed-changed", "shipped", "own"
AT_COMMIT, LATE, NEVER = "at commit", "late", "never"

# A policy: (the new commit, its rows of features in FEATURE_NAMES order, their benchmarks)
# -> (run: bool array, why: str array)
Policy = Callable[[str, np.ndarray, Sequence[str]], tuple[np.ndarray, np.ndarray]]


# told (project, policy walked, commits it walked so far, of how many) as a replay goes
Progress = Callable[[str, str, int, int], None]


@dataclass(frozen=True)
class Step:
    """One decision of the replay: at `commit`, `benchmark` ran or not, compared with `against`
    (None at the baseline); `label`: that comparison's label, when it ran (None: undecided)."""

    commit: str
    benchmark: str
    run: bool
    against: str | None
    label: bool | None = None
    hops: int = 0
    why: str = ""
    cost: float = 0.0


def catches(steps: Sequence[Step], changes: Iterable[tuple[str, str]], position: Mapping[str, int],
            spans: Callable[[str, str, str], bool] | None = None) -> list[dict]:
    """How each change (commit, benchmark) was caught by a policy's `steps` (see the module's
    definitions): {"commit", "benchmark", "caught": AT_COMMIT | LATE | NEVER, "at": the commit
    where the team saw it or None, "later": commits from the change to there (0 at its commit)}.
    `position`: each commit's place in the walk; `spans(change, run, against)`: whether a run at
    `run` compared with `against` spans the change (default: a linear history, by position)."""
    spans = spans or (lambda change, run, against: position[against] < position[change] <= position[run])
    runs: dict[str, list[Step]] = {}
    ran_at: set[tuple[str, str]] = set()
    for step in sorted(steps, key=lambda s: position[s.commit]):
        if step.run:
            runs.setdefault(step.benchmark, []).append(step)
            ran_at.add((step.commit, step.benchmark))
    found = []
    for commit, benchmark in changes:
        result = {"commit": commit, "benchmark": benchmark, "caught": NEVER, "at": None, "later": None}
        if (commit, benchmark) in ran_at:
            result.update(caught=AT_COMMIT, at=commit, later=0)
        else:
            spanning = next((s for s in runs.get(benchmark, ()) if position[s.commit] > position[commit]
                             and s.against is not None and spans(commit, s.commit, s.against)), None)
            if spanning is not None and spanning.label is True:
                result.update(caught=LATE, at=spanning.commit, later=position[spanning.commit] - position[commit])
        found.append(result)
    return found


def walk(commits: Sequence[str], benchmarks: Sequence[str], parents: Mapping[str, Sequence[str]],
         usable: set[tuple[str, str]], policy: Policy, features: Callable[[list[tuple[str, str, str, int]]], np.ndarray],
         label: Callable[[str, str, str], bool | None], cost: Callable[[str, str], float],
         walked: Callable[[int], None] | None = None) -> list[Step]:
    """One policy's steps over `commits` (oldest first): at each decision point ((commit,
    benchmark) in `usable`), compare with the closest ancestor where the policy ran the
    benchmark, decide with `policy` on `features` of those tuples, label the runs.  `walked`
    is told, after each commit, how many have been walked (progress)."""
    ran: dict[str, set[str]] = {b: set() for b in benchmarks}
    steps: list[Step] = []
    for count, commit in enumerate(commits, 1):
        tuples = []
        for benchmark in benchmarks:
            if (commit, benchmark) not in usable:
                continue
            found = closest_ancestor(commit, parents, ran[benchmark].__contains__)
            if found is None:  # the baseline: nothing ran before it
                ran[benchmark].add(commit)
                steps.append(Step(commit, benchmark, True, None, why="baseline", cost=cost(commit, benchmark)))
            else:
                tuples.append((commit, found[0], benchmark, found[1]))
        if tuples:
            run, why = policy(commit, features(tuples), [b for _, _, b, _ in tuples])
            for (new, old, benchmark, hops), runs, reason in zip(tuples, run, why):
                if runs:
                    ran[benchmark].add(new)
                steps.append(Step(new, benchmark, bool(runs), old, label(new, old, benchmark) if runs else None,
                                  int(hops), str(reason), cost(new, benchmark)))
        if walked:
            walked(count)
    return steps


# ------------------------------------------------------------------ policies
def always_policy(commit: str, features: np.ndarray, benchmarks: Sequence[str]):
    return np.ones(len(benchmarks), dtype=bool), np.full(len(benchmarks), "always", dtype=object)


def rule_policy(min_effect: float) -> Policy:
    """The executed-changed rule alone, as select applies a bundle that steps aside for it."""
    def policy(commit, features, benchmarks):
        decided = decide(executed_rule_scores(features, min_effect), np.full(len(features), 0.5), features, min_effect)
        return decided.run, np.where(decided.why == "model", "rule", decided.why)
    return policy


def bundle_policy(scorer_of: Callable[[str], object], min_effect: float) -> Policy:
    """select's decisions with the bundle `scorer_of(benchmark)` gives (None: run, no model)."""
    def policy(commit, features, benchmarks):
        run, why = np.ones(len(benchmarks), dtype=bool), np.full(len(benchmarks), "no model", dtype=object)
        groups: dict[int, tuple[object, list[int]]] = {}
        for row, benchmark in enumerate(benchmarks):
            scorer = scorer_of(benchmark)
            if scorer is not None:
                groups.setdefault(id(scorer), (scorer, []))[1].append(row)
        for scorer, rows in groups.values():
            decided = decide_rows(scorer, features[rows], [benchmarks[r] for r in rows], min_effect)
            run[rows], why[rows] = decided.run, decided.why
        return run, why
    return policy


def retrained_policy(store: Store, config: Config, commits: Sequence[str], every: int, shipped, workdir: Path) -> Policy:
    """The project's own model as a team would have had it: trained (`selector train`'s choice of
    learner and policy, selector.training) every `every` commits of the walk, on the store as it
    stood before that commit (storage.store_as_of), and used as `select` uses it: the shipped
    model for the benchmarks its own learnt from too few changes, and until there is one.
    Out of sample: no commit at or after a boundary reaches the model that decides there.  (The
    team's store would also lack the runs its policy skipped; this one holds every stored run
    of the past, so its training set is, if anything, larger than the team's.)"""
    from perf_selector.models.bundle import load_bundle
    from perf_selector.selector.selection.selection import _scorer
    from perf_selector.selector.evaluation.training import AUTO, NothingToLearnYet, train_bundle
    from perf_selector.storage.store_as_of import StoreAsOf

    position = {sha: i for i, sha in enumerate(commits)}
    trained: dict[int, object] = {}

    def bundle_at(boundary: int):
        if boundary not in trained:
            trained[boundary] = None
            if boundary > 0:
                directory = workdir / f"own-at-{boundary}"
                try:
                    train_bundle(StoreAsOf(store, commits[:boundary]), config, AUTO, "pooled", 0.95, 0, directory)
                    trained[boundary] = load_bundle(directory, portable=True)
                except (NothingToLearnYet, UserError):
                    pass  # nothing to learn from yet: the shipped model decides, as select does
        return trained[boundary]

    decided: dict[int, dict[str, bool]] = {}  # by boundary: each benchmark decided, and whether by the own model

    def policy(commit, features, benchmarks):
        boundary = position[commit] - position[commit] % every
        own = bundle_at(boundary)
        scorer_of = (lambda b: _scorer(b, own, shipped, [])) if own is not None else (lambda b: shipped)
        seen = decided.setdefault(boundary, {})
        for benchmark in set(benchmarks):
            seen[benchmark] = own is not None and scorer_of(benchmark) is own
        return bundle_policy(scorer_of, config.labels.min_effect)(commit, features, benchmarks)

    policy.trained = trained  # the bundles it trained, by boundary (what the document says of them)
    policy.decided = decided
    return policy


def policies_of(store: Store, config: Config, bundle_path: Path | None = None, retrain_every: int | None = None,
                workdir: Path | None = None, commits: Sequence[str] = ()) -> tuple[dict[str, Policy], dict]:
    """The policies replayed on a project, and what each bundle is.  `retrain_every`: the own
    policy is the project's model retrained as the walk goes (retrained_policy, into `workdir`),
    not the bundle in <store>/models, which was trained on this very history."""
    from perf_selector.models.bundle import BundleError, load_bundle
    from perf_selector.selector.selection.selection import _models, _scorer
    from perf_selector.selector.selection.shipped_model import describe, shipped_bundle_path

    min_effect = config.labels.min_effect
    policies: dict[str, Policy] = {ALWAYS: always_policy, RULE: rule_policy(min_effect)}
    about: dict[str, dict] = {}
    path = bundle_path or shipped_bundle_path()
    if path is not None:
        try:
            shipped = load_bundle(path, portable=True)
        except BundleError as error:
            raise UserError(f"{path}: {error}") from None
        policies[SHIPPED] = bundle_policy(lambda benchmark: shipped, min_effect)
        about[SHIPPED] = {"bundle": str(path), "policy": shipped.settings.get("policy"),
                          "trained_on": describe(shipped.trained_on), "summary": policy_summary(shipped, shipped=True)}
    if retrain_every is not None and path is not None:
        policies[OWN] = retrained_policy(store, config, commits, retrain_every, shipped, workdir)
        about[OWN] = {"retrained_every": retrain_every, "in_sample": False, "model": "auto"}
    elif (Path(store.root) / "models" / "manifest.json").exists():
        notes: list[str] = []
        own, fallback, _ = _models(None, store, notes, config.select.policy)  # as select chooses them
        if own is not None:
            policies[OWN] = bundle_policy(lambda benchmark: _scorer(benchmark, own, fallback, []), min_effect)
            about[OWN] = {"bundle": str(Path(store.root) / "models"), "policy": own.settings.get("policy"),
                          "trained_on_commits": own.trained_on.get("commits"), "in_sample": True}
    return policies, about


# ------------------------------------------------------------------ a project
@dataclass
class Replay:
    project: str
    steps: pd.DataFrame  # policy, commit, benchmark, run, against, label, hops, why, cost
    changes: pd.DataFrame  # policy, commit, benchmark, caught, at, later
    summary: pd.DataFrame  # one row per policy


def replay_project(name: str, store: Store, config: Config, policies: Mapping[str, Policy],
                   history: History | None = None, only: Iterable[str] | None = None,
                   progress: Progress | None = None) -> Replay:
    """Every policy walked over the store's history (the module's definitions); `only`: these
    benchmarks (default: every measured one the configuration labels); `progress` is told each
    commit walked, under each policy in turn (each at its own pace: the own policy retrains)."""
    history = history if history is not None else load_history(store)
    rules = label_rules(config)
    only = None if only is None else set(only)
    benchmarks = [b for b in benchmarks_of(history) if b in rules.metrics and (only is None or b in only)]
    if not benchmarks:
        raise UserError(f"{store.location}: no measurements of a configured benchmark; run `selector collect`")
    commits = history.built()
    position = {sha: i for i, sha in enumerate(commits)}
    parents = history.parents
    usable = history.measured()
    if history.profiles.num_rows:
        usable &= history.profiled()
    usable = {(c, b) for c, b in usable if c in position}

    builder = FeatureBuilder(history)
    cached: dict[tuple[str, str, str], list[float]] = {}

    def features(tuples):
        missing = [t for t in tuples if t[:3] not in cached]
        for t, row in zip(missing, builder.rows((new, old, b, hops, None) for new, old, b, hops in missing)):
            cached[t[:3]] = row
        return np.array([cached[t[:3]] for t in tuples], dtype=float)

    # labelled as selector backtest labels any pair (store_backtest.labelled_feature_table)
    stored = history.labels
    neighbours = list(zip(*(stored[k].to_pylist() for k in ("new", "old", "benchmark")))) if stored.num_rows else []
    labeller = PairLabeller(history.measurements, store.read("calibration"), rules, store.read("confirmations"),
                            binary_digests(history.commits), neighbours, store.read("perturbed"))
    labels: dict[tuple[str, str, str], bool | None] = {}

    def label(new, old, benchmark):
        if (new, old, benchmark) not in labels:
            found = labeller.label(new, old, benchmark)
            labels[(new, old, benchmark)] = found.label if found is not None else None
        return labels[(new, old, benchmark)]

    costs = benchmark_costs(history.measurements)
    typical = pd.Series(costs, dtype=float).groupby(level=1).median().to_dict() if costs else {}

    def cost(commit, benchmark):
        return costs.get((commit, benchmark), typical.get(benchmark, 1.0))

    changes = ground_truth(history, set(benchmarks), usable)
    ancestry: dict[str, set[str]] = {}

    def spans(change, run, against):
        for sha in (run, against):
            if sha not in ancestry:
                ancestry[sha] = {sha, *ancestors(sha, parents)}
        return change in ancestry[run] and change not in ancestry[against]

    step_frames, change_frames, rows = [], [], []
    for policy_name, policy in policies.items():
        walked = (lambda count: progress(name, policy_name, count, len(commits))) if progress else None
        steps = walk(commits, benchmarks, parents, usable, policy, features, label, cost, walked)
        caught = catches(steps, changes, position, spans)
        step_frames.append(pd.DataFrame([s.__dict__ for s in steps]).assign(policy=policy_name))
        change_frames.append(pd.DataFrame(caught, columns=["commit", "benchmark", "caught", "at", "later"])
                             .assign(policy=policy_name))
        rows.append(summarize(policy_name, steps, caught))
    return Replay(name, pd.concat(step_frames, ignore_index=True), pd.concat(change_frames, ignore_index=True),
                  pd.DataFrame(rows).assign(project=name))


def ground_truth(history: History, benchmarks: set[str], usable: set[tuple[str, str]]) -> list[tuple[str, str]]:
    """(commit, benchmark) of every stored closest-ancestor label that is changed, at a decision point."""
    labels = history.labels
    if not labels.num_rows:
        return []
    changed = labels.filter(pc.fill_null(labels["label"].cast("bool"), False))
    return sorted({(c, b) for c, b in zip(changed["new"].to_pylist(), changed["benchmark"].to_pylist())
                   if b in benchmarks and (c, b) in usable})


def summarize(policy: str, steps: Sequence[Step], caught: Sequence[dict]) -> dict:
    decided = [s for s in steps if s.against is not None]  # baselines aside
    total = sum(s.cost for s in decided)
    later = [c["later"] for c in caught if c["caught"] == LATE]
    return {
        "policy": policy, "decisions": len(decided), "runs": sum(s.run for s in decided),
        "run_share": sum(s.run for s in decided) / len(decided) if decided else float("nan"),
        "time_share": sum(s.cost for s in decided if s.run) / total if total > 0 else float("nan"),
        # the oracle runs each change once: a policy's runs as a multiple of that
        "runs_per_change": sum(s.run for s in decided) / len(caught) if caught else float("nan"),
        "changes": len(caught), "at_commit": sum(c["caught"] == AT_COMMIT for c in caught), "late": len(later),
        "never": sum(c["caught"] == NEVER for c in caught),
        "mean_commits_later": float(np.mean(later)) if later else float("nan"),
        "max_commits_later": max(later) if later else None,
    }


def replay_document(stores: Sequence[tuple[Path, Path | None]], bundle_path: Path | None = None,
                    bundle_for: Mapping[str, Path] | None = None, retrain_every: int | None = None,
                    workdir: Path | None = None, progress: Progress | None = None) -> dict:
    """The replay of each store (STORE, CONFIG or None), as JSON-ready rows.  The `shipped`
    policy decides with `bundle_for[project]` where given (a bundle trained without that project:
    `evaluate --replay --held-out`), else `bundle_path`, else the shipped bundle.  `retrain_every`:
    the `own` policy is the project's model retrained every that many commits on the past alone
    (its bundles under `workdir`/own/<project>)."""
    from perf_selector.selector.tables import records

    projects = []
    for name, store, config in open_projects(stores):
        if isinstance(store, Pack):  # its skipped runs move the comparison to ancestors no pack can hold
            raise UserError(f"{store.location}: the replay compares commits with any older ancestor; it needs the "
                            f"store ({store.manifest.get('store')}), not its evaluation pack")
        history = load_history(store)
        policies, bundles = policies_of(store, config, (bundle_for or {}).get(name, bundle_path), retrain_every,
                                        (workdir or Path(".")) / "own" / name, history.built())
        replayed = replay_project(name, store, config, policies, history, progress=progress)
        if retrain_every is not None and OWN in policies:
            decided = policies[OWN].decided
            bundles[OWN]["trained"] = {str(boundary): _own_said(bundle, decided.get(boundary, {}))
                                       for boundary, bundle in sorted(policies[OWN].trained.items())}
        projects.append({"name": name, "bundles": bundles, "summary": records(replayed.summary),
                         "changes": records(replayed.changes[replayed.changes["caught"] != AT_COMMIT])})
    return {"created": datetime.now(timezone.utc).isoformat(timespec="seconds"), "held_out": bool(bundle_for),
            "projects": projects}


def check_joinable(earlier: dict, held_out: bool, where: str = "the replay documents") -> None:
    """Refuse to join rows whose `shipped` policy was decided otherwise than `earlier`'s (each
    project by a bundle trained without it, or one bundle for all): the joined rows would not
    mean one thing.  `where` names the kept document in the error."""
    if bool(earlier.get("held_out")) != held_out:
        raise UserError(f"{where} do not join: the kept one's `shipped` rows were decided " + (
            "by bundles trained without each project: walk with --held-out too" if earlier.get("held_out")
            else "by one bundle for every project: walk without --held-out"))


def joined(earlier: dict, later: dict) -> dict:
    """`later`'s projects joined into `earlier`'s document, so that a corpus walked a few stores
    at a time (on machines that each hold only those) reads as one replay: a project in both
    takes `later`'s row (it was walked again), the others keep theirs and their place, and a new
    project comes last (check_joinable)."""
    check_joinable(earlier, bool(later.get("held_out")))
    walked = {project["name"]: project for project in later["projects"]}
    kept = [walked.pop(project["name"], project) for project in earlier["projects"]]
    return {"created": max(earlier["created"], later["created"]), "held_out": bool(later.get("held_out")),
            "projects": kept + list(walked.values())}


def _own_said(bundle, decided: Mapping[str, bool]) -> dict | None:
    """What the document says of a bundle the retrained policy trained: which model, under which
    policy, on how many commits, and for which of the benchmarks decided until the next boundary
    it decided, the shipped model deciding for the others (select's rule: the own model of a
    benchmark learnt from fewer than OWN_POSITIVES_NEEDED changes gives way).  None: nothing to
    learn from yet, the shipped model decided."""
    if bundle is None:
        return None
    from perf_selector.selector.selection.shipped_model import OWN_POSITIVES_NEEDED

    own_decided = sorted(benchmark for benchmark, by_own in decided.items() if by_own)
    summary = policy_summary(bundle, shipped=False)
    if decided and not own_decided:
        summary = (f"too few changes to decide (it learnt from fewer than {OWN_POSITIVES_NEEDED}): "
                   "the shipped model decided")
    return {"model": bundle.settings.get("model"), "policy": bundle.settings.get("policy", "model"),
            "commits": bundle.trained_on.get("commits"), "summary": summary,
            "decided_for": own_decided, "shipped_decided_for": sorted(set(decided) - set(own_decided))}


def shipped_models_said(projects: list[dict]) -> list[str]:
    """A line for each project whose `shipped` bundle let the executed-changed rule decide, with
    the bundle's own reason (with --held-out each project has a bundle of its own, and one held
    out can step aside where the others prune), and one naming the projects where it decided
    within the rule.  Projects walked before the document recorded the reason say nothing."""
    aside, deciding = [], {}
    for project in projects:
        said = project.get("bundles", {}).get("shipped", {})
        if "summary" not in said:
            continue
        if said.get("policy") == "executed-changed":
            aside.append(f"{project['name']}: {said['summary']}")
        else:
            deciding.setdefault(said.get("policy"), []).append(project["name"])
    return [f"{', '.join(names)}: the shipped model decided (its policy: {policy})"
            for policy, names in deciding.items()] + aside


def own_models_said(projects: list[dict]) -> list[str]:
    """A line on what each project's retrained own model decided (none for a project without one);
    the projects whose own model never decided (retrained alike) share one line: on a corpus that
    is most of them, and a line each would bury the ones that did."""
    lines, never = [], {}
    for project in projects:
        trained = project.get("bundles", {}).get("own", {}).get("trained")
        if not trained:
            continue
        every = project["bundles"]["own"].get("retrained_every")
        deciding = sorted((int(boundary), said) for boundary, said in trained.items() if said and said.get("decided_for"))
        if not deciding:
            never.setdefault(every, []).append(project["name"])
            continue
        first, said = deciding[0]
        benchmarks = len(said["decided_for"]) + len(said["shipped_decided_for"])
        lines.append(f"{project['name']}: the own model (retrained every {every} commits on the past alone) decided from "
                     f"commit {first} of the walk, first for {len(said['decided_for'])} of {benchmarks} benchmarks "
                     f"({said['summary']}); the shipped model decided for the others and before")
    return [f"{', '.join(names)}: the own model (retrained every {every} commits on the past alone) never learnt from "
            "enough changes to decide; the shipped model decided throughout, so `own` is `shipped`"
            for every, names in never.items()] + lines


BEGIN, END = "<!-- selector evaluate --replay: begin -->", "<!-- selector evaluate --replay: end -->"


def markdown(document: dict) -> str:
    """The replay's table, per project and policy, and the changes not caught at their commit."""
    which = ("the shipped model trained as shipped but without the project (`--held-out`)" if document.get("held_out")
             else "the shipped bundle")
    lines = [
        f"Generated by `selector evaluate --replay` on {document['created'][:10]}; `shipped` is {which}. Runs and time "
        "are shares of the decisions (each benchmark's first decision point, its baseline, aside); a change is caught "
        "at its commit, late (the first later run whose comparison spans it is changed) or never. The oracle runs each "
        "change once: `runs per change` is a policy's runs as a multiple of that.",
        "",
        "| project | policy | decisions | runs | runs per change | time | changes | at their commit | late | "
        "commits later (mean, max) | never |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row in summary_and_pooled(document).itertuples(index=False):
        later = "-" if not row.late else f"{row.mean_commits_later:.1f}, {row.max_commits_later:.0f}"
        lines.append(f"| {row.project} | {row.policy} | {row.decisions} | {number(row.run_share)} | "
                     f"{number(row.runs_per_change)} | {number(row.time_share)} | {row.changes} | {row.at_commit} | {row.late} | {later} | {row.never} |")
    said = shipped_models_said(document["projects"])
    if said:
        lines += ["", "What the `shipped` policy's bundle decided:", ""] + [f"- {line}" for line in said]
    said = own_models_said(document["projects"])
    if said:
        lines += ["", "What the `own` policy's model decided:", ""] + [f"- {line}" for line in said]
    unseen = unseen_frame(document)
    if len(unseen):
        lines += ["", "Changes not caught at their commit:", "", "| project | policy | commit | benchmark | caught | at | "
                  "commits later |", "|---|---|---|---|---|---|---|"]
        for row in unseen.itertuples(index=False):
            later = "-" if row.later != row.later or row.later is None else f"{row.later:.0f}"
            lines.append(f"| {row.project} | {row.policy} | {row.commit} | {row.benchmark} | {row.caught} | "
                         f"{row.at or '-'} | {later} |")
    return "\n".join(lines) + "\n"


def write_markdown(path: Path, document: dict) -> None:
    """The tables into `path`, between their markers (selector/markdown_section.py)."""
    write_section(path, BEGIN, END, markdown(document), "The history replayed: every policy from day one")


def summary_frame(document: dict) -> pd.DataFrame:
    """The printed table: per project and policy."""
    frame = pd.concat([pd.DataFrame(p["summary"]) for p in document["projects"]], ignore_index=True)
    return frame[["project", "policy", "decisions", "run_share", "runs_per_change", "time_share", "changes", "at_commit", "late",
                  "mean_commits_later", "max_commits_later", "never"]]


def summary_and_pooled(document: dict) -> pd.DataFrame:
    """The summary's rows per project and policy, then the pooled ones."""
    return pd.concat([summary_frame(document), pooled_frame(document)], ignore_index=True)


def pooled_frame(document: dict) -> pd.DataFrame:
    """Per policy, the projects together (a row only for a policy every project was walked
    under): their decisions, runs and changes added, so `runs per change` is the corpus's.
    Time is a share of each project's own benchmark seconds, which do not add across projects
    measured on different suites: it is left out.  Empty for a single project."""
    if len(document["projects"]) < 2:
        return pd.DataFrame()
    # every column of the summaries: the printed summary_frame leaves out the runs these add
    summary = pd.concat([pd.DataFrame(p["summary"]) for p in document["projects"]], ignore_index=True)
    every = summary.groupby("policy", sort=False)["project"].nunique() == len(document["projects"])
    rows = []
    for policy in every[every].index:
        rows_of = summary[summary["policy"] == policy]
        decisions, runs, changes = (int(rows_of[column].sum()) for column in ("decisions", "runs", "changes"))
        late = int(rows_of["late"].sum())
        # the mean over every late change: each project's mean weighed by its late changes
        mean_later = float((rows_of["mean_commits_later"].fillna(0) * rows_of["late"]).sum() / late) if late else float("nan")
        rows.append({"project": f"all {len(document['projects'])}", "policy": policy, "decisions": decisions,
                     "run_share": runs / decisions if decisions else float("nan"),
                     "runs_per_change": runs / changes if changes else float("nan"), "time_share": float("nan"),
                     "changes": changes, "at_commit": int(rows_of["at_commit"].sum()), "late": late,
                     "mean_commits_later": mean_later,
                     "max_commits_later": rows_of["max_commits_later"].max() if late else None,
                     "never": int(rows_of["never"].sum())})
    return pd.DataFrame(rows)


def unseen_frame(document: dict) -> pd.DataFrame:
    """The changes some policy did not catch at their commit: when (if ever) the team saw them."""
    frames = [pd.DataFrame(p["changes"]).assign(project=p["name"]) for p in document["projects"] if p["changes"]]
    if not frames:
        return pd.DataFrame()
    frame = pd.concat(frames, ignore_index=True)
    return frame.assign(commit=frame["commit"].str[:10], at=frame["at"].fillna("").str[:10])[
        ["project", "policy", "commit", "benchmark", "caught", "at", "later"]]


def deciding_policy(policies: Iterable[str]) -> str:
    """The policy `select` would have applied: the project's own bundle when it has one, else the
    shipped one, else the executed-changed rule."""
    names = set(policies)
    return next(name for name in (OWN, SHIPPED, RULE, ALWAYS) if name in names)


REPLAY_FILE = "replay.json"


def timeline_document(name: str, store: Store, config: Config, history: History | None = None,
                      benchmarks: Iterable[str] | None = None, bundle_path: Path | None = None) -> dict:
    """One project's replay with every step and change, for the report's timeline: the commits
    in walk order, which policy decides, each policy's summary, steps and changes (all of them,
    caught at their commit too)."""
    from perf_selector.selector.tables import records

    history = history if history is not None else load_history(store)
    policies, bundles = policies_of(store, config, bundle_path)
    replayed = replay_project(name, store, config, policies, history, benchmarks)
    steps = replayed.steps[["policy", "commit", "benchmark", "run", "against", "label", "why"]]
    return {"created": datetime.now(timezone.utc).isoformat(timespec="seconds"), "project": name,
            "commits": list(history.built()), "decides": deciding_policy(policies), "bundles": bundles,
            "summary": records(replayed.summary), "steps": records(steps), "changes": records(replayed.changes)}


def save_timeline(directory: Path, name: str, store: Store, config: Config, history: History | None = None,
                  benchmarks: Iterable[str] | None = None) -> Path:
    """The replay of `store` as `directory`/replay.json (see timeline_document)."""
    import json

    path = Path(directory) / REPLAY_FILE
    path.write_text(json.dumps(timeline_document(name, store, config, history, benchmarks), indent=1))
    return path
