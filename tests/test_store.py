"""The Parquet store: atomic files, resumable, corrupt files named."""

from __future__ import annotations

import pandas as pd
import pytest

from selector.store import Store, StoreError


def test_round_trip_and_keys(tmp_path):
    store = Store(tmp_path / "store")
    frame = pd.DataFrame({"name": ["a", "b"], "callees": [["x"], []], "size": [1, 2]})
    store.write("functions", "c1", frame)
    store.write("functions", "c2", frame.assign(size=[3, 4]))
    assert store.keys("functions") == ["c1", "c2"]
    both = store.read("functions")
    assert list(both["size"]) == [1, 2, 3, 4]
    assert list(store.read_one("functions", "c1")["callees"].iloc[0]) == ["x"]
    store.write("functions", "c1", frame.head(1))  # a rewrite replaces, never appends
    assert len(store.read_one("functions", "c1")) == 1


def test_unknown_table_is_a_programming_error(tmp_path):
    with pytest.raises(ValueError):
        Store(tmp_path).write("nonsense", "k", pd.DataFrame({"a": [1]}))


def test_leftover_temporaries_are_ignored_and_swept(tmp_path):
    store = Store(tmp_path / "store")
    store.write("commits", "c1", pd.DataFrame({"sha": ["c1"]}))
    leftover = tmp_path / "store" / "commits" / "c2.parquet.tmp-deadbeef"
    leftover.write_bytes(b"half a file")
    assert store.keys("commits") == ["c1"]
    assert store.sweep_temporaries() == 1 and not leftover.exists()


def test_failed_write_leaves_nothing_behind(tmp_path):
    store = Store(tmp_path / "store")
    store.write("commits", "c1", pd.DataFrame({"sha": ["c1"]}))
    with pytest.raises(Exception):
        store.write("commits", "c1", pd.DataFrame({"bad": [object()]}))  # pyarrow cannot write it
    assert list(store.read_one("commits", "c1")["sha"]) == ["c1"]
    assert [p.name for p in (tmp_path / "store" / "commits").iterdir()] == ["c1.parquet"]


def test_corrupt_file_is_named_with_the_way_out(tmp_path):
    store = Store(tmp_path / "store")
    store.write("functions", "c1", pd.DataFrame({"name": ["a"] * 100}))
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
    store.write("functions", "c1", frame)
    store.write("functions", "c2", frame.assign(size=[3, 4]))
    assert store.keys("functions") == ["c1", "c2"] and store.has("functions", "c1") and not store.has("functions", "c3")
    assert list(store.read("functions")["size"]) == [1, 2, 3, 4]
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

    probe = f"from selector.store import Store; import sys; Store({str(tmp_path / 'local')!r}); print('fsspec' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout.strip() == "False"


def test_small_tables_are_read_from_a_snapshot_that_follows_every_change(tmp_path):
    """commits and labels are read whole on every select: one snapshot file instead of a
    file per commit, made again whenever a file of the table was added, rewritten or removed."""
    store = Store(tmp_path / "store")
    for i in range(5):
        store.write("commits", f"c{i}", pd.DataFrame({"sha": [f"c{i}"], "parents": [[f"c{i - 1}"]], "build_status": "ok"}))
    snapshot = tmp_path / "store" / "snapshots" / "commits.parquet"

    def by_files() -> pd.DataFrame:  # the reader without a snapshot
        return store.read("commits", keys=store.keys("commits"))

    first = store.read("commits")
    assert snapshot.is_file() and first.equals(by_files())
    made = snapshot.stat().st_mtime_ns
    assert store.read("commits").equals(first) and snapshot.stat().st_mtime_ns == made  # read from it, not made again

    store.write("commits", "c5", pd.DataFrame({"sha": ["c5"], "parents": [["c4"]], "build_status": "failed", "extra": [1.5]}))
    added = store.read("commits")
    assert list(added["sha"]) == [f"c{i}" for i in range(6)] and added.equals(by_files())
    store.write("commits", "c2", pd.DataFrame({"sha": ["c2"], "parents": [["c1"]], "build_status": "failed"}))
    assert store.read("commits").set_index("sha").loc["c2", "build_status"] == "failed"
    store.delete("commits", "c0")
    assert "c0" not in set(store.read("commits")["sha"])

    snapshot.write_bytes(b"scribbled")  # a damaged snapshot is made again, never trusted
    assert store.read("commits").equals(by_files())

    store.write("commits", "c6", pd.DataFrame({"sha": ["c6"], "parents": [["c5"]], "build_status": "ok"}))
    store.refresh_snapshots()  # what collect and record end with
    made = snapshot.stat().st_mtime_ns
    assert "c6" in set(store.read("commits")["sha"]) and snapshot.stat().st_mtime_ns == made
