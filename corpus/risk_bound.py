"""The conformal bound of the shipped model's pruning beside each project's realized miss rate
(issue 37), and optionally the shipped bundle itself, on the corpus stores.

The shipped model (the learner of the shipped bundle, or `--model`, trained as `selector
evaluate --write-model` trains it) is trained on all the projects but one and scores every labelled pair of the one left out,
each project in turn (selector.project_evaluation.held_out_scores).  Conformal risk control
over those projects (models.risk_control) then gives, for each stated miss rate and policy,
the highest pruning threshold whose bound keeps an unseen project's expected miss rate at or
below it, and the miss rate each project realized at that threshold (none where no threshold
keeps it: the rule decides there).  The bundle records one bound, at its target's miss rate,
for the policy it earned (pruning within the rule where it stepped aside); this prints both
policies at several miss rates, so the table also says what a looser promise would allow, and
beside each project's realized miss rate the runs select makes at the threshold against the
executed-changed rule's (every labelled tuple of the project).

`--write-model DIR` also writes a bundle of that model, with the function and settings
`selector evaluate --write-model --model MODEL` uses, without that run's hours of backtests
(which it does not depend on); with `--model auto`, of the learner the projects held out in turn
choose, as `selector evaluate --write-model` chooses it (`--jobs` candidates side by side), and
the bound is of that learner.  corpus/evaluate.sh writes the shipped bundle so, first.
`--fits DIR` keeps every fit of the projects held out in turn, and takes those kept by an earlier
run or step (selector/evaluation/held_out_fits.py).
Usage: python corpus/risk_bound.py STORE[=CONFIG]... [--model NAME|auto] [--miss-rates 0.05,0.10] [--write-model DIR]
       [--jobs N] [--fits DIR] [--markdown]
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pandas as pd

from perf_selector.collectors.errors import UserError
from perf_selector.models.decision import decide_by_policy
from perf_selector.models.evaluation import Scores, score_predictions
from perf_selector.models.names import STEPPING_ASIDE_RULE, WITHIN_RULE
from perf_selector.models.registry import MODEL_NAMES
from perf_selector.selector.markdown_section import number
from perf_selector.selector.evaluation.evaluation_parts import Parts
from perf_selector.selector.evaluation.project_evaluation import (
    HeldOutScores,
    held_out_scores,
    load_projects,
    policy_risk_bound,
    train_cross_project_bundle,
)

SHIPPED = {"target_hit_rate": 0.95, "seed": 0, "operating_point": "quantile",
           "threshold_by_project": True}  # corpus/evaluate.sh's --write-model, at the command's defaults
METHOD4 = {"k": 5, "first": None, "epoch_days": None}  # selector evaluate's defaults: the same tuples and features
POLICIES = ("model", WITHIN_RULE)


def shipped_model() -> str:
    """The learner of the bundle the package ships (selector/data/cross-project)."""
    from perf_selector.models.bundle import load_bundle
    from perf_selector.selector.selection.shipped_model import shipped_bundle_path

    return load_bundle(shipped_bundle_path(), load_models=False).settings["model"]


def bound_rows(scored: dict, miss_rates: list[float]) -> pd.DataFrame:
    """Per policy and stated miss rate: the bound's threshold, whether one keeps it, the least
    miss rate the projects can certify, and each project's realized miss rate at the threshold,
    with the runs select makes there against the executed-changed rule's (every labelled tuple), and the
    share of the unchanged tuples each dismisses."""
    rows = []
    changes = {name: int(s.labels.sum()) for name, s in scored.items()}
    rule_scores = {name: run_scores(s, decide_by_policy(STEPPING_ASIDE_RULE, s.scores, np.zeros(len(s.scores)), s.features,
                                                        s.min_effect))
                   for name, s in scored.items()}
    for policy in POLICIES:
        for miss_rate in miss_rates:
            bound = policy_risk_bound(scored, policy, miss_rate)
            for name, realized in bound.realized.items():
                s = scored[name]
                scores = run_scores(s, decide_by_policy(policy, s.scores, np.full(len(s.scores), bound.threshold),
                                                        s.features, s.min_effect)) if bound.controlled else rule_scores[name]
                rows.append({"policy": policy, "stated_miss_rate": miss_rate, "controlled": bound.controlled,
                             "threshold": bound.threshold if bound.controlled else np.nan,
                             "projects": bound.projects, "least_certifiable": bound.least_certifiable,
                             "project": name, "changes": changes[name],
                             "realized_miss_rate": realized if bound.controlled else np.nan,
                             "runs": scores.runs, "rule_runs": rule_scores[name].runs,
                             "dismiss": scores.dismiss_rate, "rule_dismiss": rule_scores[name].dismiss_rate})
    return pd.DataFrame(rows)


def run_scores(held_out: HeldOutScores, run: np.ndarray) -> Scores:
    """The figures evaluate's tables give (models.evaluation.score_predictions) of one project's
    decisions, each tuple costing one run."""
    return score_predictions(pd.DataFrame({"label": held_out.labels, "score": held_out.scores, "run": run,
                                           "cost": np.ones(len(run))}))


def markdown(table: pd.DataFrame) -> str:
    lines = ["| policy | stated miss rate | projects (least certifiable) | threshold | project | changes | realized miss rate "
             "| runs (the rule's) | dismiss (the rule's) |",
             "|---|---|---|---|---|---|---|---|---|"]
    for row in table.itertuples(index=False):
        controlled = bool(row.controlled)
        threshold = f"{row.threshold:.4f}" if controlled else "none keeps it: the rule decides"
        realized = number(row.realized_miss_rate) if controlled else "-"
        lines.append(f"| {row.policy} | {number(row.stated_miss_rate)} | {row.projects} ({number(row.least_certifiable)}) | "
                     f"{threshold} | {row.project} | {row.changes} | {realized} | {row.runs} ({row.rule_runs}) | "
                     f"{number(row.dismiss)} ({number(row.rule_dismiss)}) |")
    return "\n".join(lines)


def miss_rate_list(text: str) -> list[float]:
    rates = [float(part) for part in text.split(",") if part.strip()]
    if not rates or not all(0 < rate < 1 for rate in rates):
        raise argparse.ArgumentTypeError("miss rates are comma-separated numbers between 0 and 1")
    return rates


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("stores", nargs="+", help="STORE or STORE=CONFIG (default: selector.toml beside the store)")
    parser.add_argument("--miss-rates", type=miss_rate_list, default=[0.05, 0.10],
                        help="stated miss rates, comma-separated (default: 0.05,0.10; 0.05 is the shipped target's)")
    parser.add_argument("--model", choices=("auto", *MODEL_NAMES),
                        help="the learner (default: the shipped bundle's); auto: the one the projects held out in turn "
                             "choose, written with --write-model")
    parser.add_argument("--write-model", type=Path, metavar="DIR", help="also write a bundle of that model here")
    parser.add_argument("--markdown", action="store_true", help="print a Markdown table")
    parser.add_argument("--jobs", type=int, default=1, help="with --model auto: candidates judged side by side")
    parser.add_argument("--fits", type=Path, metavar="DIR",
                        help="where fits of the projects held out in turn are kept and taken from (selector evaluate's "
                             "--fits: the same folder shares the corpus evaluation's fits)")
    arguments = parser.parse_args()
    if len(arguments.stores) < 2:
        parser.error("a bound holds projects out in turn: give at least two stores")
    if arguments.model == "auto" and not arguments.write_model:
        parser.error("--model auto chooses the learner of a bundle: give --write-model DIR")
    given = []
    for text in arguments.stores:
        store, _, config = text.partition("=")
        given.append((Path(store), Path(config) if config else None))
    try:
        projects = load_projects(given, METHOD4, on_project=lambda name: print(f"loading {name}", flush=True))
    except UserError as error:
        parser.exit(2, f"risk_bound.py: {error}\n")
    kept = Parts(arguments.fits) if arguments.fits else None
    model = arguments.model or shipped_model()
    if model == "auto":
        bundle = write_model(projects, arguments.write_model, model, arguments.jobs, kept)
        model = bundle.settings["model"]
        print(f"chosen: {bundle.settings['chosen']['reason']}")
    print(f"model: {model}")
    scored = held_out_scores(projects, model, SHIPPED["target_hit_rate"], SHIPPED["seed"],
                             SHIPPED["threshold_by_project"], SHIPPED["operating_point"], fits_kept=kept)
    table = bound_rows(scored, arguments.miss_rates)
    print(markdown(table) if arguments.markdown else table.to_string(index=False))
    if arguments.write_model and arguments.model != "auto":
        write_model(projects, arguments.write_model, model, arguments.jobs, kept)


def write_model(projects: list, directory: Path, model: str, jobs: int, kept: Parts | None):
    """The bundle `selector evaluate --write-model --model MODEL` writes, and what it earned."""
    bundle = train_cross_project_bundle(projects, directory, model, SHIPPED["target_hit_rate"], SHIPPED["seed"],
                                        SHIPPED["operating_point"], SHIPPED["threshold_by_project"], jobs=jobs,
                                        fits_kept=kept)
    print(f"shipped bundle written to {directory}: policy {bundle.settings['policy']} ({bundle.settings['policy_reason']})",
          flush=True)
    return bundle


if __name__ == "__main__":
    main()
