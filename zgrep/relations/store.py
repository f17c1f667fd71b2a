"""The per-workspace relations database `.zgrep/relations.sqlite` (WAL): defs, refs, imports by
path. A whole tree written into an empty database goes in without its indexes, built once at the
end (`begin_load`/`end_load`; a writer opened after a killed load builds them)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from zgrep import sqlitedb

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
CREATE TABLE IF NOT EXISTS refs (path TEXT NOT NULL, name TEXT NOT NULL, qualifier TEXT NOT NULL,
    line INTEGER NOT NULL, kind TEXT NOT NULL, home TEXT, caller_name TEXT NOT NULL, caller_scope TEXT NOT NULL, caller_kind TEXT NOT NULL,
    caller_start INTEGER NOT NULL, caller_end INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS imports (path TEXT NOT NULL, module TEXT NOT NULL, name TEXT NOT NULL,
    alias TEXT NOT NULL, line INTEGER NOT NULL, scope TEXT NOT NULL);
"""
_INDEXES = """
CREATE INDEX IF NOT EXISTS defs_name ON defs (name);
CREATE INDEX IF NOT EXISTS defs_path ON defs (path);
CREATE INDEX IF NOT EXISTS refs_name ON refs (name);
CREATE INDEX IF NOT EXISTS refs_caller ON refs (path, caller_start);
CREATE INDEX IF NOT EXISTS imports_path ON imports (path);
CREATE INDEX IF NOT EXISTS imports_name ON imports (name);
"""
_TABLES = ("files", "defs", "refs", "imports")


def is_ready(path: Path) -> bool:
    """Whether the database exists, is readable and has the current schema."""
    return sqlitedb.is_ready(path, SCHEMA_VERSION)


class RelationsStore:
    """Writes one workspace's relations; each call is one transaction (all or nothing)."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._db = sqlitedb.open_writer(self.path, _SCHEMA + _INDEXES, SCHEMA_VERSION)
        self._loading: set[str] | None = None  # the paths written since begin_load

    def begin_load(self) -> bool:
        """When the database holds no file, drop its indexes until `end_load` (rows of a whole
        tree go in several times faster); whether it did."""
        self.end_load()
        self._loading = sqlitedb.begin_load(self._db, _INDEXES)
        return self._loading is not None

    def end_load(self) -> None:
        """Build the indexes `begin_load` dropped."""
        self._db.executescript(_INDEXES)
        self._loading = None

    def replace_files(self, records: list[FileRelations]) -> None:
        """Replace everything known about these files."""
        with sqlitedb.transaction(self._db) as db:
            self._delete([r.path for r in records])
            if self._loading is not None:
                self._loading.update(r.path for r in records)
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
        with sqlitedb.transaction(self._db):
            self._delete(paths)

    def clear(self) -> None:
        """Forget every file (a full rebuild starts from nothing)."""
        with sqlitedb.transaction(self._db) as db:
            for table in _TABLES:
                db.execute(f"DELETE FROM {table}")

    def replace_all(self, source: Path) -> None:
        """Take every row from the relations database at `source` instead of ours, in one
        transaction."""
        sqlitedb.replace_tables(self._db, source, _TABLES)

    def close(self) -> None:
        self._db.close()

    def _delete(self, paths: list[str]) -> None:
        if self._loading is not None:  # (nothing was there before the load)
            paths = [p for p in paths if p in self._loading]
        for table in _TABLES:
            self._db.executemany(f"DELETE FROM {table} WHERE path = ?", [(p,) for p in paths])


def _caller(caller: Definition | None, lines: int) -> tuple[str, str, str, int, int]:
    """The caller columns: the enclosing definition, or the module (whole file)."""
    if caller is not None:
        return caller.name, caller.scope, caller.kind, caller.start, caller.end
    return "", "", "module", 1, max(lines, 1)
