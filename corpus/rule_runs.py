"""What the executed-changed rule's runs are made of, and how far a learner within the rule can
cut them (issue 47), on the committed packs (corpus/*/pack), each commit against its closest
labelled ancestor.

1. For each project: the rule's runs, its changes, and which of the rule's reasons alone forced
   a run (an executed changed block, a changed data object a reached function reads, a changed
   build), with the changes among them.
2. The rule's runs pruned by a bound that needs no learning: the changed functions' largest
   inclusive share of the run (changed_inclusive_share) under min_effect, where no hazard fires
   and no read data object changed.  A change confined to code that carries less than 1% of the
   run moves it by less than 1% unless it sends the run into work it never did or writes data
   that hot code interprets; the changes it misses are listed.
3. How often each hazard fires among the rule's runs of each project, and on how many changes
   (a markdown table): the runs a hazard keeps whatever a model scores, the floor of any pruning
   within the rule.
4. Each project held out in turn: a learner fitted on the other projects' rule runs scores the
   held-out project's; its threshold is the QUANTILE of the scores of the other projects' changes
   that no hazard forces, each scored out of fold (grouped by project, 5 folds), so that the
   threshold is not fitted on the scores it is judged by.  A run is kept where the score reaches
   it or a hazard fires (models.decision.hazards_firing), as select keeps it.
Usage: python3 corpus/rule_runs.py [--model xgboost-monotone] [--quantiles 0,0.02,0.05 (none: "")]
(from the repository's top; part 4 fits the learner about 6 times per project and quantile)."""
from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
from sklearn.model_selection import GroupKFold

from perf_selector.features.catalogue import FEATURE_NAMES
from perf_selector.models import decision
from perf_selector.models.registry import MODELS
from perf_selector.selector.evaluation.evaluation_pack import with_every_feature

REASONS = {"executed change": "executed_changed_share", "changed data read": "changed_data_reached",
           "changed build": "build_config_changed"}
MIN_EFFECT = 0.01


def rule_runs(corpus: Path) -> pd.DataFrame:
    """The rule's runs on every pack's closest labelled pairs, with their project and hazards."""
    frames = []
    for pack in sorted(corpus.glob("*/pack/features.parquet")):
        table = pq.read_table(pack).to_pandas()
        table = table[table.label.notna()]
        table = table.loc[table.groupby(["new", "benchmark"]).commit_hops.idxmin()]
        table = with_every_feature(table)
        features = table[FEATURE_NAMES].to_numpy(float)
        kept = decision.executed_rule_scores(features, MIN_EFFECT) > 0
        firing = pd.DataFrame(decision.hazards_firing(features[kept]), columns=list(decision.HAZARDS), index=table.index[kept])
        frames.append(table[kept].assign(project=pack.parent.parent.name, hazard=firing.any(axis=1)).join(
            firing.add_prefix("fires:")))
    runs = pd.concat(frames, ignore_index=True)
    runs["label"] = runs.label.astype(bool)
    return runs


def forced_alone(runs: pd.DataFrame) -> pd.DataFrame:
    positive = runs[list(REASONS.values())].fillna(0) > 0
    alone = positive & (positive.sum(axis=1) == 1).to_numpy()[:, None]
    rows = []
    for project, part in runs.groupby("project"):
        row = {"project": project, "rule runs": len(part), "changes": int(part.label.sum())}
        for reason, column in REASONS.items():
            mask = alone.loc[part.index, column]
            row[f"{reason} alone"] = f"{int(mask.sum())} ({int((mask & part.label).sum())})"
        rows.append(row)
    return pd.DataFrame(rows)


def inclusive_bound(runs: pd.DataFrame) -> tuple[int, int, pd.DataFrame]:
    confined = (runs.changed_inclusive_share.fillna(1) < MIN_EFFECT) & ~runs.hazard & (runs.changed_data_reached.fillna(0) == 0)
    missed = runs[confined & runs.label]
    return int((confined & ~runs.label).sum()), len(missed), missed[["project", "new", "benchmark", "effect"]]


def hazard_firings(runs: pd.DataFrame) -> list[str]:
    """A markdown table: for each project, the rule's runs (changes), those where any hazard fires
    and each hazard's (its changes); the hazards that fire nowhere left out."""
    names = [name for name in decision.HAZARDS if runs[f"fires:{name}"].any()]

    def cell(mask: pd.Series, labels: pd.Series) -> str:
        return f"{int(mask.sum()):,} ({int((mask & labels).sum())})" if mask.any() else "-"

    rows = ["| project | rule runs (changes) | any hazard | " + " | ".join(names) + " |",
            "|---|---|---|" + "---|" * len(names)]
    for project, part in [*runs.groupby("project"), ("all", runs)]:
        cells = [cell(part[f"fires:{name}"], part.label) for name in names]
        rows.append(f"| {project} | {len(part):,} ({int(part.label.sum())}) | {cell(part.hazard, part.label)} | "
                    + " | ".join(cells) + " |")
    return rows


def held_out(runs: pd.DataFrame, model: str, quantile: float) -> pd.DataFrame:
    X = runs[FEATURE_NAMES].astype(float).fillna(0)
    y, groups, hazard = runs.label.to_numpy(), runs.project.to_numpy(), runs.hazard.to_numpy()

    def scores(train: np.ndarray, test: np.ndarray) -> np.ndarray:
        estimator = MODELS[model].build(0)
        estimator.fit(X[train], y[train])
        return estimator.predict_proba(X[test])[:, 1]

    rows = []
    for project in sorted(set(groups)):
        train, test = groups != project, groups == project
        inner = np.flatnonzero(train)
        out_of_fold = np.full(len(runs), np.nan)
        for fit, judge in GroupKFold(5).split(inner, groups=groups[inner]):
            fit_mask, judge_mask = np.zeros(len(runs), bool), np.zeros(len(runs), bool)
            fit_mask[inner[fit]], judge_mask[inner[judge]] = True, True
            out_of_fold[judge_mask] = scores(fit_mask, judge_mask)
        free_changes = train & y & ~hazard
        threshold = np.quantile(out_of_fold[free_changes], quantile) if free_changes.any() else 1.0
        kept = (scores(train, test) >= threshold) | hazard[test]
        rows.append({"project": project, "rule runs": int(test.sum()), "kept": int(kept.sum()),
                     "changes": int(y[test].sum()), "missed": int((y[test] & ~kept).sum())})
    return pd.DataFrame(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="xgboost-monotone")
    parser.add_argument("--quantiles", default="0,0.02,0.05")
    parser.add_argument("--corpus", type=Path, default=Path("corpus"))
    args = parser.parse_args()
    runs = rule_runs(args.corpus)
    changes = int(runs.label.sum())
    print(f"== the rule's runs: {len(runs)} for {changes} changes ({len(runs) / changes:.2f} for each change); "
          f"a hazard fires on {int(runs.hazard.sum())} ({int((runs.hazard & runs.label).sum())} changes)")
    print(forced_alone(runs).to_string(index=False))
    pruned, missed, which = inclusive_bound(runs)
    print(f"\n== changed code carrying under {MIN_EFFECT:.0%} of the run, no hazard, no changed data read: "
          f"{pruned} non-changes pruned, {missed} changes missed; runs {len(runs) - pruned - missed} "
          f"({(len(runs) - pruned - missed) / changes:.2f} for each change)")
    print(which.assign(new=which.new.str[:8]).to_string(index=False))
    print("\n== each hazard among the rule's runs: runs it fires on (changes among them)")
    print("\n".join(hazard_firings(runs)))
    for quantile in (float(q) for q in args.quantiles.split(",") if q):
        table = held_out(runs, args.model, quantile)
        kept, missed = int(table.kept.sum()), int(table.missed.sum())
        print(f"\n== {args.model} held out in turn, threshold at the {quantile:.0%} quantile of the other projects' "
              f"hazard-free changes: runs {kept} ({kept / changes:.2f} for each change), changes missed {missed} of {changes}")
        print(table.to_string(index=False))


if __name__ == "__main__":
    main()
