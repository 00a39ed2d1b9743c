"""Features: tuples (c_n, c_o, b) and the feature catalogue.

Public surface::

    History                                   # the collected tables, as DataFrames
    closest_tuples(history, benchmarks)       # c_o = closest measured and profiled ancestor
    ancestor_pairs(history, benchmarks)       # any ancestor pair (Sousa's Methods 1-3)
    build_feature_table(history, tuples)      # one row per tuple, every feature, the label
    CATALOGUE, FEATURE_NAMES                  # the documented features (docs/features.md)
    MaxAbsScaler, distance_weights            # preparing features for the models (Sousa 1.6)
"""

from importlib import import_module

# Loaded on first use, so that `selector` starts without scikit-learn (features.scaling).
_WHERE = {
    "build_feature_table": "builder", "CATALOGUE": "catalogue", "FEATURE_NAMES": "catalogue", "History": "history",
    "MaxAbsScaler": "scaling", "distance_weights": "scaling", "ancestor_pairs": "tuples", "closest_tuples": "tuples",
}
__all__ = sorted(_WHERE)


def __getattr__(name: str):
    if name not in _WHERE:
        raise AttributeError(f"module 'features' has no attribute {name!r}")
    return getattr(import_module(f"features.{_WHERE[name]}"), name)
