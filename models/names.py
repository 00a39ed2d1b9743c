"""Model names, importable without loading scikit-learn or XGBoost (the CLI starts faster)."""

MODEL_NAMES = ("random-forest", "svm", "xgboost", "logistic", "perphecy", "effect", "always-run", "reached-changed",
               "executed-changed", "history-only", "predicted-effect")
SCOPES = ("per-benchmark", "pooled")
OPERATING_POINTS = ("quantile", "conformal")  # models.evaluation says what each means
