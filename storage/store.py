"""The store: a directory of Parquet tables, one file per (table, key).

Each write goes to a temporary name in the same directory and is renamed into place,
so a reader never sees half a file, many workers can write at once, and a run killed
half way leaves only complete files behind (the temporaries are ignored and swept).
The location may be any fsspec URL; a local path is the default.  Files are reached
through pyarrow's filesystem layer: natively for local paths, and through fsspec for
URLs (fsspec is imported only then: its import is not free, and `selector select` opens
a local store on every push).

Tables (docs/store.md has their columns): ``commits`` and ``functions`` and
``objects`` keyed by commit sha; built binaries are kept content-addressed under
``binaries/<sha256>`` so an unchanged binary is stored and analysed once.

Every Parquet file carries the SHA-256 of its own bytes in its footer (the digest's
own 64 characters read as zeros while hashing) and CRC page checksums; a reader
verifies both, so a flipped byte anywhere in a file is an error naming it, never a
changed value.
"""

from __future__ import annotations

import hashlib
import os
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Callable

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from perf_selector.collectors.errors import UserError
from perf_selector.storage.schema import TABLES as SCHEMAS

TABLES = tuple(SCHEMAS)  # one file per key each: commits, functions, objects, measurements, profiles, labels, calibration,
# confirmations, perturbed
SUFFIX = ".parquet"
TEMPORARY = ".tmp-"
READ_THREADS = 8  # files read at once: I/O and Parquet decoding overlap
# Small tables read whole on every `select` (a file per commit): kept as one snapshot file too.
SNAPSHOT_TABLES = ("commits", "labels", "measurements", "calibration")
SNAPSHOTS = "snapshots"
SIGNATURE_KEY = b"selector.snapshot_of"
DIGEST_KEY = b"selector.sha256"  # footer metadata: the file's own digest
_PLACEHOLDER = b"0" * 64
# A store made by this version says so; its files must all carry their digest.  Stores
# made before (no such file) keep working: their older files are read unverified.
FORMAT_FILE, FORMAT_VERSION = "FORMAT", 2
TEMPORARY_MAX_AGE = 3600  # seconds: an older temporary of a remote store is a dead writer's
OWNER_INDEXES = ("analyses", "measured")  # key -> commit indexes (see Store.owner)


class StoreError(UserError):
    """A store file is unreadable; the message names it and how to recover."""


def _filesystem(location: str) -> tuple[pafs.FileSystem, str, bool]:
    """(filesystem, root path in it, local?) for a store location."""
    if "://" not in location or location.startswith("file://"):
        # Absolute, so worker processes started elsewhere find the same store.
        return pafs.LocalFileSystem(), os.path.abspath(location.removeprefix("file://")), True
    import fsspec

    fs, root = fsspec.core.url_to_fs(location)
    return pafs.PyFileSystem(pafs.FSSpecHandler(fs)), root, False


class Store:
    def __init__(self, location: str | os.PathLike[str], create: bool = True) -> None:
        """The store at `location`; made if missing when `create`, else a missing store is a
        StoreError (read-only commands never make one: a mistyped --store would read an
        empty store and select everything)."""
        self.fs, self.root, self._local = _filesystem(str(location))
        self.location = self.root if self._local else str(location)
        found = self.fs.get_file_info(self.root).type
        if found == pafs.FileType.File:
            raise StoreError(f"{self.location}: is a file, not a store directory")
        if found == pafs.FileType.NotFound:
            if not create:
                raise StoreError(f"{self.location}: no store here (collect into it first, or pass --store)")
            self.fs.create_dir(self.root, recursive=True)
        self.verified = self._format_version() >= FORMAT_VERSION

    def _format_version(self) -> int:
        path = f"{self.root}/{FORMAT_FILE}"
        if not self._exists(path):
            if self.fs.get_file_info(pafs.FileSelector(self.root)):
                return 1  # made by an earlier version
            try:
                self._atomic(path, lambda handle: handle.write(f"{FORMAT_VERSION}\n".encode()))
            except OSError:
                pass  # a read-only empty store: nothing in it to verify
            return FORMAT_VERSION
        with self.fs.open_input_stream(path, compression=None) as handle:
            text = handle.read().decode(errors="replace").strip()
        if not text.isdigit():
            raise StoreError(f"{path}: not a store format version ({text[:20]!r})")
        if int(text) > FORMAT_VERSION:  # its files may mean what this version cannot read
            raise StoreError(f"{self.location}: store format {text}, written by a newer perf-selector; this one reads "
                             f"formats up to {FORMAT_VERSION}: upgrade perf-selector")
        return int(text)

    def __repr__(self) -> str:
        return f"Store({self.location!r})"

    # ------------------------------------------------------------- tables
    def path(self, table: str, key: str) -> str:
        _check_table(table)
        return f"{self.root}/{table}/{key}{SUFFIX}"

    def write(self, table: str, key: str, rows: pa.Table) -> None:
        """Replace the file of (table, key) with `rows`, atomically, cast to the table's schema."""
        target = self.path(table, key)
        self.fs.create_dir(f"{self.root}/{table}", recursive=True)
        data = encode_parquet(SCHEMAS[table].conform(rows))
        self._atomic(target, lambda handle: handle.write(data))

    def has(self, table: str, key: str) -> bool:
        return self._exists(self.path(table, key))

    def keys(self, table: str) -> list[str]:
        _check_table(table)
        return [info.base_name[: -len(SUFFIX)] for info in self._table_files(table)]

    def _table_files(self, table: str) -> list[pafs.FileInfo]:
        """The table's files, by name (temporaries left out)."""
        found = self.fs.get_file_info(pafs.FileSelector(f"{self.root}/{table}", allow_not_found=True))
        return sorted((info for info in found if info.base_name.endswith(SUFFIX) and TEMPORARY not in info.base_name),
                      key=lambda info: info.base_name)

    def read(self, table: str, keys: list[str] | None = None) -> pa.Table:
        """All rows of a table (or of the given keys), one Arrow table (no columns when empty).

        Files are read in parallel threads (pyarrow releases the GIL); columns added by
        later versions are filled with nulls in older files.
        """
        combined = None
        if keys is None and self._local and table in SNAPSHOT_TABLES:
            combined = self._read_snapshot(table)
        if combined is None:
            keys = self.keys(table) if keys is None else keys
            if not keys:
                return pa.table({})
            combined = self._read_local(table, keys) if self._local else None
        if combined is None:
            with ThreadPoolExecutor(max_workers=READ_THREADS) as pool:
                tables = list(pool.map(lambda key: self._read_arrow(table, key), keys))
            tables = [t for t in tables if t.num_columns]
            if not tables:
                return pa.table({})
            combined = pa.concat_tables(tables, promote_options="permissive")
        return combined

    def _read_local(self, table: str, keys: list[str]) -> pa.Table | None:
        """Many local files as one Arrow dataset: footers and pages are read by Arrow's
        own threads, faster than a Python thread per file.  Schemas are
        unified over every file, as concat_tables does.  None when a file is bad: the
        per-file reader then names it."""
        if len(keys) == 1:  # the same table, without importing pyarrow.dataset (the push path reads one ancestor)
            try:
                return self._read_arrow(table, keys[0])
            except StoreError:
                return None
        import pyarrow.dataset as ds

        paths = [self.path(table, key) for key in keys]
        # The digests first, in threads (hashing and I/O release the GIL), then Arrow's read:
        # doing both at once saved little, and keeps Python threads out of Arrow's scan.
        with ThreadPoolExecutor(max_workers=READ_THREADS) as pool:
            if not all(pool.map(self._matches_digest, paths)):
                return None
        try:
            file_format = ds.ParquetFileFormat(default_fragment_scan_options=ds.ParquetFragmentScanOptions(
                page_checksum_verification=True))
            factory = ds.FileSystemDatasetFactory(self.fs, paths, file_format)
            return _without_digest(factory.finish(factory.inspect(promote_options="permissive")).to_table())
        except (pa.ArrowInvalid, pa.ArrowTypeError, OSError):
            return None

    def _matches_digest(self, path: str) -> bool:
        try:
            self._verified_bytes(path, self.verified)
            return True
        except (OSError, StoreError):
            return False

    def refresh_snapshots(self) -> None:
        """Bring the snapshots of the small tables up to date (collect and record end with
        this, so the next `select`, on the push path, does not pay for it)."""
        if self._local:
            for table in SNAPSHOT_TABLES:
                self._read_snapshot(table)

    def _read_snapshot(self, table: str) -> pa.Table | None:
        """The whole of a small table from its snapshot, one file, when none of the table's
        files changed since the snapshot was made; else the files are read as usual and
        the snapshot is made again.  `select` reads all of commits and labels on every
        push: one file instead of a file per commit (docs/performance.md).
        The snapshot names the files it holds (name, size, modification time), so a file
        written or rewritten since is never missed.  None when the table is empty or a
        file is bad (the per-file reader then names it)."""
        files = self._table_files(table)
        if not files:
            return None
        signature = hashlib.sha256("\n".join(f"{i.base_name} {i.size} {i.mtime_ns}" for i in files).encode()).hexdigest().encode()
        path = f"{self.root}/{SNAPSHOTS}/{table}{SUFFIX}"
        try:
            snapshot = self._read_verified(path, required=True)
            metadata = dict(snapshot.schema.metadata or {})
            if metadata.pop(SIGNATURE_KEY, None) == signature:
                return snapshot.replace_schema_metadata(metadata)
        except (FileNotFoundError, pa.ArrowInvalid, OSError, StoreError):
            pass  # none yet, unreadable or damaged: made again below
        combined = self._read_local(table, [info.base_name[: -len(SUFFIX)] for info in files])
        if combined is None or not combined.num_columns:
            return combined
        marked = combined.replace_schema_metadata({**(combined.schema.metadata or {}), SIGNATURE_KEY: signature})
        try:
            self.fs.create_dir(f"{self.root}/{SNAPSHOTS}", recursive=True)
            data = encode_parquet(marked)
            self._atomic(path, lambda handle: handle.write(data))
        except OSError:
            pass  # a read-only store is read without a snapshot
        return combined

    def _read_arrow(self, table: str, key: str) -> pa.Table:
        path = self.path(table, key)
        remedy = {"calibration": "run `selector calibrate` again", "confirmations": "run `selector confirm` again"}.get(
            table, "run `selector collect` again to re-collect it")
        try:
            return self._read_verified(path, required=self.verified)
        except FileNotFoundError:
            raise StoreError(f"{path}: not in the store") from None
        except (pa.ArrowInvalid, OSError) as error:
            raise StoreError(f"{path}: corrupted or truncated store file ({error}); delete it and {remedy}") from None
        except StoreError as error:
            raise StoreError(f"{error}; delete it and {remedy}") from None

    def _read_verified(self, path: str, required: bool) -> pa.Table:
        """A Parquet file of the store, its digest and page checksums verified.  Without a
        digest it is refused when `required` (a store made by this version)."""
        return _parse_parquet(self._verified_bytes(path, required))

    def _verified_bytes(self, path: str, required: bool) -> bytes:
        with self.fs.open_input_file(path) as handle:
            data = handle.read()
        verify_parquet(path, data, required)
        return data

    def read_one(self, table: str, key: str) -> pa.Table:
        """The file of (table, key)."""
        return self._read_arrow(table, key)

    def delete(self, table: str, key: str) -> None:
        path = self.path(table, key)
        if self._exists(path):
            self.fs.delete_file(path)

    # ------------------------------------------------------------ binaries
    def put_binary(self, source: str | os.PathLike[str]) -> str:
        """Keep a built binary under its sha256; returns the digest."""
        digest = file_sha256(source)
        target = self.binary_path(digest)
        if not self._exists(target):
            self.fs.create_dir(f"{self.root}/binaries", recursive=True)
            with open(source, "rb") as data:
                self._atomic(target, lambda handle: _copy(data, handle))
        return digest

    def binary_path(self, digest: str) -> str:
        return f"{self.root}/binaries/{digest}"

    def binary_lookup(self, shas: list[str], digests: list[str | None]) -> Callable[[str], str | None]:
        """commit -> a local path of its stored binary, None when it has none (`digests`: the
        commits table's binary_sha256, aligned with `shas`)."""
        digest_of = {sha: digest for sha, digest in zip(shas, digests) if isinstance(digest, str) and digest}

        def binary(commit: str) -> str | None:
            digest = digest_of.get(commit)
            return self.local_binary(digest) if digest and self._exists(self.binary_path(digest)) else None

        return binary

    def local_binary(self, digest: str) -> str:
        """A local file holding the binary (downloaded once for a remote store)."""
        path = self.binary_path(digest)
        if self._local:
            return path
        cache = Path.home() / ".cache" / "selector" / "binaries" / digest
        if not cache.exists():
            cache.parent.mkdir(parents=True, exist_ok=True)
            pafs.copy_files(path, str(cache), source_filesystem=self.fs, destination_filesystem=pafs.LocalFileSystem())
        return str(cache)

    def owner(self, index: str, key: str) -> str | None:
        """The commit recorded under `key` in `index`, if any.  Indexes: ``analyses`` (content
        digest -> the commit whose functions are that binary's analysis) and ``measured``
        (measurement identity -> the commit whose benchmark runs answer for it)."""
        path = f"{self.root}/{_checked_index(index)}/{key}"
        if not self._exists(path):
            return None
        with self.fs.open_input_stream(path, compression=None) as handle:
            return handle.read().decode().strip() or None

    def set_owner(self, index: str, key: str, sha: str) -> None:
        self.fs.create_dir(f"{self.root}/{_checked_index(index)}", recursive=True)
        self._atomic(f"{self.root}/{index}/{key}", lambda handle: handle.write(sha.encode()))

    def sweep_temporaries(self) -> int:
        """Remove temporaries left by writers that were killed; returns how many.  A live
        writer's temporary is left alone: on a local store, one whose process is alive on
        this machine; on a remote one, one younger than an hour."""
        removed = 0
        now = time.time()
        for info in self.fs.get_file_info(pafs.FileSelector(self.root, recursive=True)):
            if info.type != pafs.FileType.File or TEMPORARY not in info.base_name:
                continue
            owner = info.base_name.rsplit(TEMPORARY, 1)[1].split("-", 1)[0]
            if _writer_alive(owner, info, now, self._local):
                continue
            try:
                self.fs.delete_file(info.path)
                removed += 1
            except FileNotFoundError:
                pass  # its writer renamed or removed it meanwhile
        return removed

    # ------------------------------------------------------------- helpers
    def _atomic(self, target: str, write) -> None:
        # The writer's pid in the name: a sweep leaves a live writer's file alone.
        temporary = f"{target}{TEMPORARY}{os.getpid()}-{uuid.uuid4().hex}"
        try:
            with self.fs.open_output_stream(temporary, compression=None) as handle:
                write(handle)
            self.fs.move(temporary, target)
        except BaseException:
            if self._exists(temporary):
                self.fs.delete_file(temporary)
            raise

    def _exists(self, path: str) -> bool:
        return self.fs.get_file_info(path).type != pafs.FileType.NotFound


def encode_parquet(table: pa.Table) -> bytes:
    """The Parquet bytes of `table`, with page checksums and the SHA-256 of the bytes in
    the footer (computed with the digest's place holding zeros, then written there)."""
    marked = table.replace_schema_metadata({**(table.schema.metadata or {}), DIGEST_KEY: _PLACEHOLDER})
    sink = pa.BufferOutputStream()
    pq.write_table(marked, sink, compression="zstd", write_page_checksum=True)
    data = bytearray(sink.getvalue().to_pybytes())
    at = _digest_offset(data)
    data[at : at + len(_PLACEHOLDER)] = hashlib.sha256(data).hexdigest().encode()
    return bytes(data)


def verify_parquet(path: str, data: bytes, required: bool = True) -> bool:
    """Check the digest a file carries against its bytes: StoreError naming `path` when they
    differ, or when it carries none and `required`; False for an unverified older file."""
    at = _digest_offset(data)
    if at is None:
        if required:
            raise StoreError(f"{path}: damaged store file (no digest of its contents)")
        return False
    recorded = bytes(data[at : at + len(_PLACEHOLDER)])
    digest = hashlib.sha256()
    digest.update(memoryview(data)[:at])
    digest.update(_PLACEHOLDER)
    digest.update(memoryview(data)[at + len(_PLACEHOLDER) :])
    if digest.hexdigest().encode() != recorded:
        raise StoreError(f"{path}: damaged store file (its bytes do not match their digest)")
    return True


def _digest_offset(data: bytes | bytearray) -> int | None:
    """Where the digest's 64 characters are: after the key in the footer's key-value
    metadata and two bytes of Thrift (field header, length).  Searched in the footer only."""
    if len(data) < 12 or data[-4:] != b"PAR1":
        return None
    footer_start = len(data) - 8 - int.from_bytes(data[-8:-4], "little")
    at = data.rfind(DIGEST_KEY, max(footer_start, 0))
    if at < 0 or at + len(DIGEST_KEY) + 2 + len(_PLACEHOLDER) > len(data):
        return None
    return at + len(DIGEST_KEY) + 2


def _parse_parquet(data: bytes) -> pa.Table:
    # ParquetFile reads the same table as pq.read_table, without importing pyarrow.dataset
    # (read_table goes through it), whose import the push path would pay.
    return _without_digest(pq.ParquetFile(pa.BufferReader(data), page_checksum_verification=True).read())


def _without_digest(table: pa.Table) -> pa.Table:
    metadata = dict(table.schema.metadata or {})
    if metadata.pop(DIGEST_KEY, None) is None:
        return table
    return table.replace_schema_metadata(metadata)


def _writer_alive(owner: str, info: pafs.FileInfo, now: float, local: bool) -> bool:
    if local and not owner.isdigit():
        return False  # named by a version that did not record its writer
    if local:
        from perf_selector.collectors.child_processes import process_alive

        return process_alive(int(owner))
    modified = info.mtime.timestamp() if info.mtime else 0
    return now - modified < TEMPORARY_MAX_AGE


def file_sha256(path: str | os.PathLike[str]) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _copy(source, destination) -> None:
    for block in iter(lambda: source.read(1 << 20), b""):
        destination.write(block)


def _checked_index(index: str) -> str:
    if index not in OWNER_INDEXES:
        raise ValueError(f"unknown owner index {index!r}; expected one of {OWNER_INDEXES}")
    return index


def _check_table(table: str) -> None:
    if table not in TABLES:
        raise ValueError(f"unknown store table {table!r}; known: {', '.join(TABLES)}")
