"""Vectors cached by (model id, chunk content hash) in one SQLite file, safe across processes."""

from __future__ import annotations

import hashlib
import os
import sqlite3
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Self, TypeVar

import numpy as np

_T = TypeVar("_T")
_CHUNK = 900  # stays under SQLite's oldest host-parameter limit (999)
_CORRUPT = (sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB)
# Format 2 (PRAGMA user_version): a rowid table, rows appended in order, keyed by 16 bytes of
# SHA-256 over (model id, content hash); 16 KB pages hold 15 vectors of 256-d (format 1's WITHOUT
# ROWID rows of text keys took an overflow page each: 4.7 KB a 1 KB vector). A file of any other
# format or shape is emptied, never read.
_FORMAT = 2
_PAGE_SIZE = 16384
_TABLE = "vectors2"
_SCHEMA = f"""
CREATE TABLE IF NOT EXISTS {_TABLE} (
    key BLOB NOT NULL UNIQUE,
    dim INTEGER NOT NULL,
    vec BLOB NOT NULL
)
"""


class VectorCache:
    """float32 vectors keyed by (model id, content hash); WAL mode, a corrupt file is set aside."""

    def __init__(self, path: Path, *, busy_timeout: float = 30.0) -> None:
        self.path = Path(path)
        self._busy_ms = int(busy_timeout * 1000)
        self._lock = threading.Lock()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._db = self._guarded(self._open)

    def get_many(self, model_id: str, hashes: list[str]) -> dict[str, np.ndarray]:
        """The cached vectors among ``hashes``; misses are simply absent."""

        by_key = {_key(model_id, digest): digest for digest in hashes}

        def run() -> dict[str, np.ndarray]:
            found: dict[str, np.ndarray] = {}
            for part in _chunks(list(by_key)):
                marks = ",".join("?" * len(part))
                rows = self._db.execute(
                    f"SELECT key, dim, vec FROM {_TABLE} WHERE key IN ({marks})", part
                )
                for key, dim, blob in rows:
                    if type(blob) is bytes and len(blob) == 4 * dim:
                        found[by_key[key]] = np.frombuffer(blob, dtype="<f4").astype(np.float32)
            return found

        with self._lock:
            return self._guarded(run)

    def put_many(self, model_id: str, vectors: dict[str, np.ndarray]) -> None:
        """Store (or replace) vectors in one transaction."""
        rows = []
        for digest, vec in vectors.items():
            flat = np.asarray(vec, dtype="<f4").ravel()
            rows.append((_key(model_id, digest), flat.size, flat.tobytes()))

        def run() -> None:
            with self._db:  # commits, or rolls back on error
                self._db.execute("BEGIN IMMEDIATE")
                self._db.executemany(f"INSERT OR REPLACE INTO {_TABLE} VALUES (?, ?, ?)", rows)

        if rows:
            with self._lock:
                self._guarded(run)

    def close(self) -> None:
        """Close the database connection."""
        with self._lock:
            self._db.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _open(self) -> sqlite3.Connection:
        db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        try:
            db.execute(f"PRAGMA busy_timeout = {self._busy_ms}")
            db.execute(
                f"PRAGMA page_size = {_PAGE_SIZE}"
            )  # a new file's; 15 vectors of 256-d a page
            _retry_busy(lambda: db.execute("PRAGMA journal_mode = WAL"), self._busy_ms)
            db.execute("PRAGMA synchronous = NORMAL")
            if not _is_current(db):
                _reformat(db)
        except sqlite3.DatabaseError:
            db.close()
            raise
        return db

    def _guarded(self, run: Callable[[], _T]) -> _T:
        """Run ``run``; if the file turns out corrupt, set it aside, recreate it, run again."""
        try:
            return run()
        except sqlite3.DatabaseError as exc:
            if getattr(exc, "sqlite_errorcode", 0) & 0xFF not in _CORRUPT:
                raise
        if getattr(self, "_db", None) is not None:
            self._db.close()
        aside = self.path.with_name(
            f"{self.path.name}.corrupt-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}"
        )
        try:
            self.path.replace(aside)
        except FileNotFoundError:  # another process set it aside first
            pass
        for suffix in ("-wal", "-shm"):
            self.path.with_name(self.path.name + suffix).unlink(missing_ok=True)
        print(
            f"zgrep: vector cache {self.path} was corrupt; moved it to {aside.name} and started afresh",
            file=sys.stderr,
        )
        self._db = self._open()
        return run()


def _is_current(db: sqlite3.Connection) -> bool:
    """Whether the file holds this format's table alone, with its columns."""
    (version,) = db.execute("PRAGMA user_version").fetchone()
    if version != _FORMAT or _tables(db) != [_TABLE]:
        return False
    columns = [(row[1], row[2], row[3]) for row in db.execute(f"PRAGMA table_info({_TABLE})")]
    return columns == [("key", "BLOB", 1), ("dim", "INTEGER", 1), ("vec", "BLOB", 1)]


def _tables(db: sqlite3.Connection) -> list[str]:
    return [
        name
        for (name,) in db.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
        )
    ]


def _reformat(db: sqlite3.Connection) -> None:
    """Empty a new file or one of another format (an older zgrep's cache, or anything else), and
    give it this format's table; other processes may be opening it too."""
    with db:
        db.execute("BEGIN IMMEDIATE")
        if _is_current(db):  # another process reformatted it first
            return
        dropped = _tables(db)
        for name in dropped:
            db.execute(f'DROP TABLE "{name.replace(chr(34), chr(34) * 2)}"')
        db.execute(_SCHEMA)
        db.execute(f"PRAGMA user_version = {_FORMAT}")
    if dropped:
        try:
            db.execute("VACUUM")  # give the old rows' pages back; skipped while others read it
        except sqlite3.OperationalError:
            pass


def _key(model_id: str, digest: str) -> bytes:
    """The row key of a content hash's vector under a model."""
    return hashlib.sha256(f"{model_id}\0{digest}".encode()).digest()[:16]


def _retry_busy(step: Callable[[], object], budget_ms: int) -> None:
    """Run ``step``, retrying while the database is locked (switching to WAL skips the busy
    handler)."""
    deadline = time.monotonic() + budget_ms / 1000
    while True:
        try:
            step()
            return
        except sqlite3.OperationalError as exc:
            if exc.sqlite_errorcode & 0xFF != sqlite3.SQLITE_BUSY or time.monotonic() > deadline:
                raise
            time.sleep(0.01)


def _chunks(items: list[bytes]) -> Iterator[list[bytes]]:
    for start in range(0, len(items), _CHUNK):
        yield items[start : start + _CHUNK]
