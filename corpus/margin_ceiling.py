"""How far any threshold rule over the feature catalogue could go beyond the executed-changed
rule, project by project, *in hindsight* (issue 27's margin goal: dismiss at least 0.10 more
than the rule at a hit rate at least as high).

For each project's Method 4 test tuples (those `selector evaluate` scores), among the tuples
the rule runs, it places the thresholds with the answers known: the lowest value any change
has, so that every change the rule keeps is still kept, and reports the dismiss rate of
- the best single feature (run when the rule runs and the feature reaches its threshold),
- the best pair of features (run when the rule runs and either reaches its threshold:
  Perphecy's predictor with two features).
No model trained on other projects, or on the project's past, can be expected to do better
than these: they are fitted on the very tuples they are scored on.  Where even they fall
short of the rule + 0.10, the goal is out of reach of the catalogue's threshold rules.
Beside them, what transfers: the rule pruned by one threshold learnt on the *other*
projects, the lowest executed changed share among their changes that nothing else keeps
(a changed build, a changed data object read, a steering feature, a predicted instruction
change of min_effect or more).
Usage: python corpus/margin_ceiling.py STORE... [--markdown]
"""

from __future__ import annotations

import argparse
import itertools
from pathlib import Path

import numpy as np
import pandas as pd

from perf_selector.features.catalogue import FEATURE_NAMES, STEERING_FEATURES
from perf_selector.selector.evaluation.project_evaluation import method4_test_tuples, load_projects
from perf_selector.models.decision import executed_rule_scores

MARGIN = 0.10
# distance in commits or days and a benchmark's noise say nothing of what a commit changed
NOT_OF_THE_CHANGE = {"commit_hops", "commit_days", "benchmark_noise", "build_config_changed"}


def kept_otherwise(table: pd.DataFrame, min_effect: float) -> np.ndarray:
    """Tuples a reason other than the executed share keeps: a changed build or data object read,
    a steering feature, a predicted instruction change of at least min_effect."""
    value = lambda name: np.nan_to_num(table[name].to_numpy(float))  # noqa: E731
    return ((value("build_config_changed") > 0) | (value("changed_data_reached") > 0)
            | (np.abs(value("predicted_effect")) >= 100 * min_effect)
            | (np.nan_to_num(table[list(STEERING_FEATURES)].to_numpy(float)) > 0).any(axis=1))


def transferred_share(others: list) -> float:
    """The lowest executed changed share among the other projects' changes that the rule keeps
    and nothing else does (kept_otherwise)."""
    lowest = np.inf
    for project in others:
        table = project.data.table[project.data.table["label"] == True]  # noqa: E712
        features = np.nan_to_num(table[FEATURE_NAMES].to_numpy(float))
        alone = (executed_rule_scores(features) > 0) & ~kept_otherwise(table, project.config.labels.min_effect)
        if alone.any():
            lowest = min(lowest, float(np.nan_to_num(table["executed_changed_share"].to_numpy(float))[alone].min()))
    return lowest


def ceiling(tests: pd.DataFrame, share: float = np.inf, min_effect: float = 0.01) -> dict:
    labels = tests["label"].to_numpy(bool)
    features = np.nan_to_num(tests[FEATURE_NAMES].to_numpy(float))
    rule = executed_rule_scores(features) > 0
    names = [name for name in FEATURE_NAMES if name not in NOT_OF_THE_CHANGE]
    values = np.nan_to_num(tests[names].to_numpy(float))
    negatives, kept = int((~labels).sum()), labels & rule

    def dismissed(run: np.ndarray) -> float:
        return float((~run[~labels]).sum() / negatives) if negatives else float("nan")

    rule_dismiss = dismissed(rule)
    # the lowest value among the kept changes keeps them all; with none, nothing need run
    lowest = np.array([values[kept, i].min() if kept.any() else np.inf for i in range(len(names))])
    single = [(dismissed(rule & (values[:, i] >= lowest[i])), names[i]) for i in range(len(names))]
    best_single = max(single)
    best_pair = best_single
    for i, j in itertools.combinations(range(len(names)), 2):
        for first in np.unique(values[kept, i]):
            rest = kept & (values[:, i] < first)  # the changes the first feature leaves to the second
            second = values[rest, j].min() if rest.any() else np.inf
            rate = dismissed(rule & ((values[:, i] >= first) | (values[:, j] >= second)))
            if rate > best_pair[0]:
                best_pair = (rate, f"{names[i]} or {names[j]}")
    pruned = rule & (kept_otherwise(tests, min_effect) | (np.nan_to_num(tests["executed_changed_share"].to_numpy(float)) >= share))
    return {"changes": int(labels.sum()), "unchanged": negatives, "rule": rule_dismiss, "goal": rule_dismiss + MARGIN,
            "transferred share": share, "transferred hit": float(pruned[labels].mean()) if labels.any() else float("nan"),
            "transferred dismiss": dismissed(pruned),
            "best single feature": best_single[0], "its feature": best_single[1],
            "best pair": best_pair[0], "its features": best_pair[1],
            "reachable": "yes" if best_pair[0] >= rule_dismiss + MARGIN else "no"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("stores", nargs="+", type=Path)
    parser.add_argument("--markdown", action="store_true")
    arguments = parser.parse_args()
    projects = load_projects([(store, None) for store in arguments.stores], {"k": 5, "first": None, "epoch_days": None},
                             on_project=lambda name: print(f"loading {name}", flush=True))
    rows = [{"project": project.name,
             **ceiling(method4_test_tuples(project), transferred_share([p for p in projects if p is not project]),
                       project.config.labels.min_effect)} for project in projects]
    table = pd.DataFrame(rows)
    table["transferred share"] = [f"{v:.2g}" for v in table["transferred share"]]
    table = table.round(3)
    if not arguments.markdown:
        print(table.to_string(index=False))
        return
    # as selector evaluate writes its tables (pandas' to_markdown needs tabulate, not a dependency)
    print("| " + " | ".join(table.columns) + " |\n" + "|---" * len(table.columns) + "|")
    for row in table.itertuples(index=False):
        print("| " + " | ".join(str(value) for value in row) + " |")


if __name__ == "__main__":
    main()
