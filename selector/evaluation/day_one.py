"""`selector evaluate --shipped`: what a team would have got on day one.

The package's shipped cross-project bundle (or another bundle given), with no training on
the project at all, is applied by `select`'s own decision code
(:func:`models.decision.decide_rows`: the build-configuration rule, the model at its
operating point, the predicted-effect overrule) to every labelled closest-ancestor pair of
a store: the decisions `select` would have made had the history been pushed commit by
commit with nothing collected before.  Beside it, the safe rules that need no learning:
executed-changed (run when a changed basic block executed in c_o's run) and
reached-changed (run when anything the benchmark reached changed).

Any store can be given, a project outside the corpus included: nothing is fitted on it.
(`selector evaluate`'s leave-one-project-out, by contrast, trains on the other stores
given, not on the shipped bundle's corpus.)
"""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path
from typing import Sequence

import numpy as np
import pandas as pd

from perf_selector.features.catalogue import FEATURE_NAMES
from perf_selector.models.backtest import prediction_frame
from perf_selector.models.design import design_matrix
from perf_selector.models.evaluation import score_predictions
from perf_selector.models.names import STEPPING_ASIDE_RULE
from perf_selector.models.registry import model_spec, positive_scores
from perf_selector.models.decision import decide_rows
from perf_selector.selector.markdown_section import number, write_section
from perf_selector.selector.evaluation.evaluation_parts import Parts
from perf_selector.selector.evaluation.project_evaluation import Project
from perf_selector.selector.tables import records

DAY_ONE = "day-one"
SHIPPED = "shipped"
RULES = ("executed-changed", "reached-changed")
# the features a missed change is described by
MISSED_COLUMNS = ["executed_changed_share", "predicted_effect", "changed_inclusive_share", "top_changed_rank_by_instructions",
                  "changed_writes_hot_data", "executed_constant_change", "changed_cpu_dispatch"]
DESCRIBED = [*MISSED_COLUMNS, "build_config_changed"]


def day_one_predictions(project: Project, bundle, model: str = SHIPPED) -> pd.DataFrame:
    """The bundle's decisions (as `select` makes them) and the rules' on every labelled pair of
    the project: PREDICTION_COLUMNS plus project, why (what decided) and effect (measured)."""
    table = project.data.table[project.data.table["label"].notna()].reset_index(drop=True)
    decisions = decide_rows(bundle, table[FEATURE_NAMES].to_numpy(float), table["benchmark"].tolist(),
                            project.config.labels.min_effect)
    scores = np.where(np.isnan(decisions.probability), 1.0, decisions.probability)  # no model: run, as select does
    shipped = prediction_frame(model, DAY_ONE, 0, table, scores, decisions.threshold).assign(
        run=decisions.run, why=decisions.why)
    frames = [shipped, *(_rule_predictions(rule, table) for rule in RULES)]
    effect = table["effect"].to_numpy(float) if "effect" in table else np.full(len(table), np.nan)
    return pd.concat([f.assign(effect=effect, **{c: table[c].to_numpy(float) for c in DESCRIBED})
                      for f in frames], ignore_index=True).assign(project=project.name)


def _rule_predictions(rule: str, table: pd.DataFrame) -> pd.DataFrame:
    """A rule that needs no learning, applied as `backtest` applies it (fitting only checks its columns)."""
    spec = model_spec(rule)
    X = design_matrix(table, FEATURE_NAMES, "cross-project", [])
    estimator = spec.build(0).fit(X, table["label"].to_numpy(bool))
    scores = positive_scores(estimator, X)
    return prediction_frame(rule, DAY_ONE, 0, table, scores, spec.rule_threshold).assign(
        why=np.where(scores >= spec.rule_threshold, "rule", "skip"))


def held_out_bundle(projects: Sequence[Project], held_out: Project, like, directory: Path, fits=None, jobs: int = 1):
    """A bundle trained as `like` (the shipped one) was, on every project but `held_out`: what a
    team whose project is not in the corpus would have got on day one.  `fits`: shared by the
    bundles of the projects held out in turn (held_out_fits_like); `jobs`: the others held out side by side."""
    from perf_selector.models.bundle import load_bundle
    from perf_selector.selector.evaluation.project_evaluation import train_cross_project_bundle

    train_cross_project_bundle([p for p in projects if p is not held_out], directory, **_trained_as(like), fits=fits,
                               jobs=jobs)
    return load_bundle(directory, portable=True)


def held_out_fits_like(projects: Sequence[Project], like, kept: Parts | None = None):
    """The fits the bundles trained as `like` without each of `projects` in turn share: each one's
    choice of policy holds the others out in turn, and its operating point the others again, so a fit
    on all projects but three serves six hold-outs (selector.evaluation.held_out_fits); kept in `kept`."""
    from perf_selector.selector.evaluation.project_evaluation import held_out_fits

    settings = _trained_as(like)
    return held_out_fits(projects, settings["model"], settings["target_hit_rate"], settings["seed"],
                         settings["threshold_by_project"], settings["operating_point"], kept, keep=True)


def _trained_as(like) -> dict:
    settings = like.settings
    return {"model": settings.get("model", "perphecy"), "target_hit_rate": settings.get("target_hit_rate", 0.95),
            "seed": settings.get("seed", 0), "operating_point": settings.get("operating_point", "quantile"),
            "threshold_by_project": settings.get("threshold_by_project", True)}


def day_one_table(predictions: pd.DataFrame) -> pd.DataFrame:
    """Per project (and all pooled) and model: tuples, changes (the oracle's runs), hit and dismiss
    rates, runs and runs for each change (a multiple of the oracle's), time saved,
    missed changes, and the share of pairs whose build configuration changed (select, and both
    rules, run those whatever the model says)."""
    rows = []
    for project, part in [*predictions.groupby("project", sort=False), ("(all)", predictions)]:
        for model, group in part.groupby("model", sort=False):
            scores = score_predictions(group)
            rows.append({"project": project, "model": model, "tuples": scores.tuples, "positives": scores.positives,
                         "hit_rate": scores.hit_rate, "dismiss_rate": scores.dismiss_rate, "runs": scores.runs,
                         "runs_per_change": scores.runs_per_change, "time_saved": scores.time_saved,
                         "missed": scores.missed, "forced_by_build": float((group["build_config_changed"] > 0).mean())})
    return pd.DataFrame(rows)


def missed_changes(predictions: pd.DataFrame, model: str = SHIPPED) -> pd.DataFrame:
    """The changes `model` would have skipped: the pair, the measured effect and what the model saw."""
    missed = predictions[(predictions["model"] == model) & predictions["label"].astype(bool) & ~predictions["run"].astype(bool)]
    return missed[["project", "new", "old", "benchmark", "effect", "score", "threshold", *MISSED_COLUMNS]].reset_index(drop=True)


def day_one_document(predictions: pd.DataFrame, bundle, projects: Sequence[Project], held_out: bool = False,
                     deciding: dict | None = None) -> dict:
    """The day-one figures, and the policy each project's deciding bundle (`deciding`, by project
    name; else `bundle` for all) earned: where it steps aside, the rule decided, and the table says why."""
    deciding = deciding or {}
    return {
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "held_out": held_out,
        "bundle": {"directory": str(bundle.directory), "created": bundle.created, "trained_on": bundle.trained_on,
                   "settings": bundle.settings},
        "projects": [{"name": p.name, "benchmarks": p.data.benchmarks, "min_effect": p.config.labels.min_effect}
                     for p in projects],
        "results": records(day_one_table(predictions)),
        "missed": records(missed_changes(predictions)),
        "policies": [{"project": p.name, "policy": deciding.get(p.name, bundle).settings.get("policy", "model"),
                      "reason": deciding.get(p.name, bundle).settings.get("policy_reason", "")} for p in projects],
    }


BEGIN, END = "<!-- selector evaluate --shipped: begin -->", "<!-- selector evaluate --shipped: end -->"


def markdown(document: dict) -> str:
    """The day-one table and the missed changes of a day_one_document, as Markdown."""
    trained_on = document["bundle"]["trained_on"]
    table = pd.DataFrame(document["results"])
    which = (f"the shipped model ({document['bundle']['settings'].get('model')}) trained as on "
             f"{document['bundle']['created'][:10]} but on the other projects only (`--held-out`)" if document.get("held_out")
             else f"the bundle of {document['bundle']['created'][:10]} (trained on "
                  f"{', '.join(trained_on.get('projects') or [])})")
    lines = [
        f"Generated by `selector evaluate --shipped` on {document['created'][:10]}: {which}, untrained on the project, "
        "deciding every labelled closest-ancestor pair with `select`'s own decision code; the rules beside it need no "
        "training. The oracle runs the changes alone; `runs` is what a policy runs, and `runs per change` that as a "
        "multiple of the oracle's (1 is the oracle). The last column is the share of pairs whose build configuration "
        "changed: every policy runs them.",
        "",
        "| project | policy | pairs | changes | hit | dismiss | runs | runs per change | time saved | missed | "
        "build configuration changed |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row in table.itertuples(index=False):
        lines.append(f"| {row.project} | {row.model} | {row.tuples} | {row.positives} | {number(row.hit_rate)} | "
                     f"{number(row.dismiss_rate)} | {row.runs} | {number(row.runs_per_change)} | {number(row.time_saved)} | "
                     f"{row.missed} | {number(row.forced_by_build)} |")
    lines += _policy_lines(document.get("policies") or [])
    missed = pd.DataFrame(document["missed"])
    if len(missed):
        lines += ["", "Changes the shipped model would have skipped (effect measured; what it saw):", "",
                  "| project | commit | benchmark | effect | p (threshold) | executed changed share | predicted effect | "
                  "changed inclusive share | steering: writes hot data, constant, CPU dispatch |",
                  "|---|---|---|---|---|---|---|---|---|"]
        for row in missed.itertuples(index=False):
            lines.append(f"| {row.project} | {row.new[:10]} | {row.benchmark} | {100 * row.effect:+.2f}% | "
                         f"{row.score:.3f} ({row.threshold:.3f}) | {row.executed_changed_share:.2e} | "
                         f"{row.predicted_effect:+.3f}% | {row.changed_inclusive_share:.3f} | "
                         f"{row.changed_writes_hot_data:.3f}, {row.executed_constant_change:.3f}, "
                         f"{row.changed_cpu_dispatch:.0f} |")
    return "\n".join(lines) + "\n"


def _policy_lines(policies: list[dict]) -> list[str]:
    """What each deciding bundle chose: `shipped` rows are the rule's wherever it stepped aside."""
    if not policies:
        return []
    lines = ["", f"The policy each deciding bundle earned on its evidence (`{STEPPING_ASIDE_RULE}`: it steps aside, and "
             "the `shipped` rows are the rule's decisions):", "", "| project | policy | why |", "|---|---|---|"]
    for row in policies:
        lines.append(f"| {row['project']} | {row['policy']} | {row['reason'].replace('|', '/') or '-'} |")
    return lines


def write_markdown(path: Path, document: dict) -> None:
    """The tables into `path`, between their markers (selector/markdown_section.py)."""
    write_section(path, BEGIN, END, markdown(document), "Day one: the shipped model on every labelled pair")
