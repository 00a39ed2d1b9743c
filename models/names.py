"""Model names, importable without loading scikit-learn or XGBoost (the CLI starts faster)."""

MODEL_NAMES = ("random-forest", "svm", "xgboost", "xgboost-monotone", "logistic", "perphecy", "perphecy-extended", "effect", "always-run",
               "reached-changed", "executed-changed", "history-only", "predicted-effect")
SCOPES = ("per-benchmark", "pooled")
OPERATING_POINTS = ("quantile", "conformal")  # models.evaluation says what each means
# The executed-changed rule's inputs (models.baselines): `select` applies the rule itself when a
# model steps aside for it, without loading scikit-learn.
EXECUTED_CHANGE_COLUMNS = ("executed_changed_share", "changed_data_reached", "build_config_changed")
STEPPING_ASIDE_RULE = "executed-changed"  # the rule a model must beat to decide (issue 27)
WITHIN_RULE = "model-within-rule"  # the policy where the model decides only among what that rule runs
