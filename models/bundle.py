"""Model bundles: trained models and their operating points, safe to load.

A bundle is a directory::

    manifest.json          what was trained on what, thresholds, each file's SHA-256
    <benchmark>.skops      one model per benchmark (or pooled.skops)

Models are written with skops, which rebuilds objects from an explicit description
instead of unpickling: loading never runs code hidden in the file.  Loading refuses a
bundle whose files do not match the manifest's digests (tampered or damaged), and any
object type outside the small list this package trains.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path

import skops.io as sio

from models.backtest import FittedModel

BUNDLE_FORMAT = 1
MANIFEST = "manifest.json"
# Everything a trained model may contain beyond what skops trusts by default.
TRUSTED_TYPES = frozenset({
    "models.baselines.AlwaysRun", "models.baselines.HistoryOnly", "models.baselines.ReachedChanged",
    "models.perphecy.PerphecyPredictor", "models.registry.BalancedXGBClassifier", "models.registry.PlattSVC",
    "sklearn.tree._tree.Tree", "xgboost.core.Booster",
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


@dataclass
class Bundle:
    entries: list[BundleEntry]
    feature_names: list[str]
    trained_on: dict  # commits, newest commit and its time, benchmarks
    settings: dict  # target hit rate, seed, ...
    created: str = field(default_factory=lambda: datetime.now(timezone.utc).isoformat(timespec="seconds"))
    estimators: dict[str, object] = field(default_factory=dict, repr=False)  # file -> loaded estimator

    def entry_for(self, benchmark: str) -> BundleEntry | None:
        for entry in self.entries:
            if entry.benchmark == benchmark:
                return entry
        return next((entry for entry in self.entries if entry.benchmark is None), None)


def save_bundle(directory: Path, fitted: list[FittedModel], feature_names: list[str], trained_on: dict, settings: dict) -> Bundle:
    """Write the bundle whole into a temporary directory, then swap it into place."""
    directory = Path(directory)
    directory.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{directory.name}.", dir=directory.parent))
    entries = []
    for model in fitted:
        file = f"{_file_stem(model.benchmark)}.skops"
        sio.dump(model.estimator, staging / file)
        entries.append(BundleEntry(model.benchmark, model.spec_name, model.scope, model.threshold, file,
                                   _sha256(staging / file), model.training_tuples, model.training_positives,
                                   model.fallback, model.columns))
    bundle = Bundle(entries, feature_names, trained_on, settings)
    manifest = {"format": BUNDLE_FORMAT, "created": bundle.created, "feature_names": feature_names,
                "trained_on": trained_on, "settings": settings, "entries": [asdict(e) for e in entries]}
    (staging / MANIFEST).write_text(json.dumps(manifest, indent=2, default=str))
    old = directory.with_name(directory.name + ".old")
    if directory.exists():
        os.replace(directory, old)
    os.replace(staging, directory)
    shutil.rmtree(old, ignore_errors=True)
    return bundle


def load_bundle(directory: Path, load_models: bool = True) -> Bundle:
    directory = Path(directory)
    manifest_path = directory / MANIFEST
    if not manifest_path.is_file():
        raise BundleError(f"{directory}: no model bundle here (run `selector train`)")
    try:
        manifest = json.loads(manifest_path.read_text())
        entries = [BundleEntry(**entry) for entry in manifest["entries"]]
    except (ValueError, KeyError, TypeError) as error:
        raise BundleError(f"{manifest_path}: not a readable bundle manifest ({error})") from None
    if manifest.get("format") != BUNDLE_FORMAT:
        raise BundleError(f"{manifest_path}: bundle format {manifest.get('format')!r}, this version reads {BUNDLE_FORMAT}")
    bundle = Bundle(entries, manifest["feature_names"], manifest["trained_on"], manifest["settings"], manifest["created"])
    for entry in entries:
        path = directory / entry.file
        if Path(entry.file).name != entry.file or not path.is_file():
            raise BundleError(f"{path}: missing from the bundle")
        if _sha256(path) != entry.sha256:
            raise BundleError(f"{path}: does not match the manifest's SHA-256; the bundle was modified or damaged. "
                              "Run `selector train` again")
        if load_models:
            bundle.estimators[entry.file] = _load_model(path)
    return bundle


def _load_model(path: Path):
    try:
        untrusted = set(sio.get_untrusted_types(file=path))
    except Exception as error:  # skops raises many kinds on a malformed archive
        raise BundleError(f"{path}: not a readable model file ({error})") from None
    unexpected = untrusted - TRUSTED_TYPES
    if unexpected:
        raise BundleError(f"{path}: holds object types this tool never writes ({', '.join(sorted(unexpected))}); refused")
    try:
        return sio.load(path, trusted=sorted(untrusted))
    except Exception as error:
        raise BundleError(f"{path}: could not be loaded ({error})") from None


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
