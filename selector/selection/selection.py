"""`selector select`: which benchmarks a commit needs, and why.

For a commit (HEAD by default) the binary is analysed (given with ``--binary``, taken
from the store when the commit was collected, the working tree's own build when it is the
commit's (selector.working_tree_build, as the pre-push hook does), or built in a clean
worktree; the output says which: `Selection.build`), each
benchmark's closest profiled ancestor is found by walking git's commit graph, the
features are computed against it, and the trained model decides.  When in doubt the
decision is *run*, with the reason: no profiled ancestor, no model or a stale one,
the benchmark's harness changed since training, the build configuration or toolchain
changed.  Every decision names the changed functions behind it, with their rank in
the ancestor's profile and their change in static instructions.

It runs on every push, so it reads the store and hands the feature builder Arrow
tables: pandas, about half of what a selection would otherwise cost, is not imported.
"""

from __future__ import annotations

import importlib
import shutil
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from perf_selector.collectors.arrow_rows import concatenated, with_constants
from perf_selector.collectors.build_config import commit_config
from perf_selector.collectors.builds import BuildFailed, Worktree, run_build, toolchain_version
from perf_selector.collectors.commit_graph import closest_ancestor
from perf_selector.collectors.repository import Repository
from perf_selector.collectors.errors import UserError
from perf_selector.collectors.static_analysis import AnalysisInProgress, analyse_binary
from perf_selector.features.catalogue import FEATURE_NAMES, common_indices
from perf_selector.models.names import STEPPING_ASIDE_RULE, WITHIN_RULE
from perf_selector.models.decision import (BUILD_CONFIG_CHANGED, PREDICTED_EFFECT, decide_rows, executed_rule_scores, fired_hazards,
                             memory_rule_runs, policy_summary, predicted_effect_reaches, steps_aside, within_rule)
from perf_selector.storage.history import History, measured_runs, with_current_build_configs
from perf_selector.collectors.benchmark_suite import EVERY_MEMBER, member_name, suite_of
from perf_selector.selector.temporaries import temporary_directory
from perf_selector.selector.config import Config, benchmark_metrics, harness_digest, has_benchmarks
from perf_selector.selector.selection.function_names import readable
from perf_selector.selector.selection.shipped_model import OWN_POSITIVES_NEEDED, SHIPPED_BUNDLE, shipped_bundle_path
from perf_selector.storage.store import Store
from perf_selector.collectors.metrics import INSTRUCTIONS

SCHEMA_VERSION = 1
MAX_WALK = 5000  # commits of git history searched for a profiled ancestor
DRIVERS_SHOWN = 5
# the columns of each table the feature builder reads
COMMIT_COLUMNS = ["sha", "parents", "author_time", "build_status", "build_config", "toolchain"]
# The columns of the stored functions and objects tables that the feature builder reads
# (the analysis has more: collectors.static_analysis.FUNCTION_COLUMNS, OBJECT_COLUMNS).
FEATURE_FUNCTION_COLUMNS = ["commit", "name", "fingerprint", INSTRUCTIONS.name, "callees", "data_refs", "parts", "address"]
FEATURE_OBJECT_COLUMNS = ["commit", "name", "fingerprint", "address", "size", "writable"]


@dataclass
class Driver:
    function: str
    change: str  # changed | deleted | data
    rank_instructions: float  # 0-100 in the ancestor's profile
    rank_calls: float
    instruction_delta: int  # static instructions, new - old


@dataclass
class Decision:
    name: str
    decision: str  # run | skip
    reason: str
    probability: float | None = None
    threshold: float | None = None
    against: str | None = None
    hops: int | None = None
    drivers: list[Driver] = field(default_factory=list)
    predicted_effect: float | None = None  # percent: c_o's instruction counts applied to c_n's code


# Which build of the commit a selection analysed (`Selection.build`, the JSON document's "build").
GIVEN, STORED, WORKING_TREE, CLEAN_WORKTREE = "given", "stored", "working tree", "clean worktree"


@dataclass
class Selection:
    commit: str
    binary: str | None
    benchmarks: list[Decision]
    model: dict | None
    notes: list[str]
    seconds: float = 0.0
    build: str | None = None  # GIVEN, STORED, WORKING_TREE or CLEAN_WORKTREE; None when selection failed
    # a local copy of the analysed binary (given, the working tree's, or built here), for
    # --run-benchmarks to run rather than build it again; not in the document
    local_binary: str | None = field(default=None, repr=False)
    # each [[suite]]'s framework, for the filter its benchmarks run by (not in the document)
    suite_frameworks: dict[str, str] = field(default_factory=dict, repr=False)

    @property
    def run(self) -> list[str]:
        return [d.name for d in self.benchmarks if d.decision == "run"]

    def document(self) -> dict:
        """The JSON form (docs/select.schema.json)."""
        return {
            "schema_version": SCHEMA_VERSION, "commit": self.commit, "binary": self.binary, "build": self.build,
            "run": self.run, "skip": [d.name for d in self.benchmarks if d.decision == "skip"],
            "benchmarks": [_finite(asdict(d)) for d in self.benchmarks], "model": self.model,
            "notes": self.notes, "seconds": round(self.seconds, 3),
        }


def run_everything(config: Config, commit: str, reason: str, notes: list[str] | None = None) -> Selection:
    """The safe answer: every benchmark runs, for one reason (used when selection itself fails).
    A suite whose benchmarks are not known here is one decision, "<suite>/*": all of them."""
    decisions = [Decision(b.name, "run", reason) for b in config.benchmark]
    decisions += [Decision(member_name(suite.name, EVERY_MEMBER), "run", reason) for suite in config.suite]
    return Selection(commit, None, decisions, None, notes or [], suite_frameworks=suite_frameworks(config))


def suite_frameworks(config: Config) -> dict[str, str]:
    return {suite.name: suite.framework for suite in config.suite}


class SelectionFailed(Exception):
    """`select` failed on a bug of ours or its environment, and the caller asked not to fail open."""


def select_failing_open(top: Path, config: Config, store: Store, revision: str, binary: Path | None = None,
                        against: str | None = None, bundle_path: Path | None = None,
                        analysis: AnalysisInProgress | None = None, strict: bool = False,
                        working_tree: bool = True) -> Selection:
    """`select` under the push path's policy: bad input (UserError) is the user's to fix; any
    other failure selects every benchmark with the reason, so a bug of the tool never blocks a
    push or skips a benchmark, unless `strict`: then it raises SelectionFailed."""
    try:
        return select(top, config, store, revision, binary, against, bundle_path, analysis, working_tree)
    except UserError:
        raise
    except Exception as error:  # noqa: BLE001 - the hook must not break a push on our bug
        if strict:
            raise SelectionFailed(f"{type(error).__name__}: {error}") from error
        return run_everything(config, revision, f"selector failed ({type(error).__name__}: {error}); running everything")


def select(top: Path, config: Config, store: Store, revision: str = "HEAD", binary: Path | None = None,
           against: str | None = None, bundle_path: Path | None = None,
           analysis: AnalysisInProgress | None = None, working_tree: bool = True) -> Selection:
    """The decisions for `revision`.  `analysis` is the analysis of `binary` if the caller
    already started it (the CLI does, before its imports); otherwise it starts here.
    Without `binary`, a commit the store lacks is analysed with the working tree's build when
    that is the commit's (unless not `working_tree`: the hook, which asked already), else
    built in a clean worktree."""
    started = time.monotonic()
    # A given binary is analysed in a thread (the compiled core releases the GIL) while git
    # and the store are read here: on the push path the two overlap.
    if binary is not None and analysis is None:
        analysis = AnalysisInProgress(binary)
    # The block alignment's decoder, imported while this thread mostly waits on git, the store
    # and the analysis: the features need it as soon as a changed function was reached.
    threading.Thread(target=importlib.import_module, args=("perf_selector.collectors.block_diff",), daemon=True).start()
    repository = Repository.open(top)
    top = repository.top
    commit = repository.commit(revision)
    if commit is None:
        raise UserError(f"{revision!r} is not a commit of {top}")
    sha = commit.sha
    notes: list[str] = []
    if not has_benchmarks(config):
        raise UserError("selector.toml configures no [[benchmark]] or [[suite]]; there is nothing to select")

    stored = store.read("commits")
    stored_ok = stored.filter(pc.equal(stored["build_status"], "ok")) if stored.num_rows else stored
    new = _new_analysis(repository, config, store, sha, binary, stored_ok, notes, analysis, working_tree)
    functions, objects, binary_label, new_binary = new.functions, new.objects, new.label, new.binary
    done = {"build": new.build, "local_binary": new_binary, "suite_frameworks": suite_frameworks(config)}

    known = _KnownVersions(store, config, stored_ok)
    parents = _parents(repository, sha, stored)
    benchmarks = [b.name for b in config.benchmark] + _suite_benchmarks(top, config, store, stored, sha, new_binary, known,
                                                                         parents, notes)
    pairs = _compared_pairs(repository, sha, benchmarks, against, known, parents)
    decisions: dict[str, Decision] = {
        benchmark: Decision(benchmark, "run", _why_no_pair(benchmark, against, known, sha, parents))
        for benchmark in benchmarks if benchmark not in pairs
    }
    if not pairs:
        return Selection(sha, binary_label, [decisions[b] for b in benchmarks], None, notes, time.monotonic() - started,
                         **done)

    from perf_selector.features.builder import FeatureBuilder

    history = _history(repository, config, store, stored, commit, functions, objects, known,
                       sorted({old for old, _ in pairs.values()}), new_binary)
    builder = FeatureBuilder(history)
    features = dict(zip(pairs, builder.rows((sha, old, b, hops, None) for b, (old, hops) in pairs.items())))
    bundle, shipped, model_note = _models(bundle_path, store, notes, config.select.policy)
    memory = _memory_benchmarks(config, list(pairs))
    for benchmark, (old, hops) in pairs.items():
        if benchmark in memory:
            decisions[benchmark] = _decide_memory(benchmark, old, hops, features[benchmark], builder, sha)
            continue
        decision = _decide(benchmark, old, hops, features[benchmark], builder, sha, config, bundle, shipped, model_note, notes)
        decisions[benchmark] = overrule_by_predicted_effect(decision, config.labels.min_effect)
    model = _model_document(bundle, shipped, bundle_path or Path(store.root) / "models")
    return Selection(sha, binary_label, [decisions[b] for b in benchmarks], model, _said_once(notes), time.monotonic() - started,
                     **done)


def _suite_benchmarks(top: Path, config: Config, store: Store, stored: pa.Table, sha: str, new_binary: str | None,
                      known: _KnownVersions, parents: dict[str, list[str]], notes: list[str]) -> list[str]:
    """The suites' benchmarks of the new commit: listed from its binary (built, given, or the
    stored one), or, when it cannot be listed, those of its closest measured ancestor.  A
    benchmark the ancestor had and the commit has not is gone: not selected, and said."""
    if not config.suite:
        return []
    from perf_selector.selector.benchmarks import build_benchmarks

    # A collected commit's benchmarks are those it was measured with; another's, its binary's.
    found = build_benchmarks(config, top, Path(new_binary)) if new_binary else None
    if found is None and sha in known.stored:
        return sorted(name for suite in config.suite for name in known.suite_members(sha, suite.name))
    listed = {spec.name for spec in found.specs if suite_of(spec.name)} if found else set()
    names = []
    for suite in config.suite:
        ancestor = known.closest_measuring(sha, parents, suite.name)
        before = known.suite_members(ancestor[0], suite.name) if ancestor else set()
        if found is None or suite.name in found.problems:
            why = found.problems[suite.name] if found else "no binary of it here"
            notes.append(f"suite {suite.name}: its benchmarks could not be listed at {sha[:12]} ({why}); "
                         f"selecting among the {len(before)} its closest measured ancestor had")
            names.extend(sorted(before))
            continue
        now = sorted(name for name in listed if suite_of(name) == suite.name)
        gone = sorted(before - set(now))
        if gone:
            notes.append(f"suite {suite.name}: {len(gone)} benchmark{'s' if len(gone) > 1 else ''} of {ancestor[0][:12]} "
                         f"no longer exist{'s' if len(gone) == 1 else ''} and {'are' if len(gone) > 1 else 'is'} not "
                         f"selected: {', '.join(gone[:5])}{' ...' if len(gone) > 5 else ''}")
        names.extend(now)
    return names


def _why_no_pair(benchmark: str, against: str | None, known: _KnownVersions, sha: str, parents: dict[str, list[str]]) -> str:
    """Why a benchmark has no old version to compare with: a suite's benchmark its ancestor did not
    have is new; otherwise nothing measured and profiled it."""
    if against:
        return f"{against} has no measurements and profile of this benchmark"
    suite = suite_of(benchmark)
    if suite:
        ancestor = known.closest_measuring(sha, parents, suite)
        if ancestor:
            return f"a new benchmark: {ancestor[0][:12]}, the closest measured ancestor, does not have it"
    return "no ancestor with stored measurements and a profile (collect or record one)"


def _compared_pairs(repository: Repository, sha: str, benchmarks: list[str], against: str | None, known: _KnownVersions,
                    parents: dict[str, list[str]]) -> dict[str, tuple[str, int]]:
    """benchmark -> (the old version it is compared with, hops back): the closest usable
    ancestor, or `against` where it is usable.  Benchmarks without one are left out."""
    if against:
        against_commit = repository.commit(against)
        if against_commit is None:
            raise UserError(f"--against {against!r} is not a commit")
        against_sha = against_commit.sha
        # Features compare a commit with an older state of itself: the commit itself, or one
        # that is not behind it, would read as every hot function changed or deleted.
        if against_sha == sha:
            raise UserError(f"--against {against!r} is the commit itself; give one of its ancestors")
        if not repository.is_ancestor(against_sha, sha):
            raise UserError(f"--against {against!r} is not an ancestor of {sha[:12]}; give one of its ancestors")
        return {benchmark: (against_sha, _hops(sha, against_sha, parents))
                for benchmark in benchmarks if known.usable(against_sha, benchmark)}
    pairs = {}
    for benchmark in benchmarks:
        found = closest_ancestor(sha, parents, lambda c, b=benchmark: known.usable(c, b))
        if found:
            pairs[benchmark] = found
    return pairs


def _history(repository: Repository, config: Config, store: Store, stored: pa.Table, commit, functions: pa.Table,
             objects: pa.Table, known: _KnownVersions, olds: list[str], new_binary: str | None) -> History:
    """What the feature builder needs: the new commit beside the old versions it is compared with."""
    sha = commit.sha
    binaries = _binaries(store, stored, sha, new_binary)
    # Every stored commit, not only the ancestors: benchmark_recent_change_rate orders the
    # stored labels by their commits' times, as it does in training.  The old versions'
    # build configurations as a current version stores them (from their binaries, when an
    # older version stored them).
    commit_rows = with_current_build_configs(stored.filter(pc.not_equal(stored["sha"], sha)).select(COMMIT_COLUMNS),
                                             binaries, only=olds)
    if pa.types.is_null(commit_rows.schema.field("parents").type.value_type):
        # a store of root commits alone: no parent ever typed the column (the new row has one)
        commit_rows = commit_rows.set_column(commit_rows.schema.get_field_index("parents"), "parents",
                                             commit_rows["parents"].cast(pa.list_(pa.large_string())))
    new_row = pa.Table.from_pylist([{
        "sha": sha, "parents": list(commit.parents), "author_time": commit.author_time, "build_status": "ok",
        "build_config": _new_build_config(repository, config, stored, sha, new_binary, binaries),
        "toolchain": toolchain_version(),
    }], schema=commit_rows.schema)
    return History(
        commits=pa.concat_tables([commit_rows, new_row]),
        functions=_concat([store.read("functions", keys=olds), with_constants(functions, commit=sha)], FEATURE_FUNCTION_COLUMNS),
        objects=_concat([store.read("objects", keys=olds), with_constants(objects, commit=sha)], FEATURE_OBJECT_COLUMNS),
        profiles=_concat([known.profiles[old] for old in olds]),
        measurements=_concat([known.measurements[old] for old in olds]),
        labels=store.read("labels"),
        binaries=binaries,
    )


def _new_build_config(repository: Repository, config: Config, stored: pa.Table, sha: str, new_binary: str | None,
                      binaries) -> str:
    """The new commit's build configuration (collectors.build_config): the flags its binary
    records, else the digest of its build files; as stored when it was collected."""
    if new_binary is None:
        row = stored.filter(pc.equal(stored["sha"], sha)).select(["sha", "build_config"])
        return with_current_build_configs(row, binaries)["build_config"][0].as_py()
    return commit_config(new_binary, lambda: repository.tree_listing(sha), config.build.config_files, config.build.unaffected,
                         roots=[repository.top])


def _models(bundle_path: Path | None, store: Store, notes: list[str], policy: str = "auto"):
    """(the project's bundle or None, the shipped model when it selects instead or None, why
    there is no model); `policy`: [select] policy, which overrides the bundles' own."""
    own_path = bundle_path or Path(store.root) / "models"
    bundle, model_note = _bundle(own_path, notes, policy=policy)
    # No model of the project's own (and none named): the shipped cross-project model selects.
    # A bundle that exists but was refused (tampered, damaged) is no such case: run everything.
    has_own = (own_path / "manifest.json").exists()
    own_too_thin = bundle is not None and any(e.training_positives < OWN_POSITIVES_NEEDED for e in bundle.entries)
    shipped = _shipped(notes, policy) if bundle_path is None and (not has_own or own_too_thin) else None
    if bundle is None and shipped is not None:
        bundle, model_note = shipped, ""
        notes.append(f"no model of this project yet: the shipped cross-project model "
                     f"({len(shipped.trained_on.get('projects') or [])} projects) selects; `selector train` makes the "
                     "project's own from labelled commits")
    adapted = bundle.settings.get("shipped_threshold") if bundle is not None and bundle is not shipped else None
    if shipped is not None and adapted is not None:
        for entry in shipped.entries:  # loaded for this selection only: the file is not touched
            entry.threshold = min(entry.threshold, adapted)
        notes.append(f"the shipped model's operating point is adapted to this project's labelled changes: {adapted:.4g}")
    # One line for each deciding bundle: which model decides and what it saves against the rule (the
    # whole reason, every project's figures, is in the JSON document's model and in `selector doctor`)
    own_decides = bundle is not None and bundle is not shipped and (
        shipped is None or any(e.training_positives >= OWN_POSITIVES_NEEDED for e in bundle.entries))
    for deciding in [b for b in (bundle if own_decides else None, shipped) if b is not None]:
        notes.append(policy_summary(deciding, deciding is shipped))
    return bundle, shipped, model_note


def _memory_benchmarks(config: Config, benchmarks: list[str]) -> set[str]:
    """The benchmarks measured by a memory metric (collectors.metrics: peak RSS, heap allocations)."""
    from perf_selector.collectors.metrics import is_memory

    metrics = benchmark_metrics(config)
    return {b for b in benchmarks if b in metrics and is_memory(metrics[b])}


def _decide_memory(benchmark: str, old: str, hops: int, features: list[float], builder, sha: str) -> Decision:
    """A memory benchmark's decision, by the memory rule (models.decision.memory_rule_runs)."""
    decision = Decision(benchmark, "run", "", against=old, hops=int(hops))
    decision.drivers = drivers(builder, sha, old, benchmark)
    runs = bool(memory_rule_runs(np.array([features], dtype=float))[0])
    decision.decision = "run" if runs else "skip"
    if features[BUILD_CONFIG_CHANGED] > 0:
        decision.reason = "memory rule: the build configuration or the toolchain changed"
    elif runs:
        decision.reason = "memory rule: changed code that allocates (or a deleted function, or data it reads) ran in the ancestor's run"
    else:
        decision.reason = "memory rule: no changed code that allocates ran in the ancestor's run"
    return decision


def _decide(benchmark: str, old: str, hops: int, features: list[float], builder, sha: str, config: Config, bundle, shipped,
            model_note: str, notes: list[str]) -> Decision:
    """One benchmark's decision from its feature row: run unless a current model says skip."""
    decision = Decision(benchmark, "run", "", against=old, hops=int(hops))
    decision.drivers = drivers(builder, sha, old, benchmark)
    scorer = _scorer(benchmark, bundle, shipped, notes)
    if features[BUILD_CONFIG_CHANGED] > 0:
        decision.reason = ("the build configuration (the compiler flags the binary records) or the toolchain changed: "
                           "every function may have changed")
    elif scorer is None:
        decision.reason = model_note
    elif stale := scorer.stale_reason(benchmark, harness_digest(config, benchmark), list(FEATURE_NAMES)):
        decision.reason = stale
    else:
        row = decide_rows(scorer, np.array([features], dtype=float), [benchmark], config.labels.min_effect)
        probability, threshold = float(row.probability[0]), float(row.threshold[0])
        runs = bool(row.model_runs[0])
        decision.decision = "run" if runs else "skip"
        ruled_out = within_rule(scorer) and not executed_rule_scores(np.array([features], dtype=float), config.labels.min_effect)[0]
        if not steps_aside(scorer):  # the rule's 1 or 0 is no model's score
            decision.probability, decision.threshold = probability, threshold
        decision.reason = _explain_rule(runs, decision.drivers) if steps_aside(scorer) or ruled_out else \
            _explain(runs, probability, scorer.entry_for(benchmark), decision.drivers)
        harmless = scorer.settings.get("harmless_hazards", {}).get(benchmark, {})
        if row.why[0] == "hazard":
            decision.decision = "run"
            decision.reason = (f"hazard: {', '.join(fired_hazards(features, harmless))} fired where the executed-changed "
                               f"rule runs; a model may not prune it (the model alone would skip: {decision.reason})")
        elif not runs and (shown := [h for h in fired_hazards(features) if h in harmless]):
            decision.reason += "; " + "; ".join(
                f"{h} shown harmless for this benchmark by the project's history ({harmless[h]['fired']} labelled pairs, "
                "none a change)" for h in shown)
    decision.predicted_effect = round(float(features[PREDICTED_EFFECT]), 4)
    return decision


def _model_document(bundle, shipped, bundle_path: Path) -> dict | None:
    """What the selection says of the model that made it."""
    if bundle is None:
        return None
    return {"bundle": str(SHIPPED_BUNDLE if bundle is shipped else bundle_path), "model": bundle.settings.get("model"),
            "scope": bundle.settings.get("scope"), "trained_on_commits": bundle.trained_on.get("commits"),
            "newest_commit": bundle.trained_on.get("newest_commit"), "created": bundle.created, "shipped": bundle is shipped,
            "policy": bundle.settings.get("policy", "model"), "policy_summary": policy_summary(bundle, bundle is shipped),
            "policy_reason": bundle.settings.get("policy_reason", "")}


@dataclass
class _NewAnalysis:
    functions: pa.Table
    objects: pa.Table
    label: str | None  # how the output names the binary: the path given or the working tree's; None otherwise
    binary: str | None  # a local path of the binary (None when stored: the store has it)
    build: str  # which build: GIVEN, STORED, WORKING_TREE, CLEAN_WORKTREE


def _new_analysis(repository: Repository, config: Config, store: Store, sha: str, binary: Path | None, stored_ok: pa.Table,
                  notes: list[str], in_progress: AnalysisInProgress | None, working_tree: bool = True) -> _NewAnalysis:
    """The new commit's functions and objects: of the given binary, of the stored build, of the
    working tree's own build when it is the commit's, else of a build in a clean worktree; a note
    says which (and why not the working tree's)."""
    if in_progress is not None:  # the analysis of the given --binary, started before
        analysis = in_progress.result()
        notes.extend(analysis.notes)
        return _NewAnalysis(analysis.functions, analysis.objects, str(binary), str(binary), GIVEN)
    if stored_ok.num_rows and sha in set(stored_ok["sha"].to_pylist()) and store.has("functions", sha):
        notes.append(f"using the stored build of {sha[:12]} (collected)")
        return _NewAnalysis(store.read_one("functions", sha), store.read_one("objects", sha), None, None, STORED)
    if working_tree:
        developers = _working_tree_analysis(repository, config, sha, notes)
        if developers is not None:
            return developers
    worktree = Worktree(repository, sha)
    with worktree as checkout:
        build = run_build(checkout, sha, config.build.command, config.project.binary, config.build.timeout,
                          notes=worktree.notes)
        notes.extend(build.notes)
        if build.status != "ok":
            raise BuildFailed(sha, build.reason, config.build.command, build.log_tail,
                              "pass --binary (a build of it), or fix the build")
        analysis = analyse_binary(build.binary)
        # kept past the worktree: the features align the changed code of this binary block by block
        kept = temporary_directory("selector-select-") / "binary"
        shutil.copy(build.binary, kept)  # executable still: a suite lists its benchmarks by running it
    notes.append(f"built {sha[:12]} with `{config.build.command}` in a clean worktree")
    return _NewAnalysis(analysis.functions, analysis.objects, None, str(kept), CLEAN_WORKTREE)


def _working_tree_analysis(repository: Repository, config: Config, sha: str, notes: list[str]) -> _NewAnalysis | None:
    """The analysis of the working tree's build when it is the commit's (selector.working_tree_build:
    the commit checked out, nothing changed, the binary newer than every tracked file), saying so
    or why not; None when not, or when it cannot be analysed (stripped, not a program)."""
    from perf_selector.collectors.errors import BinaryError
    from perf_selector.selector.selection.working_tree_build import working_tree_build

    found = working_tree_build(repository, sha, config.project.binary)
    if found.binary is None:
        notes.append(found.note)
        return None
    try:
        analysis = analyse_binary(found.binary)
    except BinaryError as error:
        notes.append(f"not using the working tree's build: {error}")
        return None
    notes.append(found.note)
    notes.extend(analysis.notes)
    return _NewAnalysis(analysis.functions, analysis.objects, str(found.binary), str(found.binary), WORKING_TREE)


def _binaries(store: Store, stored: pa.Table, sha: str, new_binary: str | None):
    """commit -> a local path of its binary: the new commit's as built or given, the others' from the store."""
    has_digests = stored.num_rows and "binary_sha256" in stored.column_names
    stored_binary = store.binary_lookup(stored["sha"].to_pylist() if has_digests else [],
                                        stored["binary_sha256"].to_pylist() if has_digests else [])
    return lambda commit: new_binary if commit == sha and new_binary is not None else stored_binary(commit)


class _KnownVersions:
    """Which benchmarks each stored commit can stand as c_o for (measured and, unless profiling is
    off, profiled), read one commit at a time as the ancestor walk reaches it: the hook pays for
    the few commits it walks, not for the whole store."""

    def __init__(self, store: Store, config: Config, stored_ok: pa.Table) -> None:
        self.store = store
        self.profiling = config.profile.tool != "none"
        self.stored = set(stored_ok["sha"].to_pylist()) if stored_ok.num_rows else set()
        self.measurements: dict[str, pa.Table] = {}
        self.profiles: dict[str, pa.Table] = {}
        self._benchmarks: dict[str, set[str]] = {}
        self._suite_ancestors: dict[str, tuple[str, int] | None] = {}

    def usable(self, commit: str, benchmark: str) -> bool:
        if commit not in self._benchmarks:
            self._benchmarks[commit] = self._read(commit)
        return benchmark in self._benchmarks[commit]

    def suite_members(self, commit: str, suite: str) -> set[str]:
        """The benchmarks of `suite` this commit can stand as c_o for."""
        if commit not in self._benchmarks:
            self._benchmarks[commit] = self._read(commit)
        return {name for name in self._benchmarks[commit] if suite_of(name) == suite}

    def closest_measuring(self, sha: str, parents: dict[str, list[str]], suite: str) -> tuple[str, int] | None:
        """The closest ancestor of `sha` (one selection's commit) measured with benchmarks of `suite`:
        asked once per suite and again for each of its new benchmarks, walked once."""
        if suite not in self._suite_ancestors:
            self._suite_ancestors[suite] = closest_ancestor(sha, parents, lambda commit: bool(self.suite_members(commit, suite)))
        return self._suite_ancestors[suite]

    def _read(self, commit: str) -> set[str]:
        if commit not in self.stored or not self.store.has("measurements", commit):
            return set()
        measurements = self.store.read_one("measurements", commit)
        good = measured_runs(measurements)
        self.measurements[commit] = measurements
        self.profiles[commit] = self.store.read_one("profiles", commit) if self.store.has("profiles", commit) else \
            pa.table({name: pa.array([], pa.large_string()) for name in ("commit", "benchmark", "function")})
        found = set(good["benchmark"].to_pylist())
        return found & set(self.profiles[commit]["benchmark"].to_pylist()) if self.profiling else found


def _parents(repository: Repository, sha: str, stored: pa.Table) -> dict[str, list[str]]:
    """Parents of `sha`'s ancestry from git (bounded), plus what the store knows."""
    parents = repository.ancestry(sha, MAX_WALK)
    if stored.num_rows:
        for commit, its_parents in zip(stored["sha"].to_pylist(), stored["parents"].to_pylist()):
            parents.setdefault(commit, list(its_parents or ()))
    return parents


def _concat(tables: list[pa.Table], columns: list[str] | None = None) -> pa.Table:
    """Tables of several commits as one (their columns unified by name; `columns` only, when given)."""
    return concatenated(table.select(columns) if columns else table for table in tables if table.num_columns)


def _hops(sha: str, target: str, parents: dict[str, list[str]]) -> int:
    found = closest_ancestor(sha, parents, lambda c: c == target)
    return found[1] if found else 0


BUNDLE_REFUSED = "model bundle refused"  # the note that says so; `--strict` fails on it


def _scorer(benchmark: str, bundle, shipped, notes: list[str]):
    """The bundle that decides for `benchmark`: the project's own, unless its model for the
    benchmark learnt from fewer than OWN_POSITIVES_NEEDED changes and the shipped one is there."""
    entry = bundle.entry_for(benchmark) if bundle is not None else None
    if entry is None or shipped is None or bundle is shipped or entry.training_positives >= OWN_POSITIVES_NEEDED:
        return bundle
    if shipped.entry_for(benchmark) is None:
        return bundle
    notes.append(_ThinModel(entry.training_positives, "the shipped model", [benchmark]))
    return shipped


@dataclass
class _ThinModel:
    """The note that the project's own model is too thin for some benchmarks: one note for all
    of them (a pooled model is thin for every benchmark at once), joined by `_said_once`."""

    positives: int
    shipped: str
    benchmarks: list[str]

    def __str__(self) -> str:
        shown = ", ".join(self.benchmarks[:5]) + (f" and {len(self.benchmarks) - 5} more" if len(self.benchmarks) > 5 else "")
        return (f"the project's own model learnt from {self.positives} changes (fewer than {OWN_POSITIVES_NEEDED}): "
                f"{self.shipped} selects for {shown}")


def _said_once(notes: list) -> list[str]:
    """The notes as text, each said once: the thin-model notes of one model joined into one."""
    joined: dict[tuple, _ThinModel] = {}
    texts: list = []
    for note in notes:
        if isinstance(note, _ThinModel):
            key = (note.positives, note.shipped)
            if key in joined:
                joined[key].benchmarks.extend(note.benchmarks)
                continue
            joined[key] = note
        texts.append(note)
    return list(dict.fromkeys(str(note) for note in texts))


def _shipped(notes: list[str], policy: str = "auto"):
    """The shipped cross-project bundle, or None (not installed, or refused: then a note says so)."""
    path = shipped_bundle_path()
    return _bundle(path, notes, "the shipped cross-project model: ", policy)[0] if path is not None else None


# [select] policy's names for the bundles' policies (models.names)
CHOSEN_POLICIES = {"rule": STEPPING_ASIDE_RULE, "within-rule": WITHIN_RULE, "model": "model"}


def _bundle(path: Path, notes: list[str], refused_what: str = "", policy: str = "auto"):
    """(the bundle at `path`, "") or (None, why not); a refused bundle is also noted, as
    BUNDLE_REFUSED, `refused_what` naming it.  A `policy` other than "auto" replaces the
    bundle's own (for this selection only: the file is not touched)."""
    from perf_selector.models.bundle import BundleError, load_bundle

    if not (path / "manifest.json").exists():
        return None, "no trained model (run selector train)"
    try:
        bundle = load_bundle(path, load_models=False)
        if policy != "auto":
            bundle.settings["policy"] = CHOSEN_POLICIES[policy]
            bundle.settings["policy_reason"] = f'[select] policy = "{policy}" in selector.toml'
        # A bundle that lets the executed-changed rule decide never scores its model: it is not
        # loaded, so the core install selects even where the model has no ONNX form.
        if not steps_aside(bundle):
            bundle.load_estimators(portable=True)
        return bundle, ""
    except BundleError as error:
        notes.append(f"{BUNDLE_REFUSED}: {refused_what}{error}")
        return None, "the model bundle was refused (see notes); run selector train"


def drivers(builder, new: str, old: str, benchmark: str, profiled: str | None = None) -> list[Driver]:
    """Changed and deleted functions the benchmark reached, hottest first, and changed data it reads.
    `profiled` (default `old`) is the commit whose profile tells what the benchmark runs."""
    diff, profile = builder.pair(new, old), builder.profile(profiled or old, benchmark)
    found = []
    changed_pos, profile_pos = common_indices(diff.changed, profile.codes)
    for c, p in zip(changed_pos, profile_pos):
        found.append(Driver(str(builder.names[diff.changed[c]]), "changed",
                              float(profile.rank_instructions[p]), float(profile.rank_calls[p]),
                              int(diff.changed_new_instructions[c]) - int(diff.changed_old_instructions[c])))
    deleted_pos, profile_pos = common_indices(diff.deleted, profile.codes)
    for d, p in zip(deleted_pos, profile_pos):
        found.append(Driver(str(builder.names[diff.deleted[d]]), "deleted", float(profile.rank_instructions[p]),
                              float(profile.rank_calls[p]), -int(diff.deleted_instructions[d])))
    found.sort(key=lambda d: (-d.rank_instructions, -d.rank_calls, d.function))
    for name in sorted(diff.changed_objects & profile.data_refs):
        found.append(Driver(name, "data", 0.0, 0.0, 0))
    return found[:DRIVERS_SHOWN] + [d for d in found[DRIVERS_SHOWN:] if d.change == "data"]


def overrule_by_predicted_effect(decision: Decision, min_effect: float) -> Decision:
    """A skip becomes a run when the predicted instruction change reaches `min_effect` (a fraction):
    a model learns from few changes, the prediction is the code's own arithmetic."""
    if decision.decision != "skip" or decision.predicted_effect is None or \
            not predicted_effect_reaches(decision.predicted_effect, min_effect):
        return decision
    decision.decision = "run"
    decision.reason = (f"predicted instruction change {decision.predicted_effect:+.2f}% reaches min_effect {100 * min_effect:g}% "
                       f"(the model alone would skip: {decision.reason})")
    return decision


def _explain_rule(runs: bool, reasons: list[Driver]) -> str:
    what = "changed code executed in the ancestor's run" if runs else "no changed code executed in the ancestor's run"
    top = f" ({readable(reasons[0].function)} {reasons[0].change})" if runs and reasons else ""
    return f"executed-changed rule: {what}{top}"


def _explain(runs: bool, probability: float, entry, reasons: list[Driver]) -> str:
    relation = ("reaches" if probability < entry.threshold else ">=") if runs else "<"  # reaches: within SCORE_RESOLUTION
    comparison = f"p={_shown(probability, entry.threshold)} {relation} {_shown(entry.threshold, probability)}" \
        if np.isfinite(entry.threshold) else "no performance change in the training history yet: always run"
    if not reasons:
        return f"{comparison}; nothing this benchmark reached changed"
    top = reasons[0]
    what = f"{readable(top.function)} {top.change}" + (f" (rank {top.rank_instructions:.0f} by instructions, {top.instruction_delta:+d} "
                                              "instructions)" if top.change != "data" else " (a data object it reads)")
    more = f" and {len(reasons) - 1} more" if len(reasons) > 1 else ""
    return f"{comparison}; {what}{more}"


def _shown(value: float, other: float) -> str:
    """`value` with as many decimals as it takes to tell it from `other` (at most 7)."""
    for digits in range(2, 8):
        if round(value, digits) != round(other, digits):
            return f"{value:.{digits}f}"
    return f"{value:.7f}"


def _finite(document: dict) -> dict:
    """JSON has no infinity: a threshold that runs everything is written as null."""
    if document.get("threshold") is not None and not np.isfinite(document["threshold"]):
        document["threshold"] = None
    return document
