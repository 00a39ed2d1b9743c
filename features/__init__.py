"""Features: tuples (c_n, c_o, b) and the feature catalogue.

Public surface::

    History                                   # the collected tables, as DataFrames
    closest_tuples(history, benchmarks)       # c_o = closest measured and profiled ancestor
    ancestor_pairs(history, benchmarks)       # any ancestor pair (Sousa's Methods 1-3)
    build_feature_table(history, tuples)      # one row per tuple, every feature, the label
    CATALOGUE, FEATURE_NAMES                  # the documented features (docs/features.md)
    MaxAbsScaler, distance_weights            # preparing features for the models (Sousa 1.6)
"""

from features.builder import build_feature_table
from features.catalogue import CATALOGUE, FEATURE_NAMES
from features.history import History
from features.scaling import MaxAbsScaler, distance_weights
from features.tuples import ancestor_pairs, closest_tuples

__all__ = [
    "CATALOGUE", "FEATURE_NAMES", "History", "MaxAbsScaler", "ancestor_pairs", "build_feature_table",
    "closest_tuples", "distance_weights",
]
