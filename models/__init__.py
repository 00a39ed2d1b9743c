"""Models: classifiers, Perphecy's predictor, baselines, sampling protocols, backtesting,
operating points, model bundles and experiment tracking.

Public surface::

    MODELS, model_spec(name)            # the compared models, fresh scikit-learn estimators
    PerphecyPredictor                   # de Oliveira 2015, Algorithm 1
    AlwaysRun, ReachedChanged, HistoryOnly, PredictedEffect
    make_plan(method, history, ...)     # Sousa 1.7: method4 (epochs), method1-3, kfold
    backtest(plan, table, ...)          # fit per split, score the tests
    operating_threshold, score_predictions, roc_points
    save_bundle, load_bundle            # skops (and ONNX) files + SHA-256 manifest; no pickle
"""

import lazy_loader

# Loaded on first use: scikit-learn, XGBoost and skops take a second to import, and
# `selector --help` or the pre-push hook should not pay for what they do not use.
__getattr__, __dir__, __all__ = lazy_loader.attach(
    __name__,
    submod_attrs={
        "backtest": ["BacktestResult", "FittedModel", "backtest", "train_one"],
        "baselines": ["AlwaysRun", "HistoryOnly", "PredictedEffect", "ReachedChanged"],
        "bundle": ["Bundle", "BundleError", "load_bundle", "save_bundle"],
        "evaluation": ["operating_threshold", "roc_points", "score_predictions"],
        "perphecy": ["PerphecyPredictor"],
        "registry": ["MODELS", "model_spec"],
        "sampling": ["METHODS", "Plan", "Split", "make_plan"],
    },
)
