"""Selection: deciding which benchmarks a commit runs, on a push and in CI (`select`, the
pre-push hook, the policy and the shipped model, `verify`, `bisect`)."""
