"""`selector evaluate`: Method 4 on several projects' stores, and leave-one-project-out.

Each project is backtested exactly as `selector backtest` does it (its own history,
Method 4, every model and baseline, per benchmark and pooled), so a project's figures
here are the figures `backtest` prints for it.  Leave-one-project-out then asks what a
team that has collected nothing would get: for each held-out project, every model is
trained on all the labelled tuples of the *other* projects, without the benchmark's
identity among its inputs (benchmark names mean nothing across projects), its
operating point chosen on those projects' out-of-fold scores, and it scores the
held-out project's Method 4 test tuples, the same tuples its own models are scored on.
Those predictions carry the scope ``cross-project``.

No information from the held-out project reaches the cross-project models: not its
tuples, not its labels, not its threshold.  The other projects' histories are whole
(their commits are not in the held-out project's future or past: they are other code).
"""

from __future__ import annotations

import dataclasses
import json
import multiprocessing
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable, Sequence

import numpy as np
import pandas as pd

from perf_selector.collectors.child_processes import die_with_parent
from perf_selector.collectors.errors import UserError
from perf_selector.features.catalogue import FEATURE_NAMES
from perf_selector.features.tuples import TUPLE_KEYS
from perf_selector.models.backtest import (
    PREDICTION_COLUMNS, BacktestResult, FittedModel, count_fits, measured_effects, prediction_frame, train_one,
)
from perf_selector.models.design import design_matrix
from perf_selector.models.evaluation import score_predictions
from perf_selector.models.paired_fits import PairedFits
from perf_selector.models.registry import model_spec, positive_scores
from perf_selector.selector.config import Config, load_config
from perf_selector.selector.evaluation.evaluation_pack import Pack, is_pack, pack_evaluation_data
from perf_selector.selector.evaluation.evaluation_parts import Parts, project_digest
from perf_selector.selector.evaluation.held_out_fits import HeldOutFits
from perf_selector.selector.evaluation.store_backtest import EvaluationData, evaluation_data, run_backtest, save_backtest
from perf_selector.selector.evaluation.training import AUTO, CANDIDATES
from perf_selector.selector.selection.policy import (
    backtest_evidence, bounded_policy, feature_rows, features_of, own_model_epochs, policy_evidence, policy_from,
)
from perf_selector.models.decision import decide_by_policy, executed_rule_scores, pooled_rate, predicted_effect_reaches
from perf_selector.models.names import STEPPING_ASIDE_RULE, WITHIN_RULE
from perf_selector.models.risk_control import HeldOut, RiskBound, deciding_scores, risk_controlled_threshold
from perf_selector.selector.selection.shipped_model import OWN_POSITIVES_NEEDED
from perf_selector.storage.store import Store
from perf_selector.selector.tables import records

CROSS_PROJECT = "cross-project"
OWN_OR_SHIPPED = "own-or-shipped"  # the cross-project model until the project's own has enough changes
SCOPES = ("per-benchmark", "pooled")


@dataclass
class Project:
    name: str
    store: Store | Pack
    config: Config
    data: EvaluationData


@dataclass
class ProjectEvaluation:
    projects: list[Project]
    predictions: pd.DataFrame  # PREDICTION_COLUMNS + project; scopes per-benchmark, pooled, cross-project
    importances: dict[str, pd.DataFrame]  # per project, from its own backtest
    settings: dict
    notes: list[str] = field(default_factory=list)


def open_project(store_path: Path, config_path: Path | None = None) -> tuple[str, Store | Pack, Config]:
    """A project's store, its configuration (by default the selector.toml beside the store, as
    `<repository>/.selector` sits beside `<repository>/selector.toml`) and its name: the folder
    that holds its configuration (the repository, wherever the store is kept), or for a pack the
    folder that holds the pack.  An evaluation pack (selector.evaluation_pack) stands for its
    store: its configuration is the one packed with it."""
    store_path = Path(store_path).resolve()
    if is_pack(store_path):
        return store_path.parent.name, Pack(store_path), load_config(config_path or store_path / "selector.toml")
    config_path = store_configuration(store_path, config_path)
    return Path(config_path).resolve().parent.name, Store(store_path, create=False), load_config(config_path)


def store_configuration(store_path: Path, config_path: Path | None = None) -> Path:
    """The configuration of a store: `config_path`, or the selector.toml beside the store (as
    `<repository>/.selector` sits beside `<repository>/selector.toml`); refused when absent."""
    config_path = config_path or Path(store_path).resolve().parent / "selector.toml"
    if not config_path.is_file():
        raise UserError(f"{store_path}: no configuration at {config_path}; put the project's selector.toml beside its "
                        "store, or give STORE=CONFIG")
    return config_path


def open_projects(stores: Sequence[tuple[Path, Path | None]]) -> list[tuple[str, Store, Config]]:
    """Every store's project (open_project), each under a name of its own: a folder name met
    again gets a suffix (two repositories' `.selector` stores are both named by their folder)."""
    opened, names = [], set()
    for store_path, config_path in stores:
        name, store, config = open_project(store_path, config_path)
        if name in names:
            name = f"{name}-{len(names)}"
        names.add(name)
        opened.append((name, store, config))
    return opened


def load_projects(stores: Sequence[tuple[Path, Path | None]], options: dict,
                  on_project: Callable[[str], None] = lambda name: None, method: str = "method4") -> list[Project]:
    """Each store's (or evaluation pack's) project with its data under `method` at `options`."""
    projects = []
    for name, store, config in open_projects(stores):
        on_project(name)
        projects.append(Project(name, store, config, project_data(store, config, method, options)))
    return projects


def project_data(store: Store | Pack, config: Config, method: str, options: dict) -> EvaluationData:
    """evaluation_data of a store, or of an evaluation pack (its features read, not built)."""
    if isinstance(store, Pack):
        return pack_evaluation_data(store, config, method, options)
    return evaluation_data(store, config, method, options)


def evaluate(projects: list[Project], models: Sequence[str], target_hit_rate: float, seed: int, leave_one_out: bool = True,
             progress: Callable[[int], None] | None = None, threshold_by_project: bool = True,
             operating_point: str = "quantile", jobs: int = 1, parts: Parts | None = None,
             fits_kept: Parts | None = None) -> ProjectEvaluation:
    """Every project's own Method 4 backtest, then (with several projects) leave-one-project-out.
    `threshold_by_project`: the cross-project models place their operating point on scores of
    each training project held out in turn (else on stratified random folds, as a project's own).
    `jobs` projects' backtests, then models held out in turn over every project, are computed side
    by side, each in a process of its own; the figures are the same whatever `jobs` is (every fit
    has its own seed).  With `parts` (a folder), each project's backtest and each model held out in
    turn is kept there as it finishes, and one kept by an earlier run with the same inputs and code
    is taken as it is: a run cut off half way resumes.  `fits_kept`: where the fits of the projects
    held out in turn are kept for the other steps of a corpus evaluation (held_out_fits)."""
    parts = parts or Parts(None)
    portable = [_portable(p) for p in projects] if jobs > 1 else projects
    digests = [project_digest(p) for p in projects] if parts.directory else [None] * len(projects)
    backtests = kept_or_computed(
        parts, [parts.key("own", digest, models, target_hit_rate, seed, operating_point) for digest in digests],
        _own_backtest, [(p.data, models, target_hit_rate, seed, operating_point) for p in portable],
        [count_fits(p.data.plan, p.data.table, models, SCOPES) for p in projects], jobs, progress)
    frames, importances, notes = [], {}, []
    for project, result in zip(projects, backtests):
        frames.append(result.predictions.assign(project=project.name))
        importances[project.name] = result.importances
        notes += [f"{project.name}: {note}" for note in result.notes]
    if leave_one_out and len(projects) > 1:
        # a model at a time over every project held out, so that its nested fits are shared (PairedFits);
        # the heaviest first, so that the last to end side by side is a light one
        heavy_first = sorted(models, key=lambda model: -FIT_COST.get(model, 1))
        by_model = dict(zip(heavy_first, kept_or_computed(
            parts, [parts.key("held-out", digests, model, target_hit_rate, seed, threshold_by_project, operating_point)
                    for model in heavy_first],
            _held_out_predictions, [(portable, model, target_hit_rate, seed, threshold_by_project, operating_point,
                                     fits_kept) for model in heavy_first],
            [len(projects)] * len(models), jobs, progress)))
        for index, (held_out, own) in enumerate(zip(projects, frames[:len(projects)])):
            crossed_frame = pd.concat([by_model[model][index] for model in models], ignore_index=True)
            frames += [crossed_frame, own_or_shipped(held_out, own, crossed_frame, 1.0 - target_hit_rate)]
    parts.forget_others()
    settings = {"models": list(models), "target_hit_rate": target_hit_rate, "seed": seed, "leave_one_out": leave_one_out,
                "threshold_by_project": threshold_by_project, "operating_point": operating_point,
                "projects": [p.name for p in projects], "protocol": projects[0].data.plan.parameters if projects else {}}
    predictions = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=[*PREDICTION_COLUMNS, "project"])
    return ProjectEvaluation(projects, predictions, importances, settings, notes)


def _portable(project: Project) -> Project:
    """What a worker process reads of a project (its name, configuration, plan and tuples), without
    the store and the history, whose file handles and lookups do not cross processes."""
    return dataclasses.replace(project, store=None, data=dataclasses.replace(project.data, history=None))


def _own_backtest(data: EvaluationData, models: Sequence[str], target_hit_rate: float, seed: int, operating_point: str,
                  progress: Callable[[int], None] | None = None) -> BacktestResult:
    return run_backtest(data, models, SCOPES, target_hit_rate, seed, progress=progress, operating_point=operating_point)


# How much longer a model's fits take than a Perphecy predictor's or a logistic regression's, roughly
# (on the corpus): the order in which models are handed out side by side.
FIT_COST = {"svm": 8, "random-forest": 4, "xgboost-monotone": 2, "xgboost": 2}


def _held_out_predictions(projects: Sequence[Project], model: str, target_hit_rate: float, seed: int,
                          threshold_by_project: bool, operating_point: str, fits_kept: Parts | None = None,
                          progress: Callable[[int], None] | None = None) -> list[pd.DataFrame]:
    """`model`'s predictions on each project held out in turn (cross_project_predictions), in
    `projects`' order; each fit on all projects but two is made once, for both (PairedFits), and
    kept in `fits_kept` for the other steps of an evaluation (held_out_fits)."""
    fits = held_out_fits(projects, model, target_hit_rate, seed, threshold_by_project, operating_point, fits_kept) \
        if threshold_by_project else None
    frames = []
    for held_out in projects:
        others = [p for p in projects if p is not held_out]
        frames.append(cross_project_predictions(others, held_out, [model], target_hit_rate, seed, threshold_by_project,
                                                operating_point, fits=fits))
        if progress:
            progress(1)
    return frames


def held_out_fits(projects: Sequence[Project], model: str, target_hit_rate: float = 0.95, seed: int = 0,
                  threshold_by_project: bool = True, operating_point: str = "quantile", kept: Parts | None = None,
                  keep: bool = False) -> HeldOutFits:
    """The fits of `model`, trained as shipped with these settings, on sets of `projects` held out
    in turn (held_out_fits.HeldOutFits): each project's rows as every training beside the others
    holds them (cross_project_training); `kept`: a folder they outlive the run in; `keep`: for
    three levels of nesting (a bundle trained without a project, choosing its policy by the others
    held out in turn)."""
    design = {p.name: design_matrix(p.data.table[p.data.table["label"].notna()], FEATURE_NAMES, CROSS_PROJECT, [])
              for p in projects}
    digests = {p.name: project_digest(p) for p in in_training_order(projects)} \
        if kept is not None and kept.directory is not None else None
    return HeldOutFits(design, fit_settings(model, target_hit_rate, seed, threshold_by_project, operating_point), keep,
                       kept, digests)


def fit_settings(model: str, target_hit_rate: float, seed: int, threshold_by_project: bool, operating_point: str) -> list:
    """What a cross-project fit depends on besides its projects."""
    return [model, target_hit_rate, seed, threshold_by_project, operating_point]


def kept_or_computed(parts: Parts, keys: Sequence[str], work: Callable, arguments: Sequence[tuple],
                     weights: Sequence[int], jobs: int, progress: Callable[[int], None] | None = None) -> list:
    """in_turn, each result kept in `parts` under its key as it finishes, and those kept by an
    earlier run taken instead of computed (their weight advances `progress` at once)."""
    results = [parts.load(key) for key in keys]
    missing = [index for index, result in enumerate(results) if result is None]
    if progress and len(missing) < len(keys):
        progress(sum(weight for index, weight in enumerate(weights) if index not in missing))

    def keep(position: int, result) -> None:
        parts.save(keys[missing[position]], result)

    computed = in_turn(work, [arguments[index] for index in missing], [weights[index] for index in missing], jobs,
                       progress, on_result=keep)
    for index, result in zip(missing, computed):
        results[index] = result
    return results


def in_turn(work: Callable, arguments: Sequence[tuple], weights: Sequence[int], jobs: int,
            progress: Callable[[int], None] | None = None,
            on_result: Callable[[int, object], None] = lambda index, result: None) -> list:
    """`work(*arguments[i])` for every i, the results in that order, each handed to `on_result`
    as it ends.  With `jobs` > 1, that many processes side by side, the heaviest work (by
    `weights`) handed out first so that the last to finish is a light one, and `progress`
    advanced by each one's weight as it ends; alone, `work` advances `progress` itself, fit by fit."""
    if jobs <= 1 or len(arguments) <= 1:
        results = []
        for index, each in enumerate(arguments):
            results.append(work(*each, progress=progress))
            on_result(index, results[-1])
        return results
    results: list = [None] * len(arguments)
    heaviest_first = sorted(range(len(arguments)), key=lambda index: -weights[index])
    # spawned, not forked: a fork of this process, whose threads (Arrow's, the learners') may hold
    # a lock at that moment, waits on that lock for ever
    pool = ProcessPoolExecutor(max_workers=min(jobs, len(arguments)), mp_context=multiprocessing.get_context("spawn"),
                               initializer=die_with_parent)
    try:
        pending = {pool.submit(work, *arguments[index]): index for index in heaviest_first}
        for done in as_completed(pending):
            index = pending[done]
            results[index] = done.result()
            on_result(index, results[index])
            if progress:
                progress(weights[index])
    finally:
        pool.shutdown(cancel_futures=True)  # a failure stops the rest, not only what waited
    return results


def own_or_shipped(project: Project, own: pd.DataFrame, crossed: pd.DataFrame, miss_rate: float = 0.05) -> pd.DataFrame:
    """What `select` does with the shipped model, epoch by epoch: the project's own pooled model
    once its training tuples hold OWN_POSITIVES_NEEDED changes, under the policy `train` would
    have recorded then (own_policy_replay), the cross-project one before."""
    enough = own_model_epochs(project.data.plan, project.data.table["label"])
    pooled = own[own["scope"] == "pooled"]
    own_part = own_policy_replay(pooled, enough, project.data.table, project.config.labels.min_effect, miss_rate)
    crossed_part = crossed[~crossed["epoch"].isin(enough)]
    replay = pd.concat([own_part, crossed_part], ignore_index=True).assign(scope=OWN_OR_SHIPPED)
    # and, as select does, a skip becomes a run when the predicted instruction change reaches min_effect
    predicted = project.data.table.drop_duplicates(TUPLE_KEYS).set_index(TUPLE_KEYS)["predicted_effect_size"]
    sizes = predicted.reindex(pd.MultiIndex.from_frame(replay[TUPLE_KEYS])).to_numpy()
    replay["run"] = replay["run"].to_numpy(bool) | predicted_effect_reaches(np.nan_to_num(sizes), project.config.labels.min_effect)
    return replay


def own_policy_replay(pooled: pd.DataFrame, enough: set, table: pd.DataFrame, min_effect: float,
                      miss_rate: float = 0.05) -> pd.DataFrame:
    """The own model's test predictions of the `enough` epochs, each epoch decided under the
    policy `selector train` would have recorded at its boundary (selector.training.own_policies):
    judged on the predictions of the earlier epochs alone (those trained on enough changes, or
    every earlier one while there are none), each of which was trained on its own past, so no
    epoch's policy sees its own tuples or later ones.  The earlier epochs stand in for those of
    a backtest run at the boundary, which places its epochs from a shorter history."""
    rows = feature_rows(table)
    parts = []
    for _, predictions in pooled.groupby("model", sort=False):
        for epoch, tests in predictions[predictions["epoch"].isin(enough)].groupby("epoch"):
            earlier = predictions[predictions["epoch"] < epoch]
            judged = earlier[earlier["epoch"].isin(enough)]
            judged = judged if len(judged) else earlier
            # as train decides it: the evidence's policy, pruning only within its changes' bound
            policy = bounded_policy({"own": backtest_evidence(judged, rows, min_effect)}, "held out in turn", miss_rate)[0] \
                if len(judged) else "model"
            parts.append(tests.assign(run=decide_by_policy(policy, tests["score"].to_numpy(float),
                                                           tests["threshold"].to_numpy(float), features_of(rows, tests),
                                                           min_effect)))
    return pd.concat(parts, ignore_index=True) if parts else pooled.iloc[:0]


def cross_project_training(projects: Sequence[Project]) -> pd.DataFrame:
    """Every labelled tuple of `projects` (their features, label, hops), the project named, the
    projects in the order of their names whatever order they were given in: XGBoost's fit on the
    corpus depends on the order of its rows (23 corpus packs given in reverse scored Janet, held
    out, differently by up to 0.26), and the same projects must give the same model."""
    tables = [p.data.table[p.data.table["label"].notna()].assign(project=p.name) for p in in_training_order(projects)]
    return pd.concat(tables, ignore_index=True)


def in_training_order(projects: Sequence[Project]) -> list[Project]:
    """The order cross-project training concatenates projects in: by name."""
    return sorted(projects, key=lambda project: project.name)


def fit_cross_project(training: pd.DataFrame, model: str, target_hit_rate: float, seed: int,
                      threshold_by_project: bool = True, operating_point: str = "quantile",
                      paired: PairedFits | None = None) -> tuple[FittedModel, pd.DataFrame]:
    """`model` fitted on `training` (cross_project_training), the benchmark's identity not an
    input; returns it with the inputs it was fitted on.  `paired`: the fits of the other
    projects held out in turn, shared between hold-outs (models.paired_fits)."""
    X = design_matrix(training, FEATURE_NAMES, CROSS_PROJECT, [])
    fitted = train_one(model_spec(model), X, training["label"].to_numpy(bool), training["hops"].to_numpy(), CROSS_PROJECT,
                       None, target_hit_rate, seed, groups=training["project"].to_numpy() if threshold_by_project else None,
                       operating_point=operating_point, effect=measured_effects(training), paired=paired)
    return fitted, X


def cross_project_predictions(others: Sequence[Project], held_out: Project, models: Sequence[str], target_hit_rate: float,
                              seed: int, threshold_by_project: bool = True, operating_point: str = "quantile",
                              fits: HeldOutFits | None = None) -> pd.DataFrame:
    """Models trained on `others` alone, scoring `held_out`'s Method 4 test tuples (epoch by epoch);
    `fits`: one model's fits shared with the other hold-outs and the other steps (held_out_fits),
    which score every labelled tuple of the project: the test tuples' scores are taken from them."""
    tests = method4_test_tuples(held_out)
    if fits is not None:
        if len(models) != 1 or fits.settings != fit_settings(models[0], target_hit_rate, seed, threshold_by_project,
                                                               operating_point):
            raise ValueError(f"fits of {fits.settings} cannot stand for {list(models)}")
        scores, threshold = _held_out_one(others, held_out, models[0], target_hit_rate, seed, threshold_by_project,
                                          operating_point, fits)
        scores = scores[method4_test_rows(held_out)]
        return prediction_frame(models[0], CROSS_PROJECT, tests["epoch"].to_numpy(), tests, scores, threshold).assign(
            project=held_out.name)
    training = cross_project_training(others)
    X_test = design_matrix(tests, FEATURE_NAMES, CROSS_PROJECT, [])
    rows = []
    for name in models:
        fitted, _ = fit_cross_project(training, name, target_hit_rate, seed, threshold_by_project, operating_point)
        scores = positive_scores(fitted.estimator, X_test)
        rows.append(prediction_frame(name, CROSS_PROJECT, tests["epoch"].to_numpy(), tests, scores, fitted.threshold))
    return pd.concat(rows, ignore_index=True).assign(project=held_out.name)


# The learners the shipped model is chosen among: train's, less the RBF SVM, whose fit grows with
# the square of the tuples (held out in turn, each fit choosing its operating point on the other
# projects in turn too, it is hundreds of fits of 20,000 tuples and more: hours on two cores).
SHIPPED_CANDIDATES = tuple(name for name in CANDIDATES if name != "svm")


def train_cross_project_bundle(projects: Sequence[Project], directory: Path, model: str = AUTO,
                               target_hit_rate: float = 0.95, seed: int = 0, operating_point: str = "quantile",
                               threshold_by_project: bool = True, candidates: Sequence[str] = SHIPPED_CANDIDATES,
                               on_candidate: Callable[[str], None] = lambda name: None, jobs: int = 1,
                               fits: HeldOutFits | None = None, fits_kept: Parts | None = None):
    """The shipped-style model: `model` trained on every labelled tuple of `projects`, the
    benchmark's identity not an input, its operating point chosen on each project's scores by
    a model trained on the others (what carries over to a project it has never seen), then
    set by conformal risk control over the projects held out in turn (models.risk_control) to the
    highest threshold that keeps a miss rate of 1 - `target_hit_rate` on a project never seen:
    where none keeps it, the rule decides (the
    bound is recorded in the settings' `risk_control` whatever the policy); saved as a bundle
    (ONNX and skops, manifest, seal) at `directory`.  `model` AUTO: the learner the projects held
    out in turn choose among `candidates` (choose_cross_project_model, `jobs` side by side),
    recorded with why; a named one is judged with `jobs` projects held out side by side where its
    fits are kept in a folder.  `fits`: the fits shared with an enclosing hold-out (a held-out bundle of
    `evaluate --shipped --held-out`: held_out_fits over the whole corpus, kept); `fits_kept`: a
    folder the fits are kept in (held_out_fits)."""
    from perf_selector.models.bundle import save_bundle

    training = cross_project_training(projects)
    choice = None
    if len(projects) < 2:  # none to hold out, none to choose by
        model = CANDIDATES[0] if model == AUTO else model
        # nothing judged it, so nothing certifies its pruning: the rule decides, as wherever the bound is not kept
        evidence, (policy, reason), bound = {}, (STEPPING_ASIDE_RULE, "trained on one project: no project held out to "
                                                 "judge it, so no miss rate is certified and the rule decides"), None
    elif model == AUTO:
        model, choice, judged = choose_cross_project_model(projects, candidates, target_hit_rate, seed,
                                                           threshold_by_project, operating_point, on_candidate, jobs,
                                                           fits_kept)
        evidence, (policy, reason), bound = judged[model]
    else:
        evidence, (policy, reason), bound = _judged_candidate(projects, model, target_hit_rate, seed,
                                                              threshold_by_project, operating_point, fits, fits_kept, jobs)
    if fits is not None and fits.settings != fit_settings(model, target_hit_rate, seed, threshold_by_project, operating_point):
        fits = None  # another learner's (the choice fell elsewhere)
    fitted, X = fit_cross_project(training, model, target_hit_rate, seed, threshold_by_project, operating_point,
                                  fits.inner if fits is not None else None)
    trained_on = {"projects": [p.name for p in projects], "tuples": len(training), "positives": fitted.training_positives,
                  "commits": int(sum(len(p.data.history.built()) for p in projects)), "benchmarks": []}
    settings = {"model": model, "scope": CROSS_PROJECT, "target_hit_rate": target_hit_rate, "seed": seed,
                "operating_point": operating_point, "threshold_by_project": threshold_by_project,
                "evidence": evidence}
    if choice is not None:
        settings["chosen"] = choice
    if bound is not None:
        # The bound is recorded whatever the evidence chose: where the model already stepped aside,
        # it is the bound of pruning within the rule, the candidate a user would ask about.
        settings["risk_control"] = {"policy": _bounded(policy), **bound.as_dict()}
        if policy != STEPPING_ASIDE_RULE:
            if bound.controlled:
                # The bound's threshold is the one certified for a project never seen; the learner's
                # own operating point (its training projects' changes, each at the target hit rate)
                # is lower on a corpus (4e-5 against 1e-3 on the 24 packs) and would give back the
                # pruning the bound allows.
                fitted.threshold = bound.threshold
            else:
                settings["risk_control"]["decided"] = True  # the bound, not the evidence, made it the rule
                policy, reason = STEPPING_ASIDE_RULE, _bound_reason(bound, reason)
    settings |= {"policy": policy, "policy_reason": reason}
    return save_bundle(directory, [fitted], list(FEATURE_NAMES), trained_on, settings, training_inputs={None: X})


def _bounded(policy: str) -> str:
    """The policy whose pruning the bound is of: within the rule where the rule decides anyway."""
    return WITHIN_RULE if policy == STEPPING_ASIDE_RULE else policy


def _bound_reason(bound: RiskBound, reason: str) -> str:
    return (f"conformal risk control over the {bound.projects} projects held out in turn cannot keep a miss rate "
            f"of {bound.miss_rate:g} on a project never seen (the least {bound.projects} projects certify is "
            f"{bound.least_certifiable:.3f}), so the model may not prune: {reason}")


def _judged_candidate(projects: Sequence[Project], name: str, target_hit_rate: float, seed: int,
                      threshold_by_project: bool, operating_point: str, fits: HeldOutFits | None = None,
                      fits_kept: Parts | None = None, jobs: int = 1, progress=None) -> tuple:
    """One learner held out in turn: (its evidence, (the policy it earns, why), the conformal bound of
    that policy's pruning), as the bundle records it and choose_cross_project_model weighs it."""
    scored = held_out_scores(projects, name, target_hit_rate, seed, threshold_by_project, operating_point,
                             fits=fits, fits_kept=fits_kept, jobs=jobs)
    evidence = held_out_evidence(scored)
    policy, reason = policy_from(evidence)
    bound = policy_risk_bound(scored, _bounded(policy), 1.0 - target_hit_rate)
    if bound.controlled and policy != STEPPING_ASIDE_RULE:
        # The bundle decides at the bound's threshold (train_cross_project_bundle): judged there too,
        # each project held out deciding as it would, not at the lower operating point of each fit.
        # Only the policy the bound is of may prune there: the other is left out of the judging.
        at_bound = {project: dataclasses.replace(s, threshold=bound.threshold) for project, s in scored.items()}
        other = "model" if policy == WITHIN_RULE else WITHIN_RULE
        evidence = {project: {key: figures for key, figures in e.items() if key != other}
                    for project, e in held_out_evidence(at_bound).items()}
        policy, reason = policy_from(evidence)
    return evidence, (policy, reason), bound


def choose_cross_project_model(projects: Sequence[Project], candidates: Sequence[str], target_hit_rate: float = 0.95,
                               seed: int = 0, threshold_by_project: bool = True, operating_point: str = "quantile",
                               on_candidate: Callable[[str], None] = lambda name: None,
                               jobs: int = 1, fits_kept: Parts | None = None) -> tuple[str, dict, dict]:
    """The learner the shipped bundle carries, chosen by the projects held out in turn: each of
    `candidates` trained as shipped on the others and deciding each held-out project with
    select's own code (held_out_scores, policy_from), its pruning bounded by conformal risk
    control; of those whose policy prunes within the bound, the one that dismissed the most
    unchanged pairs (pooled over the projects; the earlier candidate on a tie).  Where none
    earns pruning, the rule decides whichever is shipped: the one whose pruning came closest
    (the least certifiable miss rate being the corpus's, the highest pooled dismissal within
    the rule among those that kept the rule's hit rate), for when the corpus grows.  Returns
    (model, the choice as the bundle records it, per candidate (evidence, (policy, reason), bound)).
    `jobs`: that many processes side by side, each judging a candidate, or, where the fits are kept
    in a folder (`fits_kept`), each holding a project out (a random forest's candidate alone would
    otherwise keep one process busy long after the others ended)."""
    arguments = [(projects, name, target_hit_rate, seed, threshold_by_project, operating_point, None, fits_kept)
                 for name in candidates]
    if fits_kept is not None and fits_kept.directory is not None and jobs > 1:
        results = []
        for name, each in zip(candidates, arguments):
            results.append(_judged_candidate(*each, jobs=jobs))
            on_candidate(name)
    else:
        results = in_turn(_judged_candidate, arguments, [1] * len(arguments), jobs,
                          on_result=lambda index, result: on_candidate(candidates[index]))
    judged, figures = dict(zip(candidates, results)), {}
    for name, (evidence, (policy, reason), bound) in judged.items():
        shown = _bounded(policy)
        figures[name] = {"policy": policy if policy == STEPPING_ASIDE_RULE or bound.controlled else STEPPING_ASIDE_RULE,
                         "evidence_policy": policy, "hit_rate": pooled_rate(evidence, shown, "hit_rate"),
                         "dismiss_rate": pooled_rate(evidence, shown, "dismiss_rate"),
                         "rule_hit_rate": pooled_rate(evidence, "rule", "hit_rate"),
                         "rule_dismiss_rate": pooled_rate(evidence, "rule", "dismiss_rate"),
                         "bound_controlled": bound.controlled, "least_certifiable": bound.least_certifiable,
                         "projects_with_changes": bound.projects}
    order = {name: position for position, name in enumerate(candidates)}
    pruning = [name for name in candidates if figures[name]["policy"] != STEPPING_ASIDE_RULE]
    if pruning:
        best = max(pruning, key=lambda name: (figures[name]["dismiss_rate"], -order[name]))
        f = figures[best]
        reason = (f"of {len(candidates)} learners, each held out in turn on {len(projects)} projects, {best} "
                  f"({'within the rule' if f['policy'] == WITHIN_RULE else 'alone'}) dismissed the most "
                  f"({f['dismiss_rate']:.2f} against the rule's {f['rule_dismiss_rate']:.2f}) at a hit rate of "
                  f"{f['hit_rate']:.2f}, within the conformal bound")
    else:
        keeping = [name for name in candidates if not figures[name]["hit_rate"] < figures[name]["rule_hit_rate"]]
        best = max(keeping or list(candidates), key=lambda name: (figures[name]["evidence_policy"] != STEPPING_ASIDE_RULE,
                                                                   figures[name]["dismiss_rate"], -order[name]))
        f = figures[best]
        reason = (f"none of {len(candidates)} learners, each held out in turn on {len(projects)} projects, earned "
                  f"pruning within the conformal bound (the least the {f['projects_with_changes']} projects with changes "
                  f"certify is {f['least_certifiable']:.3f}): the "
                  f"rule decides; {best} is shipped, having kept the rule's hit rate and dismissed "
                  f"{figures[best]['dismiss_rate']:.2f} within the rule against its {figures[best]['rule_dismiss_rate']:.2f}")
    return best, {"chosen": best, "by": "projects held out in turn", "reason": reason, "candidates": figures}, judged


@dataclass(frozen=True)
class HeldOutScores:
    """One project's labelled tuples scored by a model trained on the other projects."""

    scores: np.ndarray
    threshold: float
    features: np.ndarray  # FEATURE_NAMES order
    labels: np.ndarray
    min_effect: float


def held_out_scores(projects: Sequence[Project], model: str, target_hit_rate: float = 0.95, seed: int = 0,
                    threshold_by_project: bool = True, operating_point: str = "quantile",
                    shared_fits: bool = True, fits: HeldOutFits | None = None,
                    fits_kept: Parts | None = None, jobs: int = 1) -> dict[str, HeldOutScores]:
    """Per project, held out in turn: `model` trained as shipped on the other projects, scoring
    every labelled tuple of the project, with its operating point.  `shared_fits`: each fit on all
    projects but two serves both hold-outs (models.paired_fits: the same scores, half the fits).
    `fits`: the fits shared with an enclosing hold-out (held_out_fits, over a corpus that holds
    `projects`), else made here, kept in `fits_kept` if given.  `jobs`: projects held out side by
    side in that many processes, where the fits are kept in a folder (the processes share them there;
    two side by side may make the same fit, never a different one)."""
    settings = fit_settings(model, target_hit_rate, seed, threshold_by_project, operating_point)
    if fits is not None and fits.settings != settings:
        raise ValueError(f"fits of {fits.settings} cannot stand for {settings}")
    if fits is None and shared_fits and threshold_by_project:  # no projects held out inside: nothing to share
        fits = held_out_fits(projects, model, target_hit_rate, seed, threshold_by_project, operating_point, fits_kept)
    if fits is not None:
        side_by_side = jobs if fits.shelved else 1  # processes share the fits through their folder alone
        given = [_portable(p) for p in projects] if side_by_side > 1 else projects
        results = in_turn(_held_out_one, [([p for p in given if p is not each], each, model, target_hit_rate, seed,
                                           threshold_by_project, operating_point, fits) for each in given],
                          [1] * len(given), side_by_side)
    else:
        results = [_fitted_held_out(projects, held_out, model, target_hit_rate, seed, threshold_by_project, operating_point)
                   for held_out in projects]
    scored = {}
    for held_out, (scores, threshold) in zip(projects, results):
        tests = held_out.data.table[held_out.data.table["label"].notna()]
        scored[held_out.name] = HeldOutScores(scores, threshold, tests[FEATURE_NAMES].to_numpy(float),
                                              tests["label"].to_numpy(bool), held_out.config.labels.min_effect)
    return scored


def _fitted_held_out(projects: Sequence[Project], held_out: Project, model: str, target_hit_rate: float, seed: int,
                     threshold_by_project: bool, operating_point: str) -> tuple[np.ndarray, float]:
    """`held_out`'s labelled tuples scored by `model` fitted on the other `projects` with every fit made, and its threshold."""
    others = [p for p in projects if p is not held_out]
    fitted, _ = fit_cross_project(cross_project_training(others), model, target_hit_rate, seed, threshold_by_project,
                                  operating_point)
    tests = held_out.data.table[held_out.data.table["label"].notna()]
    return positive_scores(fitted.estimator, design_matrix(tests, FEATURE_NAMES, CROSS_PROJECT, [])), fitted.threshold


def _held_out_one(others: Sequence[Project], held_out: Project, model: str, target_hit_rate: float, seed: int,
                  threshold_by_project: bool, operating_point: str, fits: HeldOutFits,
                  progress=None) -> tuple[np.ndarray, float]:
    """`held_out`'s labelled tuples scored by `model` trained as shipped on `others`, and its threshold:
    kept by `fits` or fitted now (in this process or one of its own)."""
    return fits.held_out(frozenset(p.name for p in others), held_out.name, lambda: fit_cross_project(
        cross_project_training(others), model, target_hit_rate, seed, threshold_by_project, operating_point, fits.inner)[0])


def held_out_evidence(scored: dict[str, HeldOutScores]) -> dict[str, dict]:
    """Per project held out (held_out_scores): the model and the executed-changed rule, each
    deciding every labelled tuple of the project as `select` does (the build configuration, the
    predicted instruction change and the hazards around them): their hit and dismiss rates.
    Whether the model earns its keep is judged on these."""
    return {name: policy_evidence(s.scores, np.full(len(s.scores), s.threshold), s.features, s.labels, s.min_effect)
            for name, s in scored.items()}


def policy_risk_bound(scored: dict[str, HeldOutScores], policy: str, miss_rate: float) -> RiskBound:
    """The conformal risk control bound (models.risk_control) of the model's threshold under
    `policy`, each project's scores as they decide there: 1 where `select` runs the tuple
    whatever its score, 0 where the policy cannot run it."""
    held_out = {}
    for name, s in scored.items():
        forced, excluded = unscored_decisions(s, policy)
        held_out[name] = HeldOut(deciding_scores(s.scores, forced, excluded & ~forced), s.labels)
    return risk_controlled_threshold(held_out, miss_rate)


def unscored_decisions(held_out: HeldOutScores, policy: str) -> tuple[np.ndarray, np.ndarray]:
    """What `policy` decides of the project's tuples whatever the model scores: (the tuples `select`
    runs anyway, those it cannot run: outside the executed-changed rule, for a policy within it)."""
    never = np.full(len(held_out.scores), -np.inf)  # a score that runs nothing: what runs anyway
    forced = decide_by_policy(policy, never, np.zeros(len(never)), held_out.features, held_out.min_effect)
    excluded = (executed_rule_scores(held_out.features, held_out.min_effect) == 0) if policy == WITHIN_RULE \
        else np.zeros(len(never), bool)
    return forced, excluded


def method4_test_tuples(project: Project) -> pd.DataFrame:
    """The labelled test tuples of the project's Method 4 splits, each with its epoch."""
    table, labelled = project.data.table, project.data.table["label"].notna().to_numpy()
    parts = []
    for split in project.data.plan.splits:
        rows = split.test[labelled[split.test]]
        parts.append(table.iloc[rows].assign(epoch=split.epoch))
    return pd.concat(parts, ignore_index=True) if parts else table.iloc[:0].assign(epoch=0)


def method4_test_rows(project: Project) -> np.ndarray:
    """Where method4_test_tuples' rows stand among the project's labelled tuples (held_out_fits' scores are of those)."""
    labelled = project.data.table["label"].notna().to_numpy()
    among_labelled = np.cumsum(labelled) - 1
    rows = [among_labelled[split.test[labelled[split.test]]] for split in project.data.plan.splits]
    return np.concatenate(rows).astype(int) if rows else np.zeros(0, int)


def project_table(predictions: pd.DataFrame) -> pd.DataFrame:
    """Per project (and all projects pooled), model and scope: tuples, positives (the oracle's
    runs), AUROC of all benchmarks pooled, mean AUROC per benchmark, realized hit and dismiss
    rates, runs and runs for each change (a multiple of the oracle's), time saved."""
    rows = []
    groups = [*predictions.groupby("project", sort=False), ("(all)", predictions)]
    for project, part in groups:
        for (model, scope), group in part.groupby(["model", "scope"], sort=False):
            scores = score_predictions(group).as_dict()
            per_benchmark = [score_predictions(b).auroc for _, b in group.groupby("benchmark")]
            per_benchmark = [a for a in per_benchmark if a == a]
            rows.append({"project": project, "model": model, "scope": scope, "tuples": scores["tuples"],
                         "positives": scores["positives"], "auroc": scores["auroc"],
                         "mean_benchmark_auroc": float(np.mean(per_benchmark)) if per_benchmark else float("nan"),
                         "hit_rate": scores["hit_rate"], "dismiss_rate": scores["dismiss_rate"],
                         "runs": scores["runs"], "runs_per_change": scores["runs_per_change"],
                         "time_saved": scores["time_saved"], "missed": scores["missed"]})
    return pd.DataFrame(rows)


def save_evaluation(directory: Path, evaluation: ProjectEvaluation) -> dict:
    """Per project a backtest folder (predictions, importances, results.json: what `selector report`
    draws), and evaluation.json with the per-project table; returns that document."""
    directory.mkdir(parents=True, exist_ok=True)
    for project in evaluation.projects:
        own = evaluation.predictions[evaluation.predictions["project"] == project.name].drop(columns=["project"])
        result = BacktestResult(project.data.plan, own.reset_index(drop=True), evaluation.importances[project.name])
        save_backtest(directory / project.name, result, project.data, {**evaluation.settings, "project": project.name,
                                                                        "benchmarks": project.data.benchmarks})
    evaluation.predictions.to_parquet(directory / "predictions.parquet", index=False)
    table = project_table(evaluation.predictions)
    document = {
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "settings": evaluation.settings,
        "projects": [{"name": p.name, "store": str(p.store.location), "benchmarks": p.data.benchmarks,
                      "commits": len(p.data.history.built()), "splits": len(p.data.plan.splits)} for p in evaluation.projects],
        "notes": sorted(set(evaluation.notes)),
        "results": records(table),
        "epochs": records(epoch_table(evaluation.predictions, evaluation.settings["target_hit_rate"])),
    }
    (directory / "evaluation.json").write_text(json.dumps(document, indent=2))
    return document


def epoch_table(predictions: pd.DataFrame, target_hit_rate: float) -> pd.DataFrame:
    """Realized against target hit rate, epoch by epoch: per project, model and scope, how many
    Method 4 epochs held a change, in how many the realized hit rate reached the target, and the
    lowest and median realized hit rate over those epochs."""
    changed = predictions[predictions["label"].astype(bool)]
    rows = []
    for (project, model, scope), part in changed.groupby(["project", "model", "scope"], sort=False):
        hits = part.groupby("epoch")["run"].mean()
        rows.append({"project": project, "model": model, "scope": scope, "epochs_with_changes": len(hits),
                     "epochs_at_target": int((hits >= target_hit_rate).sum()), "lowest_epoch_hit_rate": float(hits.min()),
                     "median_epoch_hit_rate": float(hits.median())})
    return pd.DataFrame(rows, columns=["project", "model", "scope", "epochs_with_changes", "epochs_at_target",
                                       "lowest_epoch_hit_rate", "median_epoch_hit_rate"])


BEGIN, END = "<!-- selector evaluate: begin -->", "<!-- selector evaluate: end -->"


def markdown(document: dict) -> str:
    """The per-project tables of an evaluation.json document, as Markdown."""
    table = pd.DataFrame(document["results"])
    settings = document["settings"]
    protocol = settings.get("protocol", {})
    lines = [
        f"Generated by `selector evaluate` on {document['created'][:10]}: Method 4 (k = {protocol.get('k')}, "
        f"first epoch {protocol.get('first') or 'a fifth of the history'}), operating point for a target hit rate of "
        f"{settings['target_hit_rate']} chosen on training data only; seed {settings['seed']}.",
        "",
        "| project | store | benchmarks | built commits | epochs |",
        "|---|---|---|---|---|",
        *(f"| {p['name']} | `{p['store']}` | {', '.join(p['benchmarks'])} | {p['commits']} | {p['splits']} |"
          for p in document["projects"]),
        "",
    ]
    scopes = [s for s in ("pooled", "per-benchmark", CROSS_PROJECT, OWN_OR_SHIPPED) if s in set(table["scope"])]
    titles = {"pooled": "Own history, one pooled model (benchmark as a feature)",
              "per-benchmark": "Own history, one model per benchmark",
              CROSS_PROJECT: "Leave one project out: trained on the other projects only, benchmark identity not an input",
              OWN_OR_SHIPPED: "What select does: the cross-project model until the project's own pooled model has "
                              f"learnt from {OWN_POSITIVES_NEEDED} changes, then its own under the policy its earlier "
                              "epochs earned (the model, the model within the executed-changed rule, or the rule); "
                              "and a run wherever the "
                              "predicted instruction change reaches min_effect"}
    columns = ["tuples", "positives", "auroc", "mean_benchmark_auroc", "hit_rate", "dismiss_rate", "runs_per_change",
               "time_saved", "missed"]
    lines += ["`positives` are the changed tuples: the oracle runs those alone. `runs_per_change` is a policy's runs "
              "as a multiple of the oracle's (1 is the oracle; lower is better at the same hit rate).", ""]
    for scope in scopes:
        part = table[table["scope"] == scope]
        lines += [f"### {titles[scope]}", "", "| project | model | " + " | ".join(columns) + " |",
                  "|---|---|" + "---|" * len(columns)]
        for row in part.itertuples(index=False):
            values = [_markdown_number(getattr(row, c)) for c in columns]
            lines.append(f"| {row.project} | {row.model} | " + " | ".join(values) + " |")
        lines.append("")
    if document.get("epochs"):
        lines += _epoch_lines(pd.DataFrame(document["epochs"]), settings["target_hit_rate"])
    lines += _goal_lines(table)
    if document.get("notes"):
        lines += ["", "Notes:", *(f"- {note}" for note in document["notes"])]
    return "\n".join(lines) + "\n"


def _epoch_lines(epochs: pd.DataFrame, target: float) -> list[str]:
    """Realized against target hit rate per epoch, for what crosses projects and what select does."""
    part = epochs[epochs["scope"].isin([CROSS_PROJECT, OWN_OR_SHIPPED])
                  & ~epochs["model"].isin(["always-run", "history-only"])]
    if part.empty:
        return []
    lines = [f"### Realized against target hit rate ({target}), epoch by epoch", "",
             "Over the Method 4 epochs whose test tuples hold a change: in how many the realized hit rate reached the "
             "target, and the lowest and median realized hit rate.", "",
             "| project | model | scope | epochs with changes | at target | lowest | median |", "|---|---|---|---|---|---|---|"]
    for row in part.itertuples(index=False):
        lines.append(f"| {row.project} | {row.model} | {row.scope} | {row.epochs_with_changes} | {row.epochs_at_target} | "
                     f"{_markdown_number(row.lowest_epoch_hit_rate)} | {_markdown_number(row.median_epoch_hit_rate)} |")
    return [*lines, ""]


def _goal_lines(table: pd.DataFrame) -> list[str]:
    """Per project: the best learned model at a realized hit rate >= 0.95, against reached-changed."""
    lines = ["### Against the goal (realized hit rate >= 0.95 with dismiss rate >= 0.80, mean AUROC per benchmark >= 0.90)", "",
             "| project | best at hit >= 0.95 (scope) | its dismiss rate | its mean AUROC per benchmark | "
             "reached-changed dismiss | goal met |",
             "|---|---|---|---|---|---|"]
    learned = table[~table["model"].isin(["always-run", "reached-changed", "executed-changed", "history-only", "predicted-effect"])]
    for project, part in learned.groupby("project", sort=False):
        safe = part[part["hit_rate"] >= 0.95]
        baseline = table[(table["project"] == project) & (table["model"] == "reached-changed") & (table["scope"] == "pooled")]
        reached = _markdown_number(baseline["dismiss_rate"].iloc[0]) if len(baseline) else "-"
        if safe.empty:
            lines.append(f"| {project} | none keeps its hit rate | - | - | {reached} | no |")
            continue
        best = safe.sort_values("dismiss_rate", ascending=False).iloc[0]
        met = best["dismiss_rate"] >= 0.80 and best["mean_benchmark_auroc"] >= 0.90
        lines.append(f"| {project} | {best['model']} ({best['scope']}) | {_markdown_number(best['dismiss_rate'])} | "
                     f"{_markdown_number(best['mean_benchmark_auroc'])} | {reached} | {'yes' if met else 'no'} |")
    return lines


def _markdown_number(value) -> str:
    if isinstance(value, (int, np.integer)):
        return str(value)
    return "-" if value != value else f"{value:.3f}"


def write_markdown(path: Path, document: dict) -> None:
    """The tables into `path`, between their markers (selector/markdown_section.py)."""
    from perf_selector.selector.markdown_section import write_section

    write_section(path, BEGIN, END, markdown(document), "Every project, and each left out in turn")
