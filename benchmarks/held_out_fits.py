"""The held-out bundles of `evaluate --shipped --held-out`: each project's bundle trained on the
others, whose policy is judged on each other project held out in turn, whose operating point holds
a third out.  Every nested fit made for each bundle on its own (n(n-1)(n-2) innermost fits and
n(n-1) on all but two) against the fits of each set of projects made once and shared by every
bundle (selector.evaluation.held_out_fits: n(n-1)(n-2)/6 and n(n-1)/2), side by side in one run
on committed corpus packs.

Loads the packs once, then judges the learner inside every held-out bundle both ways (what
train_cross_project_bundle does before its final fit, which is the same both ways and left out),
alternating for --rounds rounds so that the machine's load hits both alike, checks that both give
the same scores and operating points, and prints each one's median time and the ratio.
Run: python benchmarks/held_out_fits.py [PACK...] [--model xgboost --rounds 1]
     (default: six small packs; from the repository's top)
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from _common import interleaved, learner_on_packs, print_medians

from perf_selector.selector.evaluation.project_evaluation import held_out_fits, held_out_scores

SMALL = ("lz4", "zlib", "libdeflate", "zstd", "pcre2", "janet")


def main() -> None:
    arguments, projects = learner_on_packs(__doc__.splitlines()[0], [Path("corpus") / name / "pack" for name in SMALL])
    results = {}

    def judged(shared: bool):
        def each_bundle():
            fits = held_out_fits(projects, arguments.model, keep=True) if shared else None
            results[shared] = {held_out.name: held_out_scores([p for p in projects if p is not held_out], arguments.model,
                                                              shared_fits=False, fits=fits)
                               for held_out in projects}
        return each_bundle

    times = interleaved({"each bundle alone": judged(False), "fits shared": judged(True)}, arguments.rounds)
    for held_out, alone in results[False].items():
        for name, every in alone.items():
            shared = results[True][held_out][name]
            assert np.array_equal(every.scores, shared.scores) and every.threshold == shared.threshold, (held_out, name)
    n = len(projects)
    print(f"{arguments.model}, the bundles trained without each of {n} projects judged on the others held out in turn "
          f"(the same scores and operating points both ways; fits {n * (n - 1) * n - n * (n - 1)} against "
          f"{n * (n - 1) * (n - 2) // 6 + n * (n - 1) // 2}):")
    print_medians(times, "each bundle alone", "fits shared", "alone / shared")


if __name__ == "__main__":
    main()
