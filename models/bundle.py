"""Model bundles: trained models and their operating points, safe to load.

A bundle is a directory::

    manifest.json          what was trained on what, thresholds, each file's SHA-256
    <benchmark>.skops      one model per benchmark (or pooled.skops)
    <benchmark>.onnx       the same model in ONNX, when it converts (models/portable.py)

Beside the directory, ``<directory>.sha256`` holds the SHA-256 of the manifest: the
manifest vouches for the model files, and this seal, outside the directory the bundle
is swapped in as, vouches for the manifest.

Models are written with skops, which rebuilds objects from an explicit description
instead of unpickling: loading never runs code hidden in the file.  Loading refuses a
bundle whose manifest does not match its seal or whose files do not match the
manifest's digests (tampered or damaged), thresholds outside [0, 1], model columns that
are not the manifest's features in order (and, pooled, one column per benchmark), and
any object type outside the small list this package trains.  A bundle stays current when
the feature catalogue gains features (its model reads its own columns by name); it is
stale only when it names a feature the catalogue no longer has (:meth:`Bundle.stale_reason`).  `selector select` loads the
ONNX files when every model has one (no scikit-learn, XGBoost or skops import on the
push path); everything else loads the skops files.
"""

from __future__ import annotations

import hashlib
import io
import json
import math
import os
import re
import shutil
import tempfile
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from perf_selector.models.portable import BORDERLINE, PortableModel, export_onnx

if TYPE_CHECKING:
    from perf_selector.models.backtest import FittedModel

BUNDLE_FORMAT = 1
MANIFEST = "manifest.json"
# Everything a trained model may contain beyond what skops trusts by default.
TRUSTED_TYPES = frozenset({
    "perf_selector.models.baselines.AlwaysRun", "perf_selector.models.baselines.HistoryOnly", "perf_selector.models.baselines.ReachedChanged",
    "perf_selector.models.baselines.PredictedEffect", "perf_selector.models.effect.EffectBound",
    "perf_selector.models.perphecy.PerphecyPredictor", "perf_selector.models.registry.BalancedXGBClassifier", "perf_selector.models.registry.PlattSVC",
    "perf_selector.models.registry.MonotoneXGBClassifier",
    "sklearn.tree._tree.Tree", "xgboost.core.Booster",
    "numpy.dtype",  # the dtype SimpleImputer keeps of what it was fitted on (models.registry.scaled_pipeline)
})


class BundleError(Exception):
    """The bundle is missing, damaged, tampered with, or holds untrusted objects."""


@dataclass
class BundleEntry:
    benchmark: str | None  # None: the pooled model, for every benchmark
    model: str
    scope: str
    threshold: float
    file: str
    sha256: str
    training_tuples: int
    training_positives: int
    fallback: bool
    columns: list[str]
    portable_file: str | None = None  # the ONNX form, when the model converts
    portable_sha256: str | None = None


@dataclass
class Bundle:
    entries: list[BundleEntry]
    feature_names: list[str]
    trained_on: dict  # commits, newest commit and its time, benchmarks
    settings: dict  # target hit rate, seed, ...
    created: str = field(default_factory=lambda: datetime.now(timezone.utc).isoformat(timespec="seconds"))
    estimators: dict[str, object] = field(default_factory=dict, repr=False)  # file -> loaded estimator
    directory: Path | None = None

    def score(self, entry: BundleEntry, table, feature_names: list[str]) -> np.ndarray:
        """The entry's probability of a change for each tuple of a feature table (a DataFrame
        holding `feature_names`, which may be more than the model's, in any order)."""
        features = table[list(feature_names)].to_numpy(dtype=float)
        return self.score_rows(entry, features, table["benchmark"].tolist(), feature_names)

    def score_rows(self, entry: BundleEntry, features: np.ndarray, benchmarks: list[str], feature_names: list[str]) -> np.ndarray:
        """The entry's probability of a change for each row of features (`feature_names` order,
        which need not be the bundle's: the model's columns are picked by name) of the given benchmarks."""
        from perf_selector.models.design import model_inputs

        return self.positive_scores(entry, model_inputs(features, benchmarks, feature_names, entry.columns))

    def positive_scores(self, entry: BundleEntry, X) -> np.ndarray:
        """The entry's probability of a change for each row of X (columns: ``entry.columns``).

        From the ONNX form when it is loaded, unless a probability is within BORDERLINE of
        the operating point: then the skops model scores again, so no decision depends on
        float32 rounding."""
        model = self.estimators[entry.file]
        if isinstance(model, PortableModel):
            scores = model.positive_scores(np.asarray(X, dtype=float))
            if not np.any(np.abs(scores - entry.threshold) < BORDERLINE):
                return scores
            try:
                model = _load_model(self.directory / entry.file)
            except ModuleNotFoundError:
                # The core install (no 'train' extra) cannot load the skops form: the ONNX
                # score decides, its float32 rounding included.
                return scores
            self.estimators[entry.file] = model
        import pandas as pd

        from perf_selector.models.registry import positive_scores

        # the estimators were fitted on DataFrames: they are scored on one, with its column names
        return positive_scores(model, X if isinstance(X, pd.DataFrame) else pd.DataFrame(X, columns=entry.columns))

    def load_estimators(self, portable: bool = False) -> None:
        """Load every entry's model (files verified by load_bundle).  With ``portable``, the ONNX
        forms when every entry has one and onnxruntime is installed, else the skops ones."""
        use_portable = portable and all(entry.portable_file for entry in self.entries) and _onnxruntime_installed()
        for entry in self.entries:
            if use_portable:
                self.estimators[entry.file] = _load_portable(self.directory / entry.portable_file)
            else:
                self.estimators[entry.file] = _load_model(self.directory / entry.file)

    def stale_reason(self, benchmark: str, harness: str, feature_names: list[str]) -> str | None:
        """Why this bundle cannot decide for `benchmark` now, or None: no model of it, a feature it
        was trained on that the catalogue (`feature_names`) no longer has, or the benchmark's
        configuration (`harness`, its digest) changed since training.  Each says what fixes it.
        A catalogue that gained features, or lists them in another order, is no reason: the model
        reads its own columns by name, in its own order (models.design.model_inputs)."""
        if self.entry_for(benchmark) is None:
            return "the model bundle has no model for this benchmark (run selector train)"
        if missing := self.missing_features(feature_names):
            return (f"the model was trained on features this version no longer computes ({', '.join(missing)}); "
                    "run selector train")
        if self.settings.get("harness", {}).get(benchmark) not in (None, harness):
            return "the benchmark's configuration changed since the model was trained (run selector train)"
        return None

    def missing_features(self, feature_names: list[str]) -> list[str]:
        """The bundle's features that `feature_names` (the catalogue) does not have."""
        known = set(feature_names)
        return [name for name in self.feature_names if name not in known]

    def entry_for(self, benchmark: str) -> BundleEntry | None:
        for entry in self.entries:
            if entry.benchmark == benchmark:
                return entry
        return next((entry for entry in self.entries if entry.benchmark is None), None)


def save_bundle(directory: Path, fitted: list["FittedModel"], feature_names: list[str], trained_on: dict, settings: dict,
                training_inputs: dict | None = None) -> Bundle:
    """Write the bundle whole into a temporary directory, then swap it into place.

    ``training_inputs`` maps each model's benchmark (None: pooled) to the design matrix it
    was trained on: with it, each model that converts is also written as ONNX, checked
    against the estimator on those inputs."""
    import skops.io as sio

    directory = Path(directory)
    directory.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{directory.name}.", dir=directory.parent))
    entries = []
    for model in fitted:
        file = f"{_file_stem(model.benchmark)}.skops"
        sio.dump(model.estimator, staging / file)
        entry = BundleEntry(model.benchmark, model.spec_name, model.scope, model.threshold, file,
                            _sha256(staging / file), model.training_tuples, model.training_positives,
                            model.fallback, model.columns)
        inputs = (training_inputs or {}).get(model.benchmark)
        portable = export_onnx(model.estimator, inputs) if inputs is not None else None
        if portable is not None:
            entry.portable_file = f"{_file_stem(model.benchmark)}.onnx"
            (staging / entry.portable_file).write_bytes(portable)
            entry.portable_sha256 = _sha256(staging / entry.portable_file)
        entries.append(entry)
    bundle = Bundle(entries, feature_names, trained_on, settings)
    manifest = {"format": BUNDLE_FORMAT, "created": bundle.created, "feature_names": feature_names,
                "trained_on": trained_on, "settings": settings, "entries": [asdict(e) for e in entries]}
    text = json.dumps(manifest, indent=2, default=str).encode()
    (staging / MANIFEST).write_bytes(text)
    old = directory.with_name(directory.name + ".old")
    if directory.exists():
        os.replace(directory, old)
    os.replace(staging, directory)
    # Sealed last: a run killed between the swap and the seal leaves a bundle that is
    # refused (retrain), never a half-written one that is used.
    seal = seal_path(directory)
    temporary = seal.with_name(f".{seal.name}.{os.getpid()}")
    temporary.write_text(hashlib.sha256(text).hexdigest() + "\n")
    os.replace(temporary, seal)
    shutil.rmtree(old, ignore_errors=True)
    return bundle


def seal_path(directory: Path) -> Path:
    """The file beside a bundle directory that holds its manifest's SHA-256."""
    directory = Path(directory)
    return directory.with_name(f"{directory.name}.sha256")


def load_bundle(directory: Path, load_models: bool = True, portable: bool = False) -> Bundle:
    """Read and verify a bundle.  With ``portable``, the ONNX files are loaded instead of the
    skops ones when every entry has one and onnxruntime is installed."""
    directory = Path(directory)
    manifest_path = directory / MANIFEST
    if not manifest_path.is_file():
        raise BundleError(f"{directory}: no model bundle here (run `selector train`)")
    text = manifest_path.read_bytes()
    _check_seal(directory, manifest_path, text)
    try:
        manifest = json.loads(text)
        entries = [BundleEntry(**entry) for entry in manifest["entries"]]
    except (ValueError, KeyError, TypeError) as error:
        raise BundleError(f"{manifest_path}: not a readable bundle manifest ({error})") from None
    if manifest.get("format") != BUNDLE_FORMAT:
        raise BundleError(f"{manifest_path}: bundle format {manifest.get('format')!r}, this version reads {BUNDLE_FORMAT}")
    for entry in entries:
        _check_entry(manifest_path, entry, manifest["feature_names"])
    bundle = Bundle(entries, manifest["feature_names"], manifest["trained_on"], manifest["settings"], manifest["created"],
                    directory=directory)
    for entry in entries:
        _verified(directory, entry.file, entry.sha256)
        if entry.portable_file:
            _verified(directory, entry.portable_file, entry.portable_sha256)
    if load_models:
        bundle.load_estimators(portable)
    return bundle


def _check_seal(directory: Path, manifest_path: Path, text: bytes) -> None:
    seal = seal_path(directory)
    try:
        recorded = seal.read_text().strip()
    except OSError:
        raise BundleError(f"{seal}: the bundle's seal is missing; run `selector train` again") from None
    if hashlib.sha256(text).hexdigest() != recorded:
        raise BundleError(f"{manifest_path}: does not match its seal ({seal.name}); the manifest was modified or damaged. "
                          "Run `selector train` again")


def _check_entry(manifest_path: Path, entry: BundleEntry, feature_names: list[str]) -> None:
    """A sealed manifest can still be one written by hand: refuse what training never writes."""
    from perf_selector.models.design import BENCHMARK_PREFIX

    where = f"{manifest_path}: the {entry.benchmark or 'pooled'} model"
    # -inf: a model that learnt from no change runs everything (models.evaluation.RUN_EVERYTHING)
    if not isinstance(entry.threshold, (int, float)) or not (0.0 <= entry.threshold <= 1.0 or entry.threshold == -math.inf):
        raise BundleError(f"{where} has threshold {entry.threshold!r}, outside [0, 1]; refused")
    features, rest = list(entry.columns[: len(feature_names)]), list(entry.columns[len(feature_names) :])
    one_hot = entry.benchmark is None and all(c.startswith(BENCHMARK_PREFIX) for c in rest) and len(set(rest)) == len(rest)
    if features != list(feature_names) or (rest and not one_hot):
        raise BundleError(f"{where} has columns that are not the manifest's features in order; refused")


def _verified(directory: Path, file: str, sha256: str | None) -> Path:
    path = directory / file
    if Path(file).name != file or not path.is_file():
        raise BundleError(f"{path}: missing from the bundle")
    if _sha256(path) != sha256:
        raise BundleError(f"{path}: does not match the manifest's SHA-256; the bundle was modified or damaged. "
                          "Run `selector train` again")
    return path


def _onnxruntime_installed() -> bool:
    import importlib.util

    return importlib.util.find_spec("onnxruntime") is not None


def _load_portable(path: Path) -> PortableModel:
    try:
        return PortableModel(path)
    except Exception as error:  # onnxruntime raises its own kinds on a malformed graph
        raise BundleError(f"{path}: not a readable ONNX model ({error})") from None


def _load_model(path: Path):
    import skops.io as sio

    try:
        data = _in_this_layout(path.read_bytes())
        untrusted = set(sio.get_untrusted_types(data=data))
    except Exception as error:  # skops raises many kinds on a malformed archive
        raise BundleError(f"{path}: not a readable model file ({error})") from None
    unexpected = untrusted - TRUSTED_TYPES
    if unexpected:
        raise BundleError(f"{path}: holds object types this tool never writes ({', '.join(sorted(unexpected))}); refused")
    try:
        return sio.loads(data, trusted=sorted(untrusted))
    except Exception as error:
        raise BundleError(f"{path}: could not be loaded ({error})") from None


# Bundles written before the one install namespace name our classes by their top-level
# modules ("perf_selector.models.perphecy"); skops would import that name, which may be a user's own
# `models` package.  Their archives are read as if written now (perf_selector.models...),
# after the bundle's digests were checked on the file as it is.
_OLD_LAYOUT = re.compile(r"^(collectors|storage|features|models|selector)(\.|$)")


def _in_this_layout(data: bytes) -> bytes:
    import zipfile

    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        schema = json.loads(archive.read("schema.json"))
        if not _names_old_modules(schema):
            return data
        rewritten = io.BytesIO()
        with zipfile.ZipFile(rewritten, "w", compression=zipfile.ZIP_DEFLATED) as copy:
            for item in archive.infolist():
                content = archive.read(item)
                if item.filename == "schema.json":
                    content = json.dumps(_renamed_modules(schema)).encode()
                copy.writestr(item, content)
    return rewritten.getvalue()


def _names_old_modules(node) -> bool:
    if isinstance(node, dict):
        return any((key == "__module__" and isinstance(value, str) and _OLD_LAYOUT.match(value))
                   or _names_old_modules(value) for key, value in node.items())
    return isinstance(node, list) and any(_names_old_modules(item) for item in node)


def _renamed_modules(node):
    if isinstance(node, dict):
        return {key: (f"perf_selector.{value}" if key == "__module__" and isinstance(value, str)
                      and _OLD_LAYOUT.match(value) else _renamed_modules(value)) for key, value in node.items()}
    if isinstance(node, list):
        return [_renamed_modules(item) for item in node]
    return node


def _file_stem(benchmark: str | None) -> str:
    if benchmark is None:
        return "pooled"
    safe = "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in benchmark)
    return f"benchmark-{safe}-{hashlib.sha256(benchmark.encode()).hexdigest()[:8]}"


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()
