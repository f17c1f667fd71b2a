"""Vectors cached by (model id, chunk content hash) in one SQLite file, safe across processes."""

from __future__ import annotations

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
_SCHEMA = """
CREATE TABLE IF NOT EXISTS vectors (
    model TEXT NOT NULL,
    hash TEXT NOT NULL,
    dim INTEGER NOT NULL,
    vec BLOB NOT NULL,
    PRIMARY KEY (model, hash)
) WITHOUT ROWID
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

        def run() -> dict[str, np.ndarray]:
            found: dict[str, np.ndarray] = {}
            for part in _chunks(list(dict.fromkeys(hashes))):
                marks = ",".join("?" * len(part))
                rows = self._db.execute(
                    f"SELECT hash, dim, vec FROM vectors WHERE model = ? AND hash IN ({marks})",
                    (model_id, *part),
                )
                for digest, dim, blob in rows:
                    if len(blob) == 4 * dim:
                        found[digest] = np.frombuffer(blob, dtype="<f4").astype(np.float32)
            return found

        with self._lock:
            return self._guarded(run)

    def put_many(self, model_id: str, vectors: dict[str, np.ndarray]) -> None:
        """Store (or replace) vectors in one transaction."""
        rows = []
        for digest, vec in vectors.items():
            flat = np.asarray(vec, dtype="<f4").ravel()
            rows.append((model_id, digest, flat.size, flat.tobytes()))

        def run() -> None:
            with self._db:  # commits, or rolls back on error
                self._db.execute("BEGIN IMMEDIATE")
                self._db.executemany("INSERT OR REPLACE INTO vectors VALUES (?, ?, ?, ?)", rows)

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
            _retry_busy(lambda: db.execute("PRAGMA journal_mode = WAL"), self._busy_ms)
            db.execute("PRAGMA synchronous = NORMAL")
            db.execute(_SCHEMA)
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


def _chunks(items: list[str]) -> Iterator[list[str]]:
    for start in range(0, len(items), _CHUNK):
        yield items[start : start + _CHUNK]
