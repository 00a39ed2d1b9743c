"""Do a store's changed labels hold when the run's context changes?  (Issue 26's bias check.)

For every pair the store's labels call changed, and every pair the rule before
calibration perturbed contexts would have called changed (an exact metric's effect
alone, no spread), both sides' stored binaries are run again under three environment
sizes and two path lengths (six contexts: the normalised one and five others, none of
them one that calibration perturbs with), and the pair's effect is taken in each.  A
label *holds* when, in every context, the effect has the label's sign and is at least
max(min_effect, the spread it was decided against).

Prints, per project, the changed labels and the share that hold, for the labels as
decided now and for the old rule; `--json` writes the rows.  The runs and the test are the
product's (selector/collection/perturbed_labels.py: both sides in turn in each context, stored in the
`perturbed` table, so a second check of a store runs nothing again; storage.labels.holds_under),
with this check's six contexts.

Usage: python corpus/bias_check.py WORKDIR/PROJECT [--json FILE]
       (the folder corpus/collect.sh filled: its selector.toml, store/ and the clone)
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from perf_selector.collectors.run_context import NORMALISED, Perturbation  # noqa: E402
from perf_selector.selector.config import label_rules, load_config  # noqa: E402
from perf_selector.selector.collection.perturbed_labels import TABLE, confirm_perturbed  # noqa: E402
from perf_selector.storage.labels import PairLabeller, history_labels, holds_under, perturbed_effects  # noqa: E402
from perf_selector.storage.store import Store  # noqa: E402

# Three environment sizes by two path lengths; calibration perturbs with others
# (selector/collection/calibrate.py PERTURBATIONS), so this is a check, not a replay.
CONTEXTS = [Perturbation(environment, path) for environment, path in itertools.product((0, 61, 2500), (0, 17))]
assert NORMALISED in CONTEXTS  # the stored labels' own context, run again with both sides in one session


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
    print(f"{folder.name}: {len(pairs)} pairs changed by the new or the old rule", file=sys.stderr, flush=True)
    # Both sides of every pair, in each context: the product's runs, stored in its table.
    summary = confirm_perturbed(_clone(folder), config, store, CONTEXTS, labels=[{**pair, "label": True} for pair in pairs],
                                on_run=_progress)
    if summary.skipped:
        raise SystemExit(f"cannot check {', '.join(summary.skipped)}: {next(iter(summary.skipped.values()))}")
    effects = perturbed_effects(store.read(TABLE), rules)
    checked = []
    for number, pair in enumerate(pairs, 1):
        found = effects.get((pair["new"], pair["old"], pair["benchmark"]), {})
        if any(found.get(context) is None for context in CONTEXTS):
            raise SystemExit(f"{pair['benchmark']} failed in a context on {pair['new'][:12]} or {pair['old'][:12]}")
        context_effects = [found[context] for context in CONTEXTS]
        pair["context_effects"] = context_effects
        pair["holds_new"] = pair["new_label"] is True and all(
            holds_under(e, pair["effect"], rules.min_effect, pair["spread"]) for e in context_effects)
        pair["holds_old"] = pair["old_label"] is True and all(
            holds_under(e, pair["effect"], rules.min_effect, 0.0) for e in context_effects)
        checked.append(pair)
        print(f"  {number}/{len(pairs)} {pair['new'][:10]} {pair['benchmark']}: effect {pair['effect']:+.3%}, "
              f"in the contexts {', '.join(f'{e:+.3%}' for e in context_effects)}", file=sys.stderr, flush=True)
    report(folder.name, checked)
    if arguments.json:
        arguments.json.write_text(json.dumps(checked, indent=1, default=str))


def changed_pairs(store: Store, rules) -> list[dict]:
    """The pairs labelled changed now, or by the old rule: the same labeller with the
    calibration as it was before tolerances and context spreads (exact or not, no spread);
    both as decided in the normalised context, before any confirmation under perturbation
    (which is what this checks)."""
    calibration = store.read("calibration")
    old_calibration = calibration.drop_columns([name for name in ("tolerance", "layout_spread", "spread")
                                                if name in calibration.column_names])
    old_labeller = PairLabeller(store.read("measurements"), old_calibration, rules)
    unconfirmed = dataclasses.replace(rules, perturbed_contexts=())
    labels = history_labels(store.read("commits"), store.read("measurements"), store.read("profiles"), calibration,
                            unconfirmed, store.read("confirmations"))
    pairs = []
    for row in (row for sha in sorted(labels) for row in labels[sha].to_pylist()):
        old_rule = old_labeller.label(row["new"], row["old"], row["benchmark"])
        old_label = old_rule.label if old_rule is not None else None
        if row["label"] is True or old_label is True:
            pairs.append({"new": row["new"], "old": row["old"], "benchmark": row["benchmark"], "metric": row["metric"],
                          "exact": row["exact"], "effect": row["effect"], "spread": row.get("spread") or 0.0,
                          "new_label": row["label"], "old_label": old_label})
    return pairs


def _progress(done: int, total: int) -> None:
    if done % 20 == 0 or done == total:
        print(f"  {done}/{total} benchmark runs", file=sys.stderr, flush=True)


def _clone(folder: Path) -> Path:
    """The project's clone corpus/collect.sh made beside the store (a benchmark that names
    checkout files runs in a worktree of it)."""
    candidates = [path for path in [folder / folder.name, *sorted(folder.iterdir())] if (path / ".git").exists()]
    if not candidates:
        raise SystemExit(f"{folder}: no clone of the project beside its store")
    return candidates[0]


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
