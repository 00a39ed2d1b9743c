"""The Parquet store: atomic files, resumable, corrupt files named."""

from __future__ import annotations

import os
import subprocess
import sys

import pandas as pd
import pyarrow as pa
import pytest

from perf_selector.storage.store import Store, StoreError


def arrow(frame: pd.DataFrame) -> pa.Table:
    return pa.Table.from_pandas(frame, preserve_index=False)


def test_round_trip_and_keys(tmp_path):
    store = Store(tmp_path / "store")
    frame = pd.DataFrame({"name": ["a", "b"], "callees": [["x"], []], "size": [1, 2]})
    store.write("functions", "c1", arrow(frame))
    store.write("functions", "c2", arrow(frame.assign(size=[3, 4])))
    assert store.keys("functions") == ["c1", "c2"]
    both = store.read("functions")
    assert both["size"].to_pylist() == [1, 2, 3, 4]
    assert store.read_one("functions", "c1")["callees"][0].as_py() == ["x"]
    store.write("functions", "c1", arrow(frame.head(1)))  # a rewrite replaces, never appends
    assert len(store.read_one("functions", "c1")) == 1


def test_unknown_table_is_a_programming_error(tmp_path):
    with pytest.raises(ValueError):
        Store(tmp_path).write("nonsense", "k", arrow(pd.DataFrame({"a": [1]})))


def test_leftover_temporaries_are_ignored_and_swept(tmp_path):
    store = Store(tmp_path / "store")
    store.write("commits", "c1", arrow(pd.DataFrame({"sha": ["c1"]})))
    leftover = tmp_path / "store" / "commits" / "c2.parquet.tmp-deadbeef"
    leftover.write_bytes(b"half a file")
    assert store.keys("commits") == ["c1"]
    # A live writer's temporary (its pid in the name) is left alone; a dead one's is swept.
    live = tmp_path / "store" / "commits" / f"c3.parquet.tmp-{os.getpid()}-abc"
    live.write_bytes(b"being written")
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True).stdout.strip()
    (tmp_path / "store" / "commits" / f"c4.parquet.tmp-{dead}-abc").write_bytes(b"killed writer")
    assert store.sweep_temporaries() == 2 and not leftover.exists() and live.exists()


def test_failed_write_leaves_nothing_behind(tmp_path):
    store = Store(tmp_path / "store")
    store.write("commits", "c1", arrow(pd.DataFrame({"sha": ["c1"]})))
    with pytest.raises(Exception):
        store.write("commits", "c1", pa.table({"parents": ["not a list"]}))  # cannot be cast to its declared type
    assert store.read_one("commits", "c1")["sha"].to_pylist() == ["c1"]
    assert [p.name for p in (tmp_path / "store" / "commits").iterdir()] == ["c1.parquet"]


def test_corrupt_file_is_named_with_the_way_out(tmp_path):
    store = Store(tmp_path / "store")
    store.write("functions", "c1", arrow(pd.DataFrame({"name": ["a"] * 100})))
    path = tmp_path / "store" / "functions" / "c1.parquet"
    path.write_bytes(path.read_bytes()[:40])
    with pytest.raises(StoreError) as caught:
        store.read("functions")
    assert "c1.parquet" in str(caught.value) and "selector collect" in str(caught.value)


def test_binaries_are_content_addressed(tmp_path):
    store = Store(tmp_path / "store")
    first, second = tmp_path / "a", tmp_path / "b"
    first.write_bytes(b"same bytes")
    second.write_bytes(b"same bytes")
    assert store.put_binary(first) == store.put_binary(second)
    assert len(list((tmp_path / "store" / "binaries").iterdir())) == 1


def test_a_store_at_an_fsspec_url_works_like_a_local_one(tmp_path):
    """URLs go through fsspec (here its in-memory filesystem); local paths never import it."""
    import subprocess
    import sys
    import uuid

    store = Store(f"memory://selector-test-{uuid.uuid4().hex}/store")
    assert store.location.startswith("memory://")
    frame = pd.DataFrame({"name": ["a", "b"], "callees": [["x"], []], "size": [1, 2]})
    store.write("functions", "c1", arrow(frame))
    store.write("functions", "c2", arrow(frame.assign(size=[3, 4])))
    assert store.keys("functions") == ["c1", "c2"] and store.has("functions", "c1") and not store.has("functions", "c3")
    assert store.read("functions")["size"].to_pylist() == [1, 2, 3, 4]
    store.set_owner("analyses", "digest", "c1")
    store.set_owner("measured", "digest", "c2")
    assert store.owner("analyses", "digest") == "c1" and store.owner("analyses", "other") is None
    assert store.owner("measured", "digest") == "c2"
    with pytest.raises(ValueError):
        store.owner("elsewhere", "digest")
    binary = tmp_path / "prog"
    binary.write_bytes(b"\x7fELF and the rest")
    assert open(store.local_binary(store.put_binary(binary)), "rb").read() == binary.read_bytes()
    store.delete("functions", "c1")
    assert store.keys("functions") == ["c2"] and store.sweep_temporaries() == 0

    probe = f"from perf_selector.storage.store import Store; import sys; Store({str(tmp_path / 'local')!r}); print('fsspec' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout.strip() == "False"


def test_small_tables_are_read_from_a_snapshot_that_follows_every_change(tmp_path):
    """commits and labels are read whole on every select: one snapshot file instead of a
    file per commit, made again whenever a file of the table was added, rewritten or removed."""
    store = Store(tmp_path / "store")
    for i in range(5):
        store.write("commits", f"c{i}", arrow(pd.DataFrame({"sha": [f"c{i}"], "parents": [[f"c{i - 1}"]], "build_status": "ok"})))
    snapshot = tmp_path / "store" / "snapshots" / "commits.parquet"

    def by_files() -> pa.Table:  # the reader without a snapshot
        return store.read("commits", keys=store.keys("commits"))

    first = store.read("commits")
    assert snapshot.is_file() and first.equals(by_files())
    made = snapshot.stat().st_mtime_ns
    assert store.read("commits").equals(first) and snapshot.stat().st_mtime_ns == made  # read from it, not made again

    store.write("commits", "c5", arrow(pd.DataFrame({"sha": ["c5"], "parents": [["c4"]], "build_status": "failed", "extra": [1.5]})))
    added = store.read("commits")
    assert added["sha"].to_pylist() == [f"c{i}" for i in range(6)] and added.equals(by_files())
    store.write("commits", "c2", arrow(pd.DataFrame({"sha": ["c2"], "parents": [["c1"]], "build_status": "failed"})))
    assert store.read("commits").to_pandas().set_index("sha").loc["c2", "build_status"] == "failed"
    store.delete("commits", "c0")
    assert "c0" not in set(store.read("commits")["sha"].to_pylist())

    snapshot.write_bytes(b"scribbled")  # a damaged snapshot is made again, never trusted
    assert store.read("commits").equals(by_files())

    store.write("commits", "c6", arrow(pd.DataFrame({"sha": ["c6"], "parents": [["c5"]], "build_status": "ok"})))
    store.refresh_snapshots()  # what collect and record end with
    made = snapshot.stat().st_mtime_ns
    assert "c6" in set(store.read("commits")["sha"].to_pylist()) and snapshot.stat().st_mtime_ns == made


def _measurements(commit: str) -> pd.DataFrame:
    rows = [{"commit": commit, "benchmark": f"b{b}", "metric": "instructions", "repetition": r, "run_order": 4 * b + r,
             "value": 1_019_992.0 + 7 * b + r, "status": "ok", "error": "", "seconds": 0.25 + b / 100, "host": "ci"}
            for b in range(6) for r in range(4)]
    return pd.DataFrame(rows)


def _flipped_reads(path, read, positions) -> tuple[int, int]:
    """(reads that failed with a StoreError, reads that returned changed values) over flips of
    one byte at each position; the file is restored after each."""
    original = path.read_bytes()
    expected = read()
    errors = silent = 0
    for position in positions:
        for mask in (0x01, 0xFF):
            damaged = bytearray(original)
            damaged[position] ^= mask
            path.write_bytes(bytes(damaged))
            os.utime(path, ns=(1, 1))  # same size and an old time: only the bytes tell
            try:
                found = read()
            except StoreError:
                errors += 1
                continue
            if not found.equals(expected):
                silent += 1
    path.write_bytes(original)
    return errors, silent


def test_no_flipped_byte_of_a_data_file_changes_a_value_silently(tmp_path):
    store = Store(tmp_path / "store")
    for commit in ("c1", "c2", "c3"):
        store.write("measurements", commit, arrow(_measurements(commit)))
    path = tmp_path / "store" / "measurements" / "c2.parquet"
    size = path.stat().st_size
    positions = range(size) if size <= 8000 else sorted(set(range(0, size, size // 1200)) | set(range(size - 400, size)))
    assert len(positions) >= 1000  # every byte of the file (two masks each), or 1,200 and the whole footer
    one = lambda: store.read_one("measurements", "c2").to_pandas().sort_values("run_order").reset_index(drop=True)  # noqa: E731
    errors, silent = _flipped_reads(path, one, positions)
    assert silent == 0 and errors == 2 * len(positions)
    # The whole table (many files at once: the dataset reader) names the damaged file.
    damaged = bytearray(path.read_bytes())
    damaged[size // 2] ^= 0x01
    path.write_bytes(bytes(damaged))
    with pytest.raises(StoreError, match="c2.parquet"):
        store.read("measurements", keys=["c1", "c2", "c3"])


def test_a_damaged_snapshot_is_made_again_never_served(tmp_path):
    store = Store(tmp_path / "store")
    for commit in ("c1", "c2"):
        store.write("measurements", commit, arrow(_measurements(commit)))
    store.refresh_snapshots()
    snapshot = tmp_path / "store" / "snapshots" / "measurements.parquet"
    size = snapshot.stat().st_size
    positions = range(size) if size <= 8000 else sorted(set(range(0, size, size // 1200)) | set(range(size - 400, size)))
    assert len(positions) >= 1000
    whole = lambda: store.read("measurements").to_pandas().sort_values(["commit", "run_order"]).reset_index(drop=True)  # noqa: E731
    original = snapshot.read_bytes()
    expected = whole()
    silent = 0
    for position in positions:
        damaged = bytearray(original)
        damaged[position] ^= 0x01
        snapshot.write_bytes(bytes(damaged))
        if not whole().equals(expected):
            silent += 1
    assert silent == 0


def test_a_store_made_by_this_version_refuses_a_file_without_its_digest(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    store = Store(tmp_path / "store")
    assert (tmp_path / "store" / "FORMAT").read_text().strip() == "2" and store.verified
    (tmp_path / "store" / "measurements").mkdir()
    pq.write_table(pa.Table.from_pandas(_measurements("c1")), tmp_path / "store" / "measurements" / "c1.parquet")
    with pytest.raises(StoreError, match="no digest"):
        store.read_one("measurements", "c1")
    # A store made by an earlier version (no FORMAT) reads its older files unverified.
    legacy = tmp_path / "legacy"
    (legacy / "measurements").mkdir(parents=True)
    pq.write_table(pa.Table.from_pandas(_measurements("c1")), legacy / "measurements" / "c1.parquet")
    old = Store(legacy)
    assert not old.verified and len(old.read_one("measurements", "c1")) == 24
    old.write("measurements", "c2", arrow(_measurements("c2")))
    damaged = bytearray((legacy / "measurements" / "c2.parquet").read_bytes())
    damaged[100] ^= 0x01
    (legacy / "measurements" / "c2.parquet").write_bytes(bytes(damaged))
    with pytest.raises(StoreError, match="c2.parquet"):
        old.read_one("measurements", "c2")  # its new files carry their digest, and are verified


def test_read_only_opening_never_makes_a_store(tmp_path):
    with pytest.raises(StoreError, match="no store here"):
        Store(tmp_path / "typo", create=False)
    assert not (tmp_path / "typo").exists()
    (tmp_path / "file").write_text("not a store")
    with pytest.raises(StoreError, match="is a file"):
        Store(tmp_path / "file")


def test_a_damaged_calibration_file_names_calibrate_as_the_remedy(tmp_path):
    store = Store(tmp_path / "store")
    store.write("calibration", "fib", arrow(pd.DataFrame([{"benchmark": "fib", "metric": "instructions", "exact": True}])))
    path = tmp_path / "store" / "calibration" / "fib.parquet"
    path.write_bytes(path.read_bytes()[:-20])
    for read in (lambda: store.read("calibration"), lambda: store.read_one("calibration", "fib")):
        with pytest.raises(StoreError, match="fib.parquet.*selector calibrate"):
            read()


def test_every_table_a_collection_writes_is_as_declared(evolved_sample):
    """storage/schema.py is the store's contract: a real collection (the demo history,
    calibrated, collected with callgrind profiles) writes exactly its columns, of its types."""
    import pyarrow.parquet as pq

    from perf_selector.storage.schema import TABLES

    root, _ = evolved_sample
    for name, schema in TABLES.items():
        if name == "confirmations":
            continue  # written by `selector confirm`, not a collection: tests/test_confirmation.py checks it
        files = sorted((root / ".selector" / name).glob("*.parquet"))
        assert files, f"the collection wrote no {name}"
        assert [problem for path in files for problem in schema.mismatches(pq.read_schema(path))] == []


def test_the_store_document_is_written_from_the_schemas():
    import pyarrow as pa

    from perf_selector.storage.schema import DOCUMENT, TABLES, render

    document = DOCUMENT.read_text()
    assert document == render(document)
    assert all(f"| {column.name} |" in document for schema in TABLES.values() for column in schema.columns)
    # a departure is named: a missing column, an undeclared one, another type (an all-null column conforms)
    measurements = TABLES["measurements"].arrow
    departed = measurements.remove(measurements.get_field_index("unit")).append(pa.field("extra", pa.int64()))
    departed = departed.set(departed.get_field_index("value"), pa.field("value", pa.string()))
    assert TABLES["measurements"].mismatches(departed) == [
        "measurements: column unit is missing", "measurements: column extra is not declared",
        "measurements.value: string, declared double"]
    nulls = measurements.set(measurements.get_field_index("value"), pa.field("value", pa.null()))
    assert TABLES["measurements"].mismatches(nulls) == []


def test_a_store_of_a_newer_format_is_refused_not_misread(tmp_path):
    from perf_selector.storage.store import FORMAT_VERSION

    Store(tmp_path / "store")  # made by this version
    (tmp_path / "store" / "FORMAT").write_text(f"{FORMAT_VERSION + 1}\n")
    with pytest.raises(StoreError, match="written by a newer perf-selector.*upgrade"):
        Store(tmp_path / "store")
