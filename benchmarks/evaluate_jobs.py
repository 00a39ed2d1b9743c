"""`selector evaluate --jobs N` against one process, on real stores, side by side in one run.

Loads the projects once (tuples, features, labels), then evaluates them (each project's own
Method 4 backtest, then leave-one-project-out) alone and with N processes, alternating for
--rounds rounds so that the machine's load hits both alike, and checks that both give the
same predictions.  Prints each one's median time and the ratio.  A project is the unit of
work, so the gain is bounded by the largest project's share of the whole.
Run: python benchmarks/evaluate_jobs.py STORE[=CONFIG]... [--jobs 2 --models xgboost,perphecy,executed-changed --rounds 1]
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

import pandas as pd
from _common import interleaved, print_medians

from perf_selector.selector.evaluation.project_evaluation import evaluate, load_projects


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("stores", nargs="+", metavar="STORE[=CONFIG]")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--models", default="xgboost,perphecy,executed-changed")
    parser.add_argument("--rounds", type=int, default=1)
    arguments = parser.parse_args()
    stores = [(Path(store), Path(config) if config else None)
              for store, _, config in (value.partition("=") for value in arguments.stores)]
    projects = load_projects(stores, {"k": 5, "first": None, "epoch_days": None})
    models = arguments.models.split(",")
    results = {}

    def run(jobs: int):
        return lambda: results.__setitem__(jobs, evaluate(projects, models, 0.95, 0, jobs=jobs))

    times = interleaved({"1 process": run(1), f"{arguments.jobs} processes": run(arguments.jobs)}, arguments.rounds)
    pd.testing.assert_frame_equal(results[1].predictions, results[arguments.jobs].predictions)
    print(f"{len(projects)} projects ({', '.join(p.name for p in projects)}), models {arguments.models}, "
          f"{arguments.rounds} round(s), load average {os.getloadavg()[0]:.1f} at the end; same predictions")
    print_medians(times, "1 process", f"{arguments.jobs} processes", f"1 process / {arguments.jobs}")


if __name__ == "__main__":
    main()
