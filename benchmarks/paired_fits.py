"""Judging a learner with each project held out in turn: every nested fit made (n(n-1) inner
fits) against each fit on all projects but two shared by both hold-outs (models.paired_fits:
n(n-1)/2), side by side in one run on the committed corpus packs.

Loads the packs once, then runs held_out_scores both ways, alternating for --rounds rounds so
that the machine's load hits both alike, checks that both give the same scores and operating
points, and prints each one's median time and the ratio.  The outer fits (one per project) and
the scoring are the same both ways, so the ratio stays under 2 and nears it as projects grow.
Run: python benchmarks/paired_fits.py [PACK...] [--model xgboost --rounds 1]
     (default: every corpus/*/pack; from the repository's top)
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from _common import interleaved, learner_on_packs, print_medians

from perf_selector.selector.evaluation.project_evaluation import held_out_scores


def main() -> None:
    every_pack = sorted(path.parent for path in Path("corpus").glob("*/pack/pack.json"))
    arguments, projects = learner_on_packs(__doc__.splitlines()[0], every_pack)
    results = {}

    def judged(shared: bool):
        return lambda: results.__setitem__(shared, held_out_scores(projects, arguments.model, shared_fits=shared))

    times = interleaved({"every fit": judged(False), "shared fits": judged(True)}, arguments.rounds)
    for name, every in results[False].items():
        shared = results[True][name]
        assert np.array_equal(every.scores, shared.scores) and every.threshold == shared.threshold, name
    print(f"{arguments.model} held out in turn on {len(projects)} projects (the same scores and operating points both ways):")
    print_medians(times, "every fit", "shared fits", "every fit / shared fits")


if __name__ == "__main__":
    main()
