"""What holds the shipped model's pruning within the rule far from the oracle (issue 47), on
the projects held out in turn: the model's scores or the hazards.

Each project's labelled Method 4 tuples are scored by the shipped learner trained on the
other projects (selector.project_evaluation.held_out_scores, as corpus/risk_bound.py scores
them; `--fits` takes the fits an earlier run kept).  Among the executed-changed rule's runs,
which are all a model within the rule may prune, it prints:

1. each hazard (models.decision.HAZARDS): the rule's tuples it fires on and the changes among
   them, and those where no other hazard fires; then the same for each project;
2. the bound's threshold (conformal risk control at `--miss-rate`) and the runs at it, with
   every hazard and with each left out in turn (the bound computed again each time), and with
   none: what a hazard costs and which changes it keeps;
3. runs for each change at fixed thresholds, with the hazards and without: how far the scores
   alone tell the runs that change from those that do not;
4. the same for the executed changed share alone (no learning): the runs at a threshold
   fitted after the fact to miss k changes of the pool, beside the model's scores so fitted.
   An upper bound of what each ranking can do, not a selector;
5. the floor: the rule's runs that `select` makes whatever the model scores (a hazard, the
   build, a predicted effect of 1%), the changes left to the model, and the runs of a model that
   ran exactly those changes: the least any model within the rule can run with these hazards;
   then the same for each project, beside the rule's and the model's at the bound's threshold,
   each for each change: where a perfect model runs more than half the rule's, no model within
   the rule can halve it with these hazards (issue 47 asks half on every interpreter);
6. the changes the model decides, lowest held-out score first, each with its commit and
   benchmark: the bound's threshold cannot rise past one of them without missing it;
7. for the packs given, on each commit's closest labelled pairs the rule runs: the unchanged
   ones whose predicted effect reaches 1% (and of those, the ones measured under 0.1%), and the
   changes it puts under 0.1%: how far the size estimate holds either way.

Runs are counted as `select` decides them (models.decision.decide_by_policy).
Usage: python3 corpus/what_binds.py PACK... [--model NAME] [--fits DIR] [--miss-rate 0.05]
(from the repository's top)."""

from __future__ import annotations

import argparse
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq

from perf_selector.features.catalogue import FEATURE_NAMES
from perf_selector.models import decision
from perf_selector.models.names import WITHIN_RULE
from perf_selector.selector.evaluation.evaluation_parts import Parts
from perf_selector.selector.evaluation.evaluation_pack import with_every_feature
from perf_selector.selector.evaluation.project_evaluation import (
    held_out_scores,
    load_projects,
    policy_risk_bound,
    unscored_decisions,
)

from risk_bound import METHOD4, SHIPPED, shipped_model  # corpus/, beside this script

THRESHOLDS = (0.001, 0.003, 0.01, 0.03, 0.1, 0.3)
MISSES = (0, 1, 3, 10, 30)
LOWEST = 10  # decided changes listed


@contextmanager
def hazards(names: list[str]):
    """models.decision deciding with only these hazards (each at its floor), restored after."""
    kept = dict(decision.HAZARDS)
    try:
        decision.HAZARDS.clear()
        decision.HAZARDS.update({name: kept[name] for name in names})
        decision.HAZARD_COLUMNS[:] = [FEATURE_NAMES.index(name) for name in names]
        decision._HAZARD_FLOORS = np.array([kept[name] for name in names])
        yield
    finally:
        decision.HAZARDS.clear()
        decision.HAZARDS.update(kept)
        decision.HAZARD_COLUMNS[:] = [FEATURE_NAMES.index(name) for name in kept]
        decision._HAZARD_FLOORS = np.array(list(kept.values()))


def runs_at(scored: dict, threshold: float) -> tuple[int, int, int, dict[str, int]]:
    """(runs, changes, missed, missed by project) of the model within the rule at `threshold`."""
    runs = changes = missed = 0
    by_project = {}
    for name, s in scored.items():
        run = decision.decide_by_policy(WITHIN_RULE, s.scores, np.full(len(s.scores), threshold), s.features, s.min_effect)
        labels = s.labels.astype(bool)
        runs, changes = runs + int(run.sum()), changes + int(labels.sum())
        lost = int((labels & ~run).sum())
        missed += lost
        if lost:
            by_project[name] = lost
    return runs, changes, missed, by_project


def line(label: str, threshold: float, scored: dict) -> str:
    runs, changes, missed, by_project = runs_at(scored, threshold)
    where = ", ".join(f"{name} {n}" for name, n in by_project.items())
    return (f"| {label} | {threshold + 0.0:.4g} | {runs:,} | {runs / changes:.2f} | {missed}"
            f"{f' ({where})' if where else ''} |")


def rule_firings(s) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """On one project's rule tuples: which hazards fire, where each fires alone, and the labels."""
    rule = decision.executed_rule_scores(s.features, s.min_effect) > 0
    firing = decision.hazards_firing(s.features)[rule]
    return firing, firing & (firing.sum(axis=1) == 1)[:, None], s.labels.astype(bool)[rule]


def hazard_fires(scored: dict) -> list[str]:
    # over the rule's tuples of every project
    firing, alone, labels = (np.concatenate(parts) for parts in zip(*(rule_firings(s) for s in scored.values())))
    rows = ["| hazard | rule's tuples it fires on (changes) | where no other fires (changes) |", "|---|---|---|"]
    for column, name in enumerate(decision.HAZARDS):
        this, only = firing[:, column], alone[:, column]
        rows.append(f"| {name} | {this.sum():,} ({(this & labels).sum()}) | {only.sum():,} ({(only & labels).sum()}) |")
    return rows


def hazard_fires_by_project(scored: dict) -> list[str]:
    """Each hazard on each project: the rule's tuples it fires on (changes among them), and the
    tuples that did not change where it is the only one firing: what it alone adds to the floor."""
    names = list(decision.HAZARDS)
    rows = ["| project | " + " | ".join(f"`{name}`" for name in names) + " |", "|---|" + "---|" * len(names)]
    for project, s in scored.items():
        firing, alone, labels = rule_firings(s)
        cells = [f"{firing[:, c].sum()} ({(firing[:, c] & labels).sum()}); {(alone[:, c] & ~labels).sum()}" if firing[:, c].any()
                 else "" for c in range(len(names))]
        rows.append(f"| {project} | " + " | ".join(cells) + " |")
    return ["each cell: fires on the rule's tuples (changes); alone on tuples that did not change", ""] + rows


def ranking_ceiling(scored: dict) -> list[str]:
    """Runs for each change, among the rule's runs, at a pooled threshold fitted to miss k changes."""
    share = FEATURE_NAMES.index("executed_changed_share")
    rankings = {"executed changed share": [], "the model's score": []}
    labels, forced = [], []
    for s in scored.values():
        rule = decision.executed_rule_scores(s.features, s.min_effect) > 0
        rankings["executed changed share"].append(np.nan_to_num(s.features[rule, share]))
        rankings["the model's score"].append(s.scores[rule])
        labels.append(s.labels.astype(bool)[rule])
        forced.append(decision.hazards_firing(s.features[rule]).any(axis=1))
    labels, forced = np.concatenate(labels), np.concatenate(forced)
    rows = ["| ranking | hazards | " + " | ".join(f"{k} missed" for k in MISSES) + " |",
            "|---|---|" + "---|" * len(MISSES)]
    for name, values in rankings.items():
        values = np.concatenate(values)
        for with_hazards in (True, False):
            keep = forced if with_hazards else np.zeros(len(values), bool)
            at_risk = np.sort(values[labels & ~keep])
            cells = []
            for k in MISSES:
                threshold = at_risk[k] if k < len(at_risk) else np.inf
                cells.append(f"{((values >= threshold) | keep).sum() / labels.sum():.2f}")
            rows.append(f"| {name} | {'kept where one fires' if with_hazards else 'none'} | " + " | ".join(cells) + " |")
    return rows


def rule_and_forced(scored: dict) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Per project: (the rule's runs, those of them `select` makes whatever the model scores)."""
    masks = {}
    for name, s in scored.items():
        forced, excluded = unscored_decisions(s, WITHIN_RULE)
        masks[name] = ~excluded, forced & ~excluded
    return masks


def project_floor(s, masks: tuple[np.ndarray, np.ndarray]) -> dict[str, int]:
    """One project's rule runs, forced runs, changes the model decides (changes the rule runs that
    nothing forces), changes, and a perfect model's runs within the rule (the forced and the decided)."""
    rule, forced = masks
    labels = s.labels.astype(bool)
    counts = {"rule": int(rule.sum()), "forced": int(forced.sum()), "decided": int((labels & rule & ~forced).sum()),
              "changes": int(labels.sum())}
    return counts | {"perfect": counts["forced"] + counts["decided"]}


def floor(scored: dict, masks: dict) -> list[str]:
    """The forced floor and what a model within the rule that ran exactly the changes it decides would run."""
    total = {key: sum(project_floor(s, masks[name])[key] for name, s in scored.items())
             for key in ("rule", "forced", "decided", "changes", "perfect")}
    return ["| the rule's runs | forced floor (for each change) | changes the model decides | a perfect model's runs "
            "| for each change |", "|---|---|---|---|---|",
            f"| {total['rule']:,} | {total['forced']:,} ({total['forced'] / total['changes']:.2f}) | {total['decided']:,} | "
            f"{total['perfect']:,} | {total['perfect'] / total['changes']:.2f} |"]


def floor_by_project(scored: dict, masks: dict, threshold: float) -> list[str]:
    """Each project's runs for each change: the rule's, the model's at `threshold`, the forced
    floor's and a perfect model's (the floor and the changes the model decides), and whether that
    perfect model runs at most half the rule's."""
    rows = ["| project | changes | the rule | the model | forced floor | a perfect model | at most half the rule's |",
            "|---|---|---|---|---|---|---|"]
    for name, s in sorted(scored.items()):
        counts = project_floor(s, masks[name])
        if not counts["changes"]:
            continue
        model = decision.decide_by_policy(WITHIN_RULE, s.scores, np.full(len(s.scores), threshold), s.features, s.min_effect)
        per = [n / counts["changes"] for n in (counts["rule"], int(model.sum()), counts["forced"], counts["perfect"])]
        rows.append(f"| {name} | {counts['changes']} | " + " | ".join(f"{v:.2f}" for v in per)
                    + f" | {'yes' if 2 * counts['perfect'] <= counts['rule'] else 'no'} |")
    return rows


def lowest_decided(scored: dict, masks: dict, keys: dict) -> list[str]:
    """The changes the model decides, lowest held-out score first; `keys`: each project's labelled
    tuples' commit and benchmark, in its scores' order."""
    found = []
    for name, s in scored.items():
        rule, forced = masks[name]
        for row in np.flatnonzero(s.labels.astype(bool) & rule & ~forced):
            found.append((float(s.scores[row]), name, *keys[name][row]))
    rows = ["| project | commit | benchmark | held-out score |", "|---|---|---|---|"]
    rows += [f"| {name} | {commit[:10]} | {benchmark} | {score:.3g} |" for score, name, commit, benchmark in sorted(found)[:LOWEST]]
    return rows


def size_estimate(packs: list[Path]) -> list[str]:
    """How far the predicted effect holds on the closest labelled pairs the rule runs, per pack."""
    rows = ["| project | rule runs | changes | unchanged, predicted 1% or more | of those, measured under 0.1% "
            "| changes predicted under 0.1% |", "|---|---|---|---|---|---|"]
    total = np.zeros(5, int)
    for pack in packs:
        table = pq.read_table(pack / "features.parquet").to_pandas()
        table = table[table.label.notna()]
        table = table.loc[table.groupby(["new", "benchmark"]).commit_hops.idxmin()]
        table = with_every_feature(table)
        ran = table[decision.executed_rule_scores(table[FEATURE_NAMES].to_numpy(float)) > 0]
        changed = ran.label.astype(bool).to_numpy()
        predicted, measured = ran.predicted_effect.abs().to_numpy() / 100, ran.effect.abs().to_numpy()
        large = ~changed & (predicted >= 0.01)
        counts = np.array([len(ran), changed.sum(), large.sum(), (large & (measured < 0.001)).sum(),
                           (changed & (predicted < 0.001)).sum()])
        total += counts
        rows.append(f"| {pack.parent.name} | " + " | ".join(f"{n:,}" for n in counts) + " |")
    rows.append("| all | " + " | ".join(f"{n:,}" for n in total) + " |")
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("packs", nargs="+", help="packs or stores (STORE=CONFIG), at least two")
    parser.add_argument("--model", help="the learner (default: the shipped bundle's)")
    parser.add_argument("--fits", type=Path, metavar="DIR", help="fits of the projects held out in turn, kept and taken")
    parser.add_argument("--miss-rate", type=float, default=0.05, help="the bound's stated miss rate (default 0.05)")
    arguments = parser.parse_args()
    given = []
    for text in arguments.packs:
        store, _, config = text.partition("=")
        given.append((Path(store), Path(config) if config else None))
    projects = load_projects(given, METHOD4)
    model = arguments.model or shipped_model()
    scored = held_out_scores(projects, model, SHIPPED["target_hit_rate"], SHIPPED["seed"], SHIPPED["threshold_by_project"],
                             SHIPPED["operating_point"], fits_kept=Parts(arguments.fits) if arguments.fits else None)
    changes = sum(int(s.labels.sum()) for s in scored.values())
    print(f"{model}, {len(scored)} projects held out in turn, {changes:,} changed Method 4 tuples\n")
    print("\n".join(hazard_fires(scored)) + "\n")
    print("\n".join(hazard_fires_by_project(scored)) + "\n")
    print("| hazards | bound's threshold | runs | runs for each change | changes missed |\n|---|---|---|---|---|")
    every = list(decision.HAZARDS)
    for label, names in [("every hazard", every)] + [(f"without {h}", [n for n in every if n != h]) for h in every] \
            + [("none", [])]:
        with hazards(names):
            bound = policy_risk_bound(scored, WITHIN_RULE, arguments.miss_rate)
            print(line(label, bound.threshold, scored))
        if names == every:
            threshold_with_every_hazard = bound.threshold
    print("\n| hazards | threshold | runs | runs for each change | changes missed |\n|---|---|---|---|---|")
    for label, names in (("every hazard", every), ("none", [])):
        with hazards(names):
            for threshold in THRESHOLDS:
                print(line(label, threshold, scored))
    print()
    print("\n".join(ranking_ceiling(scored)))
    print()
    masks = rule_and_forced(scored)
    print("\n".join(floor(scored, masks)))
    print()
    print("\n".join(floor_by_project(scored, masks, threshold_with_every_hazard)))
    keys = {project.name: list(zip(*(project.data.table.loc[project.data.table["label"].notna(), column].astype(str)
                                     for column in ("new", "benchmark")))) for project in projects}
    print()
    print("\n".join(lowest_decided(scored, masks, keys)))
    packs = [path for path, _ in given if (path / "features.parquet").exists()]
    if packs:
        print()
        print("\n".join(size_estimate(packs)))


if __name__ == "__main__":
    main()
