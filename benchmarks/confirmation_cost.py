"""What interleaved confirmation costs, and what it changes, on the demo history timed.

The demo's sample project and its 39-commit history (selector/onboarding/sample_history.py), with
its four benchmarks measured by wall time instead of callgrind (arguments scaled so a run
takes a few to a few tens of milliseconds, five repetitions, profiling off), collected,
calibrated and then confirmed through the real CLI (`selector collect`, `calibrate`,
`confirm`).  Prints the pairs labelled and confirmed, the runs collection and calibration
made and the extra runs confirmation made, and the labels confirmation changed; and, as a
check against what the history planted, how many pairs of commits that change nothing a
benchmark executes (comments, cold code, unused helpers) were called changed before and
after.

    python benchmarks/confirmation_cost.py [--commits N] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from perf_selector.selector.onboarding.sample_history import DEMO_STEPS, make_sample_history  # noqa: E402
from perf_selector.storage.store import Store  # noqa: E402

BENCHMARKS = {"checksum": "checksum 150", "sort": "sort 4096", "fib": "fib 36", "weights": "weights 400000"}
# Commits whose change reaches no benchmark's executed code: a label of "changed" on them is false.
NEUTRAL_KINDS = {"neutral", "cold", "unused-helper", "add-top", "delete"}


def timed_config(text: str) -> str:
    """The sample project's selector.toml with its benchmarks timed and profiling off."""
    head = text.split("[[benchmark]]")[0].replace('tool = "callgrind"', 'tool = "none"')
    benchmarks = "".join(f'\n[[benchmark]]\nname = "{name}"\ncommand = "{{binary}} {arguments}"\nmetric = "wall_time"\n'
                         f"repetitions = 5\n" for name, arguments in BENCHMARKS.items())
    return head + benchmarks


def selector(*arguments: str) -> tuple[dict, float]:
    started = time.monotonic()
    result = subprocess.run([sys.executable, "-m", "perf_selector", *arguments, "--format", "json"], capture_output=True, text=True)
    if result.returncode != 0:
        raise SystemExit(f"selector {' '.join(arguments)} failed:\n{result.stderr}")
    return json.loads(result.stdout), time.monotonic() - started


def label_counts(rows: list[dict]) -> dict[str, int]:
    counts = Counter("changed" if row["label"] is True else "unchanged" if row["label"] is False else "undecided" for row in rows)
    return {kind: counts.get(kind, 0) for kind in ("changed", "unchanged", "undecided")}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--commits", type=int, default=len(DEMO_STEPS) + 1, help="newest N commits of the history")
    parser.add_argument("--keep", type=Path, help="make the project here and keep it (default: a temporary folder)")
    options = parser.parse_args()
    folder = options.keep or Path(tempfile.mkdtemp(prefix="confirmation-cost-"))
    root = folder / "project"
    commits = make_sample_history(root, steps=DEMO_STEPS)
    # The configuration is read from the working tree, not from each commit: no commit needed.
    (root / "selector.toml").write_text(timed_config((root / "selector.toml").read_text()))
    kinds = {commit.sha: commit.step.kind for commit in commits}

    load = os.getloadavg()
    _, collect_seconds = selector("collect", "-n", str(options.commits), "--repo", str(root))
    calibration, calibrate_seconds = selector("calibrate", "--repo", str(root))
    store = Store(root / ".selector")
    before = store.read("labels").to_pylist()
    confirmed, confirm_seconds = selector("confirm", "--repo", str(root))
    after = {(row["new"], row["old"], row["benchmark"]): row for row in store.read("labels").to_pylist()}

    measurements = store.read("measurements")
    collected_runs = measurements.num_rows
    calibration_runs = sum(row["runs"] for row in calibration)
    summary = confirmed["summary"]
    transitions = Counter(f"{change['before']} -> {change['after']}" for change in confirmed["changed"])
    neutral_before = [row for row in before if kinds.get(row["new"]) in NEUTRAL_KINDS]
    neutral_after = [after[(row["new"], row["old"], row["benchmark"])] for row in neutral_before]
    print(f"history: {options.commits} commits, 4 timed benchmarks, {len(before)} labelled pairs (store: {store.location}); "
          f"load average {load[0]:.1f} at the start, {os.getloadavg()[0]:.1f} at the end, {os.cpu_count()} cores")
    print("calibration (cv, repetitions needed): " + ", ".join(
        f"{row['benchmark']} {row['cv']:.1%} {row['repetitions_needed']}" for row in calibration))
    print(f"runs: collection {collected_runs} ({collect_seconds:.0f} s), calibration {calibration_runs} measured "
          f"({calibrate_seconds:.0f} s), confirmation {summary['runs']} ({confirm_seconds:.0f} s): "
          f"{summary['runs'] / collected_runs:.0%} of collection's")
    print(f"pairs confirmed: {summary['confirmed']} of {len(before)} "
          f"({summary['runs'] / max(summary['confirmed'], 1):.0f} runs a pair, warm-ups included)")
    print(f"labels before confirmation: {label_counts(before)}; after: {label_counts(list(after.values()))}")
    print(f"labels changed by confirmation: {len(confirmed['changed'])} ({dict(transitions)}); "
          f"decided by confirmation: {sum(row['decided_by'] == 'confirmation' for row in after.values())}")
    print(f"pairs of commits that change nothing executed ({len(neutral_before)}): called changed "
          f"{label_counts(neutral_before)['changed']} before, {label_counts(neutral_after)['changed']} after")
    drift_report(store, root, before, kinds)


def drift_report(store: Store, root: Path, labels: list[dict], kinds: dict[str, str]) -> None:
    """What the confirmation's runs say of the same pairs, next to the collection's: the median
    |effect| and the pairs the test finds (p < alpha), for commits that change nothing executed
    and for the others.  Drift between sessions shows as effects on the neutral pairs."""
    from perf_selector.selector.config import find_config, label_rules, load_config
    from perf_selector.storage.labels import PairLabeller

    config = load_config(find_config(root))
    rules = label_rules(config)
    measurements, calibration = store.read("measurements"), store.read("calibration")
    separate = PairLabeller(measurements, calibration, rules)
    interleaved = PairLabeller(measurements, calibration, rules, store.read("confirmations"))
    for neutral in (True, False):
        pairs = [(row["new"], row["old"], row["benchmark"]) for row in labels
                 if (kinds.get(row["new"]) in NEUTRAL_KINDS) == neutral]
        shown = []
        for name, labeller in (("separate sessions (collection)", separate), ("interleaved (confirmation)", interleaved)):
            found = [labeller.label(*pair) for pair in pairs]
            effects = sorted(abs(label.effect) for label in found)
            significant = sum(label.p_value < rules.alpha for label in found)
            shown.append(f"{name}: median |effect| {effects[len(effects) // 2]:.1%}, p < {rules.alpha:g} in {significant}")
        print(f"{'neutral' if neutral else 'other'} pairs ({len(pairs)}): " + "; ".join(shown))


if __name__ == "__main__":
    main()
