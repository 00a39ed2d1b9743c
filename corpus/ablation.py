"""How the operating point is placed, measured on the corpus: leave-one-project-out with each
choice, side by side, and the projects' own Method 4 backtests with each operating point.

For every held-out project, every model is trained on the other projects (as `selector
evaluate` does) with its threshold placed
- on stratified random folds of all their tuples, or on each training project held out
  in turn (what carries over to an unseen project), and
- by the quantile rule or the split-conformal bound (models.evaluation.OPERATING_POINTS),
then scored on the held-out project's Method 4 test tuples.  With --own, each project's
own pooled backtest is also run with both operating points (slower: every epoch refits).
Prints, per variant and model, the realized hit and dismiss rates per project and pooled,
and the share of Method 4 epochs whose changes were all caught.  With --drop GROUP the
features of that group are set to 0 in every project's table before anything is fitted
(a constant column: no model can use it), so a run with and a run without it measure
what the group contributes.
Usage: python corpus/ablation.py STORE... [--models xgboost,logistic,perphecy] [--own] [--drop executed|steering]
       [--operating-points quantile] [--threshold-from projects]
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd

from perf_selector.features.catalogue import STEERING_FEATURES
from perf_selector.models.evaluation import OPERATING_POINTS

# groups of features an ablation can take away (features/catalogue.py)
FEATURE_GROUPS = {"executed": ("executed_changed_share", "predicted_effect", "predicted_effect_size"),
                  "steering": STEERING_FEATURES}
from perf_selector.selector.evaluation.store_backtest import run_backtest
from perf_selector.selector.evaluation.project_evaluation import cross_project_predictions, load_projects, project_table


def epochs_caught(predictions: pd.DataFrame) -> str:
    """Of the epochs that hold a change: how many ran every change (per project and model)."""
    changed = predictions[predictions["label"]]
    if changed.empty:
        return "-"
    caught = changed.groupby("epoch")["run"].all()
    return f"{int(caught.sum())}/{len(caught)}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("stores", nargs="+", type=Path)
    parser.add_argument("--models", default="xgboost,logistic,random-forest,perphecy")
    parser.add_argument("--own", action="store_true", help="also the projects' own pooled backtests, per operating point")
    parser.add_argument("--drop", choices=sorted(FEATURE_GROUPS), help="set this group's features to 0 everywhere")
    parser.add_argument("--operating-points", default=",".join(OPERATING_POINTS))
    parser.add_argument("--threshold-from", default="folds,projects", help="cross-project thresholds: folds, projects or both")
    arguments = parser.parse_args()
    models = arguments.models.split(",")
    projects = load_projects([(store, None) for store in arguments.stores], {"k": 5, "first": None, "epoch_days": None})
    suffix = ""
    if arguments.drop:
        for project in projects:
            project.data.table[list(FEATURE_GROUPS[arguments.drop])] = 0.0
        suffix = f", without {arguments.drop} features"
    placements = [{"folds": False, "projects": True}[name] for name in arguments.threshold_from.split(",")]
    rows = []
    for point in arguments.operating_points.split(","):
        for by_project in placements:
            frames = []
            for held_out in projects:
                others = [p for p in projects if p is not held_out]
                frames.append(cross_project_predictions(others, held_out, models, 0.95, 0, by_project, point)
                              .assign(project=held_out.name))
            predictions = pd.concat(frames, ignore_index=True)
            variant = f"cross-project, {point}, threshold from {'projects' if by_project else 'folds'}{suffix}"
            rows += _rows(variant, predictions)
        if arguments.own:
            frames = [run_backtest(p.data, models, ["pooled"], 0.95, 0, operating_point=point).predictions.assign(project=p.name)
                      for p in projects]
            rows += _rows(f"own history, pooled, {point}{suffix}", pd.concat(frames, ignore_index=True))
    table = pd.DataFrame(rows)
    with pd.option_context("display.width", 200, "display.max_rows", 500):
        for variant, part in table.groupby("variant", sort=False):
            print(f"\n{variant}")
            print(part.drop(columns=["variant"]).to_string(index=False))


def _rows(variant: str, predictions: pd.DataFrame) -> list[dict]:
    table = project_table(predictions)
    rows = []
    for row in table.itertuples(index=False):
        part = predictions if row.project == "(all)" else predictions[predictions["project"] == row.project]
        part = part[part["model"] == row.model]
        rows.append({"variant": variant, "project": row.project, "model": row.model, "positives": row.positives,
                     "auroc": round(row.auroc, 3), "hit_rate": round(row.hit_rate, 3), "dismiss_rate": round(row.dismiss_rate, 3),
                     "epochs_caught": "-" if row.project == "(all)" else epochs_caught(part)})
    return rows


if __name__ == "__main__":
    main()
