"""The workspace's derived SQLite databases (relations.sqlite, filestats.sqlite): one way to
connect (WAL, waits for a writer instead of failing), to tell a current one from a damaged, foreign
or older one by its `meta` schema row, to open one for writing, to run one write transaction, to
load an empty one without its indexes and to take a rebuilt one's rows."""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


def connect(path: Path, readonly: bool = False) -> sqlite3.Connection:
    """A connection to the database at `path` (WAL, waits for a writer instead of failing)."""
    uri = f"file:{path}?mode=ro" if readonly else f"file:{path}"
    db = sqlite3.connect(uri, uri=True, timeout=30.0, check_same_thread=False, isolation_level=None)
    if not readonly:
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=NORMAL")
    return db


def is_ready(path: Path, version: str) -> bool:
    """Whether the database exists, is readable and has schema `version`."""
    if not path.is_file():
        return False
    try:
        db = connect(path, readonly=True)
        try:
            row = db.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()
        finally:
            db.close()
    except sqlite3.DatabaseError:
        return False
    return row is not None and row[0] == version


def open_writer(path: Path, schema: str, version: str) -> sqlite3.Connection:
    """A writing connection to the database at `path` with `schema` (which creates a `meta` table)
    at `version`; a damaged, foreign or older database there is removed first."""
    if path.exists() and not is_ready(path, version):
        for suffix in ("", "-wal", "-shm"):
            Path(f"{path}{suffix}").unlink(missing_ok=True)
    db = connect(path)
    db.executescript(schema)
    db.execute("INSERT OR REPLACE INTO meta VALUES ('schema', ?)", (version,))
    return db


@contextmanager
def transaction(db: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """One write transaction: committed when the block ends, rolled back when it raises."""
    db.execute("BEGIN IMMEDIATE")
    try:
        yield db
    except BaseException:
        db.execute("ROLLBACK")
        raise
    db.execute("COMMIT")


def begin_load(db: sqlite3.Connection, indexes: str) -> set[str] | None:
    """When the database's `files` table is empty, drop the indexes that the statements `indexes`
    create (rows then go in without updating them; running `indexes` again builds them) and give an
    empty set for the paths the load writes; None when it holds files."""
    with transaction(db):
        if db.execute("SELECT 1 FROM files LIMIT 1").fetchone() is not None:
            return None
        for name in re.findall(r"CREATE INDEX IF NOT EXISTS (\w+)", indexes):
            db.execute(f"DROP INDEX IF EXISTS {name}")
    return set()


def replace_tables(db: sqlite3.Connection, source: Path, tables: tuple[str, ...]) -> None:
    """Every row of `tables` from the database at `source` instead of ours, in one transaction
    (emptied in the order given)."""
    db.execute("ATTACH DATABASE ? AS source", (f"file:{source}?mode=ro",))
    try:
        with transaction(db):
            for table in tables:
                db.execute(f"DELETE FROM main.{table}")
                db.execute(f"INSERT INTO main.{table} SELECT * FROM source.{table}")
    finally:
        db.execute("DETACH DATABASE source")
