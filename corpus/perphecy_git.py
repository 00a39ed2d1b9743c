"""Perphecy's Git study (de Oliveira 2015, Table 6.3) beside ours, on the corpus's Git store.

The paper's protocol, then ours, on the same store (corpus/collect.sh git):
- "Full": every tuple trains and is tested (`selector backtest --method full`): how far
  the greedy predictor fits the data it was made from; hit rate 1.0 by construction;
- "Per Test" and "All Tests": 10-fold cross-validation (`--method kfold --folds 10`),
  one predictor per benchmark (`per-benchmark` scope) or one for all (`pooled`);
- Method 4 (no future in training), every model, both scopes, at the 0.95 target.
Hit and dismiss rates are pooled over every test tuple (the paper averages its
per-benchmark figures; with five benchmarks of similar size the two differ little).

Prints the markdown rows of docs/evaluation.md's "Perphecy's Git study, side by side"
and writes every backtest's JSON next to the store (WORKDIR/git/perphecy-study/).
(WORKDIR/git as corpus/collect.sh leaves it: the clone in WORKDIR/git/git, store/, selector.toml.)
Usage: python corpus/perphecy_git.py WORKDIR/git [--models random-forest,svm,xgboost,logistic,perphecy]
       [--others WORKDIR/lz4/store ...]   (the shipped model held out from Git: trained on these alone)
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

PAPER = {"Full": (1.0, 0.83), "Per Test": (0.77, 0.84), "All Tests": (0.85, 0.83)}
LEARNED = ("random-forest", "svm", "xgboost", "logistic")


def backtest(work: Path, method: str, models: str, out: Path, *extra: str) -> dict:
    command = [sys.executable, "-m", "perf_selector", "backtest", "--repo", str(work / work.name), "--config",
               str(work / "selector.toml"), "--store", str(work / "store"), "--method", method, "--models", models,
               "--scope", "both", "--no-tracking", "--no-report", "--out", str(out / method), "--format", "json", *extra]
    print(f"backtest --method {method} ...", file=sys.stderr, flush=True)
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode:
        raise SystemExit(f"backtest --method {method} failed: {result.stderr}")
    document = json.loads(result.stdout)
    (out / f"{method}.json").write_text(json.dumps(document, indent=1))
    return document


def shipped(work: Path, out: Path, others: list[Path]) -> list[dict]:
    """Day one: the shipped cross-project model and the rules beside it, on every labelled pair
    of the store (`selector evaluate --shipped`); with `others` (the rest of the corpus's
    stores), the model trained as shipped on them alone (`--held-out`), as a model trained
    without this project would decide."""
    held_out = ["--held-out", *map(str, others)] if others else []
    command = [sys.executable, "-m", "perf_selector", "evaluate", "--shipped", *held_out,
               f"{work / 'store'}={work / 'selector.toml'}", "--out", str(out / "shipped"), "--format", "json"]
    print("evaluate --shipped ...", file=sys.stderr, flush=True)
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode:
        raise SystemExit(f"evaluate --shipped failed: {result.stderr}")
    document = json.loads(result.stdout)
    trained_on = document["bundle"]["trained_on"]["projects"]
    if work.name in trained_on and not others:
        print(f"warning: the shipped model was trained on {work.name}: not a held-out figure (pass --others "
              "with the corpus's other stores)", file=sys.stderr)
    return [row for row in document["results"] if row["project"] == work.name]


def overall(document: dict, model: str, scope: str) -> dict:
    return next(r for r in document["results"] if r["model"] == model and r["scope"] == scope and r["benchmark"] == "(all)")


def rates(row: dict) -> str:
    hit = "-" if row["hit_rate"] is None else f"{row['hit_rate']:.2f}"
    return f"{hit} / {row['dismiss_rate']:.2f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("work", type=Path)
    parser.add_argument("--models", default=",".join([*LEARNED, "perphecy"]))
    parser.add_argument("--others", type=Path, nargs="*", default=[],
                        help="the corpus's other stores: day one by the shipped model trained on them alone")
    options = parser.parse_args()
    out = options.work / "perphecy-study"
    out.mkdir(exist_ok=True)
    method4 = backtest(options.work, "method4", options.models, out)
    learned = [m for m in options.models.split(",") if m in LEARNED]
    best = max(learned, key=lambda m: overall(method4, m, "pooled")["auroc"] or 0.0) if learned else None
    chosen = ",".join(["perphecy", *([best] if best else [])])
    full = backtest(options.work, "full", chosen, out)
    folds = backtest(options.work, "kfold", chosen, out, "--folds", "10")
    tuples = method4["tuples"]
    print(f"{options.work.name} store: {tuples}; best learned model by Method 4 pooled AUROC: {best}\n")
    print("| protocol | the paper (Perphecy, Git 2013) | our Perphecy | our " + (best or "-") + " |")
    print("|---|---|---|---|")
    for label, document, scope in (("Full (train = test)", full, "pooled"), ("Per Test (10-fold)", folds, "per-benchmark"),
                                   ("All Tests (10-fold)", folds, "pooled")):
        paper = PAPER[label.split(" (")[0]]
        ours = [rates(overall(document, model, scope)) for model in ("perphecy", best) if model]
        print(f"| {label} | {paper[0]:.2f} / {paper[1]:.2f} | " + " | ".join(ours) + " |")
    for scope in ("per-benchmark", "pooled"):
        cells = [rates(overall(method4, model, scope)) for model in ("perphecy", best) if model]
        print(f"| Method 4, {scope} (no future) | - | " + " | ".join(cells) + " |")
    for row in shipped(options.work, out, options.others):
        print(f"| day one: {row['model']} (shipped, trained without {options.work.name}; every labelled pair) | - | "
              f"{rates(row)} | |")
    print("\nMethod 4, every model (hit / dismiss at the 0.95 target; AUROC):")
    for model in options.models.split(","):
        for scope in ("per-benchmark", "pooled"):
            row = overall(method4, model, scope)
            auroc = "-" if row["auroc"] is None else f"{row['auroc']:.3f}"
            print(f"- {model} {scope}: {rates(row)}; AUROC {auroc}")


if __name__ == "__main__":
    main()
