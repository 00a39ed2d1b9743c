"""Features: tuples (c_n, c_o, b) and the feature catalogue.

Public surface::

    closest_tuples(history, benchmarks)       # c_o = closest measured and profiled ancestor
    ancestor_pairs(history, benchmarks)       # any ancestor pair (Sousa's Methods 1-3)
    build_feature_table(history, tuples)      # one row per tuple, every feature, the label
    CATALOGUE, FEATURE_NAMES                  # the documented features (docs/features.md)
    MaxAbsScaler, distance_weights            # preparing features for the models (Sousa 1.6)
"""

import lazy_loader

# Loaded on first use, so that `selector` starts without scikit-learn (features.scaling).
__getattr__, __dir__, __all__ = lazy_loader.attach(
    __name__,
    submod_attrs={
        "builder": ["build_feature_table"],
        "catalogue": ["CATALOGUE", "FEATURE_NAMES"],
        "scaling": ["MaxAbsScaler", "distance_weights"],
        "tuples": ["ancestor_pairs", "closest_tuples"],
    },
)
