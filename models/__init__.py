"""Models: classifiers, Perphecy's predictor, baselines, sampling protocols, backtesting,
operating points, model bundles and experiment tracking.

Public surface::

    MODELS, model_spec(name)            # the compared models, fresh scikit-learn estimators
    PerphecyPredictor                   # de Oliveira 2015, Algorithm 1
    AlwaysRun, ReachedChanged, HistoryOnly
    make_plan(method, history, ...)     # Sousa 1.7: method4 (epochs), method1-3, kfold
    backtest(plan, table, ...)          # fit per split, score the tests
    operating_threshold, score_predictions, roc_points
    save_bundle, load_bundle            # skops files + SHA-256 manifest; no pickle
"""

from importlib import import_module

# Loaded on first use: scikit-learn, XGBoost and skops take a second to import, and
# `selector --help` or the pre-push hook should not pay for what they do not use.
_WHERE = {
    "BacktestResult": "backtest", "FittedModel": "backtest", "backtest": "backtest", "train_one": "backtest",
    "AlwaysRun": "baselines", "HistoryOnly": "baselines", "ReachedChanged": "baselines",
    "Bundle": "bundle", "BundleError": "bundle", "load_bundle": "bundle", "save_bundle": "bundle",
    "operating_threshold": "evaluation", "roc_points": "evaluation", "score_predictions": "evaluation",
    "PerphecyPredictor": "perphecy", "MODELS": "registry", "model_spec": "registry",
    "METHODS": "sampling", "Plan": "sampling", "Split": "sampling", "make_plan": "sampling",
}
__all__ = sorted(_WHERE)


def __getattr__(name: str):
    if name not in _WHERE:
        raise AttributeError(f"module 'models' has no attribute {name!r}")
    return getattr(import_module(f"models.{_WHERE[name]}"), name)
