"""Feature building on a real store, the profiles' per-instruction columns taken from one chunk
(features.builder's _instruction_columns) against a take from the stored chunks at each call
(the code before), side by side in one run, alternating for --rounds rounds so the machine's
load hits both alike.  Both build the feature table of the store's closest-ancestor tuples;
the tables must be equal.  Prints each one's median time and the ratio.
Run: python benchmarks/instruction_counts_take.py STORE [--rounds 2]
"""

from __future__ import annotations

import argparse

import pandas as pd
import pyarrow as pa
from _common import interleaved, print_medians

from perf_selector.features.builder import FeatureBuilder
from perf_selector.features.tuples import closest_tuples
from perf_selector.selector.evaluation.feature_table import benchmarks_of
from perf_selector.storage.history import load_history
from perf_selector.storage.store import Store


class TakeFromChunks(FeatureBuilder):
    """The code before: a take from the profiles' chunked columns at each call."""

    def _instruction_columns(self) -> pa.Table:
        return self._in_binary.select(["instruction_addresses", "instruction_counts"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("store")
    parser.add_argument("--rounds", type=int, default=2)
    arguments = parser.parse_args()
    history = load_history(Store(arguments.store, create=False))
    tuples = closest_tuples(history, benchmarks_of(history))
    chunks = history.profiles.column("commit").num_chunks
    tables = {}

    def build(kind: type[FeatureBuilder], name: str):
        return lambda: tables.__setitem__(name, kind(history).table(tuples))

    times = interleaved({"one chunk": build(FeatureBuilder, "one chunk"),
                         "take from the chunks": build(TakeFromChunks, "take from the chunks")}, arguments.rounds)
    pd.testing.assert_frame_equal(tables["one chunk"], tables["take from the chunks"])
    print(f"{arguments.store}: {len(tuples)} tuples, profiles in {chunks} chunks, {arguments.rounds} round(s); same tables")
    print_medians(times, "take from the chunks", "one chunk", "take from the chunks / one chunk")


if __name__ == "__main__":
    main()
