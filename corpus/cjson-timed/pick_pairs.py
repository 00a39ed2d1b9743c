"""The pairs of corpus/cjson's callgrind store that cjson-timed times: every pair whose
instruction count changed by at least 5%, and a seeded sample of pairs of different
binaries whose counts are identical.  Prints two lines: the commits to collect (both sides
of each pair) and the new commits whose labels to confirm.

Usage: python corpus/cjson-timed/pick_pairs.py CJSON_STORE [--sample 15] [--seed 0]
"""

from __future__ import annotations

import argparse
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent.parent))

from perf_selector.storage.store import Store  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("store", type=Path)
    parser.add_argument("--sample", type=int, default=15, help="pairs of identical counts and different binaries")
    parser.add_argument("--seed", type=int, default=0)
    arguments = parser.parse_args()
    store = Store(arguments.store)
    labels = store.read("labels").to_pylist()
    commits = store.read("commits").to_pylist()
    digest = {row["sha"]: row["content_digest"] for row in commits}
    # One hop only: collecting both sides then makes the same closest pair in the timed store.
    adjacent = [row for row in labels if row["hops"] == 1]
    large = [row for row in adjacent if row["effect"] is not None and abs(row["effect"]) >= 0.05]
    same = sorted({row["new"] for row in adjacent if row["effect"] == 0 and digest.get(row["new"]) != digest.get(row["old"])})
    parents = {row["new"]: row["old"] for row in adjacent}
    sampled = random.Random(arguments.seed).sample(same, min(arguments.sample, len(same)))
    new = sorted({row["new"] for row in large} | set(sampled))
    print(" ".join(sorted(set(new) | {parents[sha] for sha in new})))
    print(",".join(new))


if __name__ == "__main__":
    main()
