"""The per-workspace relations database `.zgrep/relations.sqlite` (WAL): defs, refs, imports by
path."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from zgrep.relations.model import FileRelations
    from zgrep.types import Definition

RELATIONS_DB = "relations.sqlite"
SCHEMA_VERSION = "2"  # 2: edge kinds, binding homes, scoped imports, definition types
_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS files (path TEXT PRIMARY KEY, language TEXT NOT NULL, lines INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS defs (path TEXT NOT NULL, name TEXT NOT NULL, scope TEXT NOT NULL, kind TEXT NOT NULL,
    start_line INTEGER NOT NULL, end_line INTEGER NOT NULL, type TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS defs_name ON defs (name);
CREATE INDEX IF NOT EXISTS defs_path ON defs (path);
CREATE TABLE IF NOT EXISTS refs (path TEXT NOT NULL, name TEXT NOT NULL, qualifier TEXT NOT NULL,
    line INTEGER NOT NULL, kind TEXT NOT NULL, home TEXT, caller_name TEXT NOT NULL, caller_scope TEXT NOT NULL, caller_kind TEXT NOT NULL,
    caller_start INTEGER NOT NULL, caller_end INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS refs_name ON refs (name);
CREATE INDEX IF NOT EXISTS refs_caller ON refs (path, caller_start);
CREATE TABLE IF NOT EXISTS imports (path TEXT NOT NULL, module TEXT NOT NULL, name TEXT NOT NULL,
    alias TEXT NOT NULL, line INTEGER NOT NULL, scope TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS imports_path ON imports (path);
CREATE INDEX IF NOT EXISTS imports_name ON imports (name);
"""
_TABLES = ("files", "defs", "refs", "imports")


def connect(path: Path, readonly: bool = False) -> sqlite3.Connection:
    """A connection to the relations database (WAL, waits for a writer instead of failing)."""
    uri = f"file:{path}?mode=ro" if readonly else f"file:{path}"
    db = sqlite3.connect(uri, uri=True, timeout=30.0, check_same_thread=False, isolation_level=None)
    if not readonly:
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=NORMAL")
    return db


def is_ready(path: Path) -> bool:
    """Whether the database exists, is readable and has the current schema."""
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
    return row is not None and row[0] == SCHEMA_VERSION


class RelationsStore:
    """Writes one workspace's relations; each call is one transaction (all or nothing)."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        if self.path.exists() and not is_ready(self.path):
            for suffix in ("", "-wal", "-shm"):
                Path(f"{self.path}{suffix}").unlink(missing_ok=True)
        self._db = connect(self.path)
        self._db.executescript(_SCHEMA)
        self._db.execute("INSERT OR REPLACE INTO meta VALUES ('schema', ?)", (SCHEMA_VERSION,))

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        """One write transaction: committed when the block ends, rolled back when it raises."""
        self._db.execute("BEGIN IMMEDIATE")
        try:
            yield self._db
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        self._db.execute("COMMIT")

    def replace_files(self, records: list[FileRelations]) -> None:
        """Replace everything known about these files."""
        with self._transaction() as db:
            self._delete([r.path for r in records])
            db.executemany(
                "INSERT INTO files VALUES (?, ?, ?)",
                [(r.path, r.language, r.lines) for r in records],
            )
            db.executemany(
                "INSERT INTO defs VALUES (?, ?, ?, ?, ?, ?, ?)",
                [
                    (r.path, d.name, d.scope, d.kind, d.start, d.end, d.type)
                    for r in records
                    for d in r.defs
                ],
            )
            db.executemany(
                "INSERT INTO refs VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [
                    (
                        r.path,
                        ref.name,
                        ref.qualifier,
                        ref.line,
                        ref.kind,
                        ref.home,
                        *_caller(ref.caller, r.lines),
                    )
                    for r in records
                    for ref in r.refs
                ],
            )
            db.executemany(
                "INSERT INTO imports VALUES (?, ?, ?, ?, ?, ?)",
                [
                    (r.path, i.module, i.name, i.alias, i.line, i.scope)
                    for r in records
                    for i in r.imports
                ],
            )

    def remove_paths(self, paths: list[str]) -> None:
        """Forget these files."""
        with self._transaction():
            self._delete(paths)

    def clear(self) -> None:
        """Forget every file (a full rebuild starts from nothing)."""
        with self._transaction() as db:
            for table in _TABLES:
                db.execute(f"DELETE FROM {table}")

    def replace_all(self, source: Path) -> None:
        """Take every row from the relations database at `source` instead of ours, in one
        transaction."""
        self._db.execute("ATTACH DATABASE ? AS source", (f"file:{source}?mode=ro",))
        try:
            with self._transaction() as db:
                for table in _TABLES:
                    db.execute(f"DELETE FROM main.{table}")
                    db.execute(f"INSERT INTO main.{table} SELECT * FROM source.{table}")
        finally:
            self._db.execute("DETACH DATABASE source")

    def close(self) -> None:
        self._db.close()

    def _delete(self, paths: list[str]) -> None:
        for table in _TABLES:
            self._db.executemany(f"DELETE FROM {table} WHERE path = ?", [(p,) for p in paths])


def _caller(caller: Definition | None, lines: int) -> tuple[str, str, str, int, int]:
    """The caller columns: the enclosing definition, or the module (whole file)."""
    if caller is not None:
        return caller.name, caller.scope, caller.kind, caller.start, caller.end
    return "", "", "module", 1, max(lines, 1)
