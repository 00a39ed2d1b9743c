"""A project's evaluation pack: what `selector evaluate` needs of a store, small enough to commit.

A store holds every function of every binary and every profile of every run (hundreds of
megabytes for a corpus history, hours of collection).  Of those, Method 4, leave one
project out, the shipped bundle's training and day one read only the commits, the
measurements, what labels them (calibration, confirmations, perturbed contexts) and the
labelled features of the tuples their protocols use.  A pack keeps exactly that: the small
tables whole, the profiles and functions reduced to which (commit, benchmark) was profiled
and which commit was analysed (what the sampling protocols ask of them), and one feature
table, with labels, measured effects and hops, of every tuple that Method 4 (at the options
packed) and the closest-ancestor protocols (day one) use.  So `evaluate` and the shipped
bundle are rebuilt from the packs in minutes on any machine, with the figures the stores
give (tests/test_evaluation_pack.py checks it).

What a pack cannot give is a tuple it does not hold: other Method 4 options, or the replay,
whose skipped runs move the comparison to any older ancestor.  Those are refused, naming the
store to collect.
"""

from __future__ import annotations

import json
import shutil
from datetime import datetime, timezone
from pathlib import Path
from typing import Mapping

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from perf_selector.collectors.errors import UserError
from perf_selector.features.catalogue import FEATURE_NAMES
from perf_selector.features.tuples import TUPLE_KEYS
from perf_selector.storage.history import History, load_history
from perf_selector.storage.store import Store

MANIFEST = "pack.json"
FORMAT = 1
FEATURES = "features"
# read whole: small, and what labels a pair (storage.labels.PairLabeller) and plans a protocol
WHOLE_TABLES = ("commits", "measurements", "labels", "calibration", "confirmations", "perturbed")
# The protocols a pack serves: Method 4 at evaluate's defaults, and every closest-ancestor pair
# (k-fold's tuples: day one, `evaluate --shipped`).
METHOD4_DEFAULTS = {"k": 5, "first": None, "epoch_days": None}
CLOSEST_PAIRS = ("kfold", {"folds": 2})


def is_pack(location: str | Path) -> bool:
    return (Path(location) / MANIFEST).is_file()


class Pack:
    """A pack read back: `read` answers as Store.read does for the tables it keeps."""

    def __init__(self, location: str | Path) -> None:
        self.location = Path(location)
        try:
            self.manifest = json.loads((self.location / MANIFEST).read_text())
        except (OSError, ValueError) as error:
            raise UserError(f"{self.location}: not a readable evaluation pack ({error})") from None
        if self.manifest.get("format") != FORMAT:
            raise UserError(f"{self.location}: pack format {self.manifest.get('format')}, this version reads {FORMAT}; "
                            "write it again with `selector pack`")

    def read(self, table: str) -> pa.Table:
        path = self.location / f"{table}.parquet"
        return pq.read_table(path) if path.is_file() else pa.table({})

    def history(self) -> History:
        """The history the sampling protocols need: commits, measurements, labels, and the
        profiled pairs and analysed commits (profiles and functions reduced to their keys)."""
        return History(commits=self.read("commits"), functions=self.read("functions"), profiles=self.read("profiles"),
                       measurements=self.read("measurements"), labels=self.read("labels"))

    def labelled_features(self, tuples: pd.DataFrame, method: str) -> pd.DataFrame:
        """The packed features, labels and effects of `tuples`, in their order, with their hops;
        refused when the pack does not hold one of them."""
        packed = pd.read_parquet(self.location / f"{FEATURES}.parquet")
        found = tuples[TUPLE_KEYS].merge(packed, on=TUPLE_KEYS, how="left", indicator=True)
        missing = int((found["_merge"] != "both").sum())
        if missing:
            raise UserError(f"{self.location}: the pack holds the tuples of {self.manifest['protocols']}; {method} at these "
                            f"options needs {missing} more; evaluate the store ({self.manifest.get('store')}) instead")
        table = with_every_feature(found.drop(columns=["_merge", "hops"], errors="ignore"))
        table["hops"] = tuples["hops"].to_numpy()
        table["label"] = table["label"].astype("boolean")
        return table


def with_every_feature(table: pd.DataFrame) -> pd.DataFrame:
    """`table` with a column for each feature of the catalogue: one the catalogue gained since the
    pack was made is unknown (NaN) on its tuples."""
    return table.reindex(columns=[*table.columns, *(name for name in FEATURE_NAMES if name not in table)])


def write_pack(store: Store, config_path: Path, out: Path, method4: Mapping = METHOD4_DEFAULTS) -> dict:
    """Writes the pack of `store` (configured by `config_path`) into `out`, replacing what was
    there only once the whole pack is written.  Returns its manifest."""
    from perf_selector.models.sampling import make_plan
    from perf_selector.selector.config import load_config
    from perf_selector.selector.evaluation.feature_table import benchmarks_of
    from perf_selector.selector.evaluation.store_backtest import labelled_feature_table

    config = load_config(config_path)
    history = load_history(store)
    benchmarks = benchmarks_of(history)
    if not benchmarks:
        raise UserError(f"{store.location}: no measurements to pack; run `selector collect` first")
    plans = {"method4": make_plan("method4", history, benchmarks, **method4),
             CLOSEST_PAIRS[0]: make_plan(CLOSEST_PAIRS[0], history, benchmarks, **CLOSEST_PAIRS[1])}
    tuples = pd.concat([plan.tuples for plan in plans.values()], ignore_index=True)
    tuples = tuples.drop_duplicates(TUPLE_KEYS, ignore_index=True)
    table = labelled_feature_table(store, config, history, tuples).drop(columns=["hops"])

    staging = out.with_name(out.name + ".tmp")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    for name in WHOLE_TABLES:
        rows = history.commits if name == "commits" else store.read(name)  # commits: build configs made current
        if rows.num_columns:
            _write(rows, staging / f"{name}.parquet")
    _write(history.profiles.select(["commit", "benchmark"]).group_by(["commit", "benchmark"]).aggregate([]),
           staging / "profiles.parquet")
    _write(history.functions.select(["commit"]).group_by(["commit"]).aggregate([]), staging / "functions.parquet")
    _write(pa.Table.from_pandas(table, preserve_index=False), staging / f"{FEATURES}.parquet")
    shutil.copyfile(config_path, staging / "selector.toml")
    manifest = {
        "format": FORMAT,
        "store": str(store.location),
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "features_by": features_by(),
        "protocols": {"method4": dict(method4), CLOSEST_PAIRS[0]: CLOSEST_PAIRS[1]},
        "commits": len(history.built()),
        "benchmarks": benchmarks,
        "tuples": len(table),
        "labelled": int(table["label"].notna().sum()),
        "changed": int((table["label"] == True).sum()),  # noqa: E712
    }
    (staging / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n")
    shutil.rmtree(out, ignore_errors=True)
    staging.replace(out)
    return manifest


def features_by() -> str:
    """Which code computed a pack's features: the installed version, and the source's commit
    when it runs from a git checkout (with "-dirty" when the package's own folders have changes;
    a pack rewritten in the checkout is not).  The features of one store move with the code that
    reads it (a fix to the size estimate moves `predicted_effect`, not the labels), so packs made
    at different times are told apart by it."""
    from perf_selector import collectors, features, models, selector, storage
    from perf_selector.collectors.repository import Repository

    folders = [str(Path(package.__file__).resolve().parent) for package in (collectors, features, models, selector, storage)]
    try:
        source = Repository.open(folders[0])
        # a wheel installed into a virtualenv inside some other checkout is in no commit of it
        tracked = source.git("ls-files", "--", folders[0])
        head = source.git("rev-parse", "--short=12", "HEAD")
        dirty = source.git("status", "--porcelain", "--untracked-files=no", "--", *folders)
    except UserError:  # not in a checkout, or no git: the version says it
        return selector.__version__
    return f"{selector.__version__} ({head}{'-dirty' if dirty else ''})" if tracked else selector.__version__


def pack_evaluation_data(pack: Pack, config, method: str, options: Mapping):
    """store_backtest.evaluation_data of the pack: the plan made from its history, the tuples'
    labelled features read from it.  Method 4 is answered only at the options it was packed with."""
    from perf_selector.selector.evaluation.store_backtest import evaluation_data

    if method == "method4" and dict(options) != pack.manifest["protocols"]["method4"]:
        packed = pack.manifest["protocols"]["method4"]
        raise UserError(f"{pack.location}: packed for Method 4 with {packed}, asked {dict(options)}; "
                        f"evaluate the store ({pack.manifest.get('store')}) instead")
    return evaluation_data(pack, config, method, dict(options), history=pack.history(),
                           labelled=lambda tuples: pack.labelled_features(tuples, method))


def _write(table: pa.Table, path: Path) -> None:
    # zstd at a high level: packs are committed, and read in a moment whatever their compression
    pq.write_table(table, path, compression="zstd", compression_level=19)
