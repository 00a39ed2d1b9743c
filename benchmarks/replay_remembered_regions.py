"""The replay (`selector evaluate --replay`, and the backtest's timeline) of a real store with
the aligned regions of each changed function remembered for the process
(collectors.block_diff.remembered_regions) against aligned afresh by every feature builder (the
code before: the own policy's retraining builds a new one at every boundary), side by side in
one run, alternating for --rounds rounds so the machine's load hits both alike; the memory is
emptied before each remembering run, so each round starts cold.  Both must give the same
replay (every policy's runs and catches).  Prints each one's median time and the ratio.
Run: python benchmarks/replay_remembered_regions.py STORE [--retrain-every 25] [--rounds 2]
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from _common import interleaved, print_medians

from perf_selector.collectors import block_diff
from perf_selector.selector.evaluation.replay import replay_document


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("store", type=Path)
    parser.add_argument("--retrain-every", type=int, default=25)
    parser.add_argument("--rounds", type=int, default=2)
    arguments = parser.parse_args()
    documents = {}

    def replay(name: str, remembered: bool):
        def run():
            block_diff._remembered.cache_clear()
            # features.builder imports remembered_regions at each alignment: the code before is
            # changed_regions in its place, each builder aligning for itself
            kept = block_diff.remembered_regions
            block_diff.remembered_regions = kept if remembered else block_diff.changed_regions
            try:
                with tempfile.TemporaryDirectory() as workdir:
                    document = replay_document([(arguments.store, None)], retrain_every=arguments.retrain_every,
                                               workdir=Path(workdir))
            finally:
                block_diff.remembered_regions = kept
            documents[name] = [project["summary"] for project in document["projects"]]
        return run

    times = interleaved({"aligned afresh": replay("aligned afresh", False),
                         "remembered": replay("remembered", True)}, arguments.rounds)
    assert documents["aligned afresh"] == documents["remembered"], "the replays differ"
    print(f"{arguments.store}: retrained every {arguments.retrain_every} commits, {arguments.rounds} round(s); "
          "the same replay")
    print_medians(times, "aligned afresh", "remembered", "aligned afresh / remembered")


if __name__ == "__main__":
    main()
