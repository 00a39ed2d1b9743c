"""Timed labels against the instruction-count labels of the same pairs (issue 26).

Two stores of one history on the same commits: one counted (callgrind instructions,
whose labels are exact) and one timed (wall-clock seconds).  For the pairs both label:

- of the pairs whose instruction count changed by at least `--large` (5%), the share the
  timed labels also call changed (goal >= 0.9);
- of the pairs whose instruction count is identical, the share the timed labels call
  changed (goal <= alpha);
- the timed labels' undecided share, and how the labels were decided (`decided_by`),
  with the confirmed ones (`selector confirm`) apart, and the runs confirmation
  took (the timed store's confirmations table).

Usage: python corpus/timed_vs_counted.py COUNTED_STORE TIMED_STORE [--large 0.05] [--config TIMED_TOML]
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from perf_selector.storage.store import Store  # noqa: E402

KEY = ("new", "old", "benchmark")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("counted", type=Path, help="the callgrind store")
    parser.add_argument("timed", type=Path, help="the wall-time store of the same commits")
    parser.add_argument("--large", type=float, default=0.05, help="an instruction-count change this large must be seen")
    parser.add_argument("--config", type=Path, help="the timed store's selector.toml [default: beside the store]")
    arguments = parser.parse_args()
    counted = labels_by_pair(Store(arguments.counted))
    timed_store = Store(arguments.timed)
    timed = labels_by_pair(timed_store)
    as_collected = collected_labels(timed_store, arguments.config or arguments.timed.parent / "selector.toml")
    shared = sorted(set(counted) & set(timed))
    if not shared:
        raise SystemExit("no pair is labelled in both stores: were they collected on the same commits?")
    alpha = next(iter(timed.values()))["alpha"]
    print(f"{len(shared)} pairs labelled in both stores ({len(counted)} counted, {len(timed)} timed); alpha {alpha:g}")
    report("as collected (no confirmation)", [(counted[key], as_collected[key]) for key in shared], arguments.large, alpha)
    report("with confirmation", [(counted[key], timed[key]) for key in shared], arguments.large, alpha)
    decided = Counter(timed[key]["decided_by"] or "undecided" for key in shared)
    print("timed labels decided by: " + ", ".join(f"{how} {count}" for how, count in decided.most_common()))
    confirmed = timed_store.keys("confirmations")
    if confirmed:
        runs = timed_store.read("confirmations")
        print(f"confirmation: {len(confirmed)} pairs confirmed, {runs.num_rows} extra runs")


def collected_labels(store: Store, config_path: Path) -> dict[tuple, dict]:
    """The timed store's labels as its collection made them: its confirmations left out."""
    from perf_selector.selector.config import label_rules, load_config
    from perf_selector.storage.labels import history_labels

    if not config_path.is_file():
        raise SystemExit(f"{config_path}: no selector.toml for the timed store (--config)")
    tables = history_labels(store.read("commits"), store.read("measurements"), store.read("profiles"),
                            store.read("calibration"), label_rules(load_config(config_path)))
    return {tuple(row[name] for name in KEY): row for table in tables.values() for row in table.to_pylist()}


def labels_by_pair(store: Store) -> dict[tuple, dict]:
    return {tuple(row[name] for name in KEY): row for row in store.read("labels").to_pylist()}


def report(title: str, rows: list[tuple[dict, dict]], large: float, alpha: float) -> None:
    """The two goals' shares among `rows` (pairs of counted and timed labels)."""
    big = [timed for counted, timed in rows if counted["effect"] is not None and abs(counted["effect"]) >= large]
    same = [timed for counted, timed in rows if counted["effect"] == 0]
    seen = sum(timed["label"] is True for timed in big)
    false = sum(timed["label"] is True for timed in same)
    undecided = sum(timed["label"] is None for _, timed in rows)
    print(f"{title}:")
    print(f"  instruction count changed by >= {large:.0%}: {len(big)} pairs, timed labels call {seen} changed"
          + (f" ({seen / len(big):.2f}; goal >= 0.9)" if big else ""))
    print(f"  identical instruction count: {len(same)} pairs, timed labels call {false} changed"
          + (f" ({false / len(same):.3f}; goal <= alpha {alpha:g})" if same else ""))
    # Identical binaries are unchanged by rule (decided_by "identical"): the test of the timed
    # labels themselves is on the pairs whose binaries differ.
    built = [timed for timed in same if timed["decided_by"] != "identical"]
    built_false = sum(timed["label"] is True for timed in built)
    print(f"    of which {len(same) - len(built)} identical binaries (unchanged by rule) and {len(built)} different binaries: "
          f"{built_false} called changed" + (f" ({built_false / len(built):.3f})" if built else "")
          + f", {sum(timed['label'] is None for timed in built)} undecided")
    print(f"  undecided timed labels: {undecided} of {len(rows)}")
    for counted, timed in rows:
        if counted["effect"] is not None and abs(counted["effect"]) >= large:
            print(f"    {counted['new'][:10]} {counted['benchmark']}: instructions {counted['effect']:+.1%}, "
                  f"time {timed['effect']:+.1%}: {timed['reason']}")


if __name__ == "__main__":
    main()
