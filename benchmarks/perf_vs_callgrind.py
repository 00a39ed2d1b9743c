"""perf samples against callgrind instructions as the weights of executed_changed_share.

The feature weighs the changed basic blocks of a tuple by c_o's per-instruction counts:
executions under callgrind, samples under perf (features/executed_code.py).  Given two
stores of the same commits, one profiled each way, this prints how alike the two
features rank the tuples (Spearman over the tuples both stores have) and how well each
separates the labels (AUROC of the share against each store's own labels).

    python benchmarks/perf_vs_callgrind.py CALLGRIND_STORE PERF_STORE
    python benchmarks/perf_vs_callgrind.py --generate WORKDIR [-n COMMITS]

``--generate`` makes the sample history (selector/onboarding/sample_history.py) in WORKDIR and
collects its newest COMMITS twice, with ``[profile] tool`` callgrind and perf (the same
benchmarks and metrics; each commit's benchmarks run again under the other profiler, so
keep COMMITS small: about a minute a commit on 2 cores).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

import pandas as pd
from scipy.stats import spearmanr
from sklearn.metrics import roc_auc_score

from perf_selector.selector.evaluation.feature_table import feature_table
from perf_selector.selector.onboarding.sample_history import make_sample_history
from perf_selector.storage.store import Store

KEY = ["new", "old", "benchmark"]
FEATURE = "executed_changed_share"


def compare(callgrind: Store, perf: Store) -> dict[str, float]:
    """Spearman of the two shares over the common tuples, and each share's AUROC on its labels."""
    tables = {"callgrind": feature_table(callgrind), "perf": feature_table(perf)}
    both = tables["callgrind"][[*KEY, FEATURE]].merge(tables["perf"][[*KEY, FEATURE]], on=KEY,
                                                       suffixes=("_callgrind", "_perf"))
    result = {"tuples": float(len(both)),
              "spearman": float(spearmanr(both[f"{FEATURE}_callgrind"], both[f"{FEATURE}_perf"]).statistic)
              if len(both) > 2 else float("nan")}
    for name, table in tables.items():
        result[f"auroc_{name}"] = _auroc(table)
    return result


def _auroc(table: pd.DataFrame) -> float:
    """AUROC of the share against the labels (unlabelled tuples left out; NaN with one class)."""
    labelled = table[table["label"].notna()]
    labels = labelled["label"].astype(bool)
    if labels.nunique() < 2:
        return float("nan")
    return float(roc_auc_score(labels, labelled[FEATURE]))


def generate(workdir: Path, commits: int) -> tuple[Store, Store]:
    """The sample history in `workdir`, collected once per profiler into two stores."""
    root = workdir / "project"
    make_sample_history(root)
    stores = []
    for tool in ("callgrind", "perf"):
        config = root / f"{tool}.toml"
        text = (root / "selector.toml").read_text()
        config.write_text(text.replace('tool = "callgrind"', f'tool = "{tool}"'))
        store = workdir / f"store-{tool}"
        subprocess.run([sys.executable, "-m", "perf_selector", "collect", "-n", str(commits), "--repo", str(root),
                        "--config", str(config), "--store", str(store)], check=True)
        stores.append(Store(store, create=False))
    return stores[0], stores[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("stores", nargs="*", type=Path, help="CALLGRIND_STORE PERF_STORE")
    parser.add_argument("--generate", type=Path, metavar="WORKDIR", help="collect the sample history both ways here")
    parser.add_argument("-n", type=int, default=8, help="commits to collect with --generate [default: 8]")
    arguments = parser.parse_args()
    if arguments.generate:
        callgrind, perf = generate(arguments.generate, arguments.n)
    elif len(arguments.stores) == 2:
        callgrind, perf = (Store(path, create=False) for path in arguments.stores)
    else:
        parser.error("give two stores (callgrind, perf) or --generate WORKDIR")
    result = compare(callgrind, perf)
    print(f"tuples in both stores: {int(result['tuples'])}")
    print(f"Spearman of {FEATURE}, callgrind vs perf: {result['spearman']:.3f}")
    print(f"AUROC of {FEATURE} against the labels: callgrind {result['auroc_callgrind']:.3f}, "
          f"perf {result['auroc_perf']:.3f}")


if __name__ == "__main__":
    main()
