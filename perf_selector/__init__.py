"""perf-selector's one import namespace: what `pip install` puts into site-packages.

The repository keeps the design card's layers as top-level folders (collectors,
storage, features, models, selector); each is installed as a subpackage of this one
(pyproject.toml's package-dir), so `perf_selector.models` never meets a user's own
`models`.  The command line is `selector`, or `python -m perf_selector`.
"""
