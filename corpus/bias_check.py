"""Do a store's changed labels hold when the run's context changes?  (Issue 26's bias check.)

For every pair the store's labels call changed, and every pair the rule before
calibration perturbed contexts would have called changed (an exact metric's effect
alone, no spread), both sides' stored binaries are run again under three environment
sizes and two path lengths (six contexts: the normalised one and five others, none of
them one that calibration perturbs with), and the pair's effect is taken in each.  A
label *holds* when, in every context, the effect has the label's sign and is at least
max(min_effect, the spread it was decided against).

Prints, per project, the changed labels and the share that hold, for the labels as
decided now and for the old rule; `--json` writes the rows.

Usage: python corpus/bias_check.py WORKDIR/PROJECT [--json FILE]
       (the folder corpus/collect.sh filled: its selector.toml, store/ and the clone)
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import json
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from collectors.benchmark_runner import BenchmarkRunner  # noqa: E402
from collectors.builds import place_binary  # noqa: E402
from collectors.run_context import Perturbation, RunContext  # noqa: E402
from selector.config import benchmark_specs, context_settings, label_rules, load_config  # noqa: E402
from storage.labels import PairLabeller  # noqa: E402
from storage.store import Store  # noqa: E402

# Three environment sizes by two path lengths; calibration perturbs with others
# (selector/calibrate.py PERTURBATIONS), so this is a check, not a replay.
CONTEXTS = [Perturbation(environment, path) for environment, path in itertools.product((0, 61, 2500), (0, 17))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("project", type=Path, help="WORKDIR/PROJECT as corpus/collect.sh made it")
    parser.add_argument("--json", type=Path, help="write every checked pair here")
    arguments = parser.parse_args()
    folder = arguments.project.resolve()
    config = load_config(folder / "selector.toml")
    store = Store(folder / "store")
    rules = label_rules(config)
    pairs = changed_pairs(store, rules)
    print(f"{folder.name}: {len(pairs)} pairs changed by the new or the old rule; "
          f"{len(pairs) * len(CONTEXTS) * 2} benchmark runs", file=sys.stderr, flush=True)
    specs = {spec.name: spec for spec in benchmark_specs(config)}
    binaries = binary_of(store)
    checked = []
    for number, pair in enumerate(pairs, 1):
        effects = context_effects(config, specs[pair["benchmark"]], binaries(pair["old"]), binaries(pair["new"]))
        threshold = lambda spread: max(rules.min_effect, spread)  # noqa: E731
        pair["context_effects"] = effects
        pair["holds_new"] = pair["new_label"] is True and all(_same_change(e, pair["effect"], threshold(pair["spread"])) for e in effects)
        pair["holds_old"] = pair["old_label"] is True and all(_same_change(e, pair["effect"], threshold(0.0)) for e in effects)
        checked.append(pair)
        print(f"  {number}/{len(pairs)} {pair['new'][:10]} {pair['benchmark']}: effect {pair['effect']:+.3%}, "
              f"in the contexts {', '.join(f'{e:+.3%}' for e in effects)}", file=sys.stderr, flush=True)
    report(folder.name, checked)
    if arguments.json:
        arguments.json.write_text(json.dumps(checked, indent=1, default=str))


def changed_pairs(store: Store, rules) -> list[dict]:
    """The pairs labelled changed now, or by the old rule: the same labeller with the
    calibration as it was before tolerances and context spreads (exact or not, no spread)."""
    calibration = store.read("calibration")
    old_calibration = calibration.drop_columns([name for name in ("tolerance", "layout_spread", "spread")
                                                if name in calibration.column_names])
    old_labeller = PairLabeller(store.read("measurements"), old_calibration, rules)
    pairs = []
    for row in store.read("labels").to_pylist():
        old_rule = old_labeller.label(row["new"], row["old"], row["benchmark"])
        old_label = old_rule.label if old_rule is not None else None
        if row["label"] is True or old_label is True:
            pairs.append({"new": row["new"], "old": row["old"], "benchmark": row["benchmark"], "effect": row["effect"],
                          "spread": row.get("spread") or 0.0, "new_label": row["label"], "old_label": old_label})
    return pairs


def binary_of(store: Store):
    commits = store.read("commits")
    return store.binary_lookup(commits["sha"].to_pylist(), commits["binary_sha256"].to_pylist())


def context_effects(config, spec, old_binary: str | None, new_binary: str | None) -> list[float]:
    """The pair's relative effect in each context (both sides run there, one after the other)."""
    if old_binary is None or new_binary is None:
        raise SystemExit("a binary of the pair is not in the store: recollect it")
    runs = spec.repetitions if spec.metric != "instructions" else 1
    effects = []
    for perturbation in CONTEXTS:
        old = _median(config, spec, old_binary, perturbation, runs)
        new = _median(config, spec, new_binary, perturbation, runs)
        effects.append((new - old) / abs(old))
    return effects


def _median(config, spec, stored_binary: str, perturbation: Perturbation, runs: int) -> float:
    with tempfile.TemporaryDirectory(prefix="selector-bias-") as folder:
        checkout = Path(folder) / "checkout"
        binary = place_binary(stored_binary, checkout / config.project.binary)
        context = RunContext(context_settings(config), perturbation)
        try:
            runner = BenchmarkRunner([dataclasses.replace(spec, repetitions=runs, warmup=0)], binary, checkout,
                                     Path(config.project.suite) if config.project.suite else None, workdir=Path(folder),
                                     context=context)
            values = [run.value for run in runner.run().runs if run.counts]
        finally:
            context.release()
    if not values:
        raise SystemExit(f"{spec.name} failed in context {perturbation.describe()}")
    return statistics.median(values)


def _same_change(effect: float, labelled: float, threshold: float) -> bool:
    return abs(effect) >= threshold and (effect > 0) == (labelled > 0)


def report(project: str, checked: list[dict]) -> None:
    new = [pair for pair in checked if pair["new_label"] is True]
    old = [pair for pair in checked if pair["old_label"] is True]
    held_new = sum(pair["holds_new"] for pair in new)
    held_old = sum(pair["holds_old"] for pair in old)
    print(f"{project}: labels as decided now: {held_new}/{len(new)} changed labels hold in all {len(CONTEXTS)} contexts"
          f" ({held_new / len(new):.2f})" if new else f"{project}: no changed labels now")
    print(f"{project}: the old rule (no spread): {held_old}/{len(old)} hold; {len(old) - held_old} did not"
          if old else f"{project}: no changed labels by the old rule")
    print(f"{project}: labels that differ between the rules: "
          f"{sum((pair['new_label'] is True) != (pair['old_label'] is True) for pair in checked)}")


if __name__ == "__main__":
    main()
