"""Experiment tracking: every backtest and every training is an MLflow run.

By default the runs go to a SQLite database and an artifact folder inside the store
(``<store>/mlflow/``), so nothing needs a server; ``--tracking-uri`` points elsewhere
(an MLflow server, a shared database).  MLflow 3 keeps its plain-folder store in
maintenance mode and refuses it by default, hence SQLite for the local case.
"""

from __future__ import annotations

import logging
import math
import os
from pathlib import Path
from typing import Iterable

EXPERIMENT = "perf-selector"


def default_tracking(store_root: Path) -> tuple[str, Path]:
    """The local tracking database and artifact folder of a store: ``<store>/mlflow/``.

    MLflow records artifact locations as absolute URIs; a store that was copied or moved
    still names the old place, and runs would be written there.  So they are re-rooted
    here, before MLflow opens the database: the store never writes outside itself."""
    folder = Path(store_root).resolve() / "mlflow"
    (folder / "artifacts").mkdir(parents=True, exist_ok=True)
    database = folder / "mlflow.db"
    if database.exists():
        reroot_artifacts(database, (folder / "artifacts").as_uri())
    return f"sqlite:///{database}", folder / "artifacts"


# Where MLflow's SQLite store keeps artifact locations (table, column).
_LOCATIONS = (("experiments", "artifact_location"), ("runs", "artifact_uri"), ("logged_models", "artifact_location"),
              ("model_versions", "source"), ("model_versions", "storage_location"))


def reroot_artifacts(database: Path, root: str) -> bool:
    """Point the artifact locations under another store's ``mlflow/artifacts`` at `root`;
    returns whether anything moved."""
    import sqlite3

    with sqlite3.connect(database) as connection:
        found = connection.execute("SELECT artifact_location FROM experiments WHERE name = ?", (EXPERIMENT,)).fetchone()
        old = found[0] if found else None
        if not old or old == root or not old.endswith("/mlflow/artifacts"):
            return False
        tables = {name for (name,) in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        for table, column in _LOCATIONS:
            if table in tables:
                # A prefix compared as text: LIKE would read the _ and % of a path as wildcards.
                connection.execute(f"UPDATE {table} SET {column} = ? || substr({column}, ?) "
                                   f"WHERE {column} = ? OR substr({column}, 1, ?) = ?",
                                   (root, len(old) + 1, old, len(old) + 1, old + "/"))
    return True


def _mlflow(tracking_uri: str, artifact_root: Path | None):
    os.environ.setdefault("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "false")
    import mlflow  # slow to import: only when a run is logged

    for name in ("mlflow", "alembic"):
        logging.getLogger(name).setLevel(logging.WARNING)
    mlflow.set_tracking_uri(tracking_uri)
    experiment = mlflow.get_experiment_by_name(EXPERIMENT)
    if experiment is None:
        location = (artifact_root.resolve().as_uri()) if artifact_root is not None else None
        mlflow.create_experiment(EXPERIMENT, artifact_location=location)
    mlflow.set_experiment(EXPERIMENT)
    return mlflow


def log_run(
    run_name: str,
    tracking_uri: str,
    params: dict,
    metrics: dict[str, float],
    artifacts: Iterable[Path] = (),
    artifact_root: Path | None = None,
    tags: dict[str, str] | None = None,
    models: dict[str, object] | None = None,
) -> str:
    """Log one run; returns its run id.  NaN metrics (undefined AUROC) are left out."""
    mlflow = _mlflow(tracking_uri, artifact_root)
    with mlflow.start_run(run_name=run_name) as run:
        mlflow.log_params({key: _param(value) for key, value in params.items()})
        finite = {key: float(value) for key, value in metrics.items() if value is not None and not math.isnan(float(value))}
        if finite:
            mlflow.log_metrics(finite)
        mlflow.set_tags(tags or {})
        for path in artifacts:
            path = Path(path)
            if path.is_dir():
                mlflow.log_artifacts(str(path), artifact_path=path.name)
            elif path.exists():
                mlflow.log_artifact(str(path))
        for name, estimator in (models or {}).items():
            _log_model(mlflow, name, estimator)
        return run.info.run_id


def _log_model(mlflow, name: str, estimator) -> None:
    import mlflow.sklearn

    from perf_selector.models.bundle import TRUSTED_TYPES

    mlflow.sklearn.log_model(
        estimator, name=name, serialization_format="skops", skops_trusted_types=sorted(TRUSTED_TYPES),
        pip_requirements=["perf-selector", "scikit-learn", "xgboost", "skops"],
    )


def _param(value) -> str:
    text = str(value)
    return text if len(text) <= 500 else text[:497] + "..."


def metric_name(*parts: str) -> str:
    """MLflow metric names allow letters, digits and _-. /: ; other characters become _."""
    return "/".join("".join(ch if ch.isalnum() or ch in "_-. :" else "_" for ch in part) for part in parts)
