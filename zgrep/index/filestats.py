"""Whole-file term statistics, `.zgrep/filestats.sqlite` (WAL): each indexed file's lexical terms
with their counts, written by the index run in the same batches as the chunks and relations, read by
search for a whole-file BM25 score (a file whose text as a whole holds the query's words, not one
chunk of it).

Terms are the BM25 route's (search.text.terms: identifiers whole and split, stemmed, no stop words),
so a file's score and its chunks' agree on what a word is. The database is derived from workspace
content: a damaged or foreign one is replaced when written and gives no scores when read. A whole
tree written into an empty database is staged unsorted and moved into `postings` once, at the end
(`begin_load`/`end_load`; a writer opened after a killed load finishes it)."""

from __future__ import annotations

import math
import os
import sqlite3
import threading
from collections.abc import Iterable
from pathlib import Path

from zgrep import sqlitedb
from zgrep.search.text import term_counts

FILESTATS_DB = "filestats.sqlite"
NEXT_FILESTATS = "filestats.next.sqlite"  # a full rebuild's statistics until it switches over
SCHEMA_VERSION = "1"
# A term longer than this is machine-written (a minified line, an encoded blob): no query spells it,
# and a file of them would fill the table.
MAX_TERM_CHARS = 64
# Okapi BM25's usual term saturation (Robertson & Zaragoza). Length normalisation is full (b = 1,
# not the usual 0.75): a long central module holds every word of a query somewhere, and at 0.75 the
# whole-file score lifted such hubs over the small module asked for (semble dev half -0.004 at
# weight 0.5, -0.0003 at 0.25; with b = 1 +0.0005 and +0.0007; the outside dev half gained alike)
K1 = 1.2
B = 1.0
# A query word in more than this share of the files says little of which file is wanted (its idf is
# under ln 2), and its postings are the longest to read: it is left out of the whole-file score.
MAX_DF_SHARE = 0.5
_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS files (id INTEGER PRIMARY KEY, path TEXT NOT NULL UNIQUE, length INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS postings (term TEXT NOT NULL, file INTEGER NOT NULL, tf INTEGER NOT NULL,
    PRIMARY KEY (term, file)) WITHOUT ROWID;
"""
_INDEXES = "CREATE INDEX IF NOT EXISTS postings_file ON postings (file);"
# a load's postings, in the order written (appending is cheap; `postings` is kept in term order)
_STAGED = "postings_load"

FileTerms = dict[str, int]  # a file's terms and how often each occurs


def file_terms(text: str) -> FileTerms:
    """The terms of a file's text with their counts (terms over MAX_TERM_CHARS left out)."""
    return {t: n for t, n in term_counts(text).items() if len(t) <= MAX_TERM_CHARS}


def is_ready(path: Path) -> bool:
    """Whether the database exists, is readable and has the current schema."""
    return sqlitedb.is_ready(path, SCHEMA_VERSION)


class FileStatsStore:
    """Writes one workspace's whole-file term statistics; each call is one transaction (all or
    nothing)."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._db = sqlitedb.open_writer(self.path, _SCHEMA + _INDEXES, SCHEMA_VERSION)
        self._loading: set[str] | None = None  # the paths written since begin_load
        self.end_load()

    def begin_load(self) -> bool:
        """When the database holds no file, stage postings and drop the index until `end_load`
        (a whole tree's postings go in several times faster); whether it did."""
        self.end_load()
        self._loading = sqlitedb.begin_load(self._db, _INDEXES)
        if self._loading is not None:
            self._db.execute(
                f"CREATE TABLE IF NOT EXISTS {_STAGED} (term TEXT NOT NULL, file INTEGER NOT NULL,"
                " tf INTEGER NOT NULL)"
            )
        return self._loading is not None

    def end_load(self) -> None:
        """Move the staged postings into `postings`, in its order, and build the index."""
        with sqlitedb.transaction(self._db) as db:
            if db.execute(
                "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (_STAGED,)
            ).fetchone():
                db.execute(
                    f"INSERT INTO postings SELECT term, file, tf FROM {_STAGED} ORDER BY term, file"
                )
                db.execute(f"DROP TABLE {_STAGED}")
        self._db.executescript(_INDEXES)
        self._loading = None

    def replace_files(self, records: Iterable[tuple[str, FileTerms]]) -> None:
        """Replace the statistics of these files."""
        table = "postings" if self._loading is None else _STAGED
        with sqlitedb.transaction(self._db) as db:
            for path, counts in records:
                self._delete(path)
                cur = db.execute(
                    "INSERT INTO files (path, length) VALUES (?, ?)", (path, sum(counts.values()))
                )
                db.executemany(
                    f"INSERT INTO {table} VALUES (?, ?, ?)",
                    [(term, cur.lastrowid, n) for term, n in counts.items()],
                )
                if self._loading is not None:
                    self._loading.add(path)

    def remove_paths(self, paths: list[str]) -> None:
        """Forget these files."""
        with sqlitedb.transaction(self._db):
            for path in paths:
                self._delete(path)

    def replace_all(self, source: Path) -> None:
        """Take every row from the statistics database at `source` instead of ours, in one
        transaction."""
        sqlitedb.replace_tables(self._db, source, ("postings", "files"))

    def close(self) -> None:
        self._db.close()

    def _delete(self, path: str) -> None:
        if self._loading is not None and path not in self._loading:
            return  # (nothing was there before the load)
        row = self._db.execute("SELECT id FROM files WHERE path = ?", (path,)).fetchone()
        if row is not None:
            self._db.execute("DELETE FROM postings WHERE file = ?", row)
            if self._loading is not None:
                self._db.execute(f"DELETE FROM {_STAGED} WHERE file = ?", row)
            self._db.execute("DELETE FROM files WHERE id = ?", row)


class FileStatsReader:
    """Whole-file BM25 over one workspace's statistics: one read connection, opened on first use and
    again when the file is replaced; the file count and mean length are kept until another connection
    commits (search asks once per query, and recounting took milliseconds on a big tree)."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._db: sqlite3.Connection | None = None
        self._file: tuple[int, int, int, int] | None = None  # device, inode, size, mtime opened
        self._version: int | None = None  # data_version the totals were read at
        self._totals: tuple[int, float] | None = None  # files and mean length; None: not readable
        self._lock = threading.Lock()  # one search at a time on the connection (daemon threads)

    def bm25_scores(self, query_terms: Iterable[str]) -> dict[str, float]:
        """Okapi BM25 of every file holding one of `query_terms` (distinct terms, each counted
        once), by path; empty when the database is missing, damaged or not of this schema."""
        wanted = sorted(set(query_terms))
        if not wanted:
            return {}
        with self._lock:
            try:
                db = self._connection()
                if db is None:
                    return {}
                db.execute("BEGIN")  # the totals and the postings of one state
                try:
                    totals = self._current_totals(db)
                    return _bm25(db, wanted, *totals) if totals else {}
                finally:
                    db.execute("COMMIT")
            except sqlite3.DatabaseError:
                self._drop()
                return {}

    def close(self) -> None:
        with self._lock:
            self._drop()

    def _connection(self) -> sqlite3.Connection | None:
        """The open connection, reopened when the file at `path` is not the one it opened (removed,
        replaced or written over outside SQLite's log); None when there is no file."""
        try:
            st = os.stat(self.path)
        except OSError:
            self._drop()
            return None
        file = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)
        if self._db is None or file != self._file:
            self._drop()
            self._db, self._file = sqlitedb.connect(self.path, readonly=True), file
        return self._db

    def _current_totals(self, db: sqlite3.Connection) -> tuple[int, float] | None:
        """Files and mean length, read again once another connection committed."""
        version = db.execute("PRAGMA data_version").fetchone()[0]
        if version != self._version:
            self._totals, self._version = _totals(db), version
        return self._totals

    def _drop(self) -> None:
        if self._db is not None:
            self._db.close()
        self._db = self._file = self._version = self._totals = None


def _totals(db: sqlite3.Connection) -> tuple[int, float] | None:
    """Files and mean length; None when the schema is not this one or there are no files."""
    row = db.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()
    if row is None or row[0] != SCHEMA_VERSION:
        return None
    count, total = db.execute("SELECT COUNT(*), TOTAL(MAX(length, 0)) FROM files").fetchone()
    return (count, total / count or 1.0) if count else None


def _bm25(db: sqlite3.Connection, wanted: list[str], count: int, avg: float) -> dict[str, float]:
    marks = ",".join("?" * len(wanted))
    df = dict(
        db.execute(
            f"SELECT term, COUNT(*) FROM postings WHERE term IN ({marks}) GROUP BY term", wanted
        )
    )
    kept = [t for t in wanted if 0 < df.get(t, 0) <= MAX_DF_SHARE * count]
    if not kept:
        return {}
    values = ",".join("(?, ?)" for _ in kept)
    weights = [x for t in kept for x in (t, math.log(1 + (count - df[t] + 0.5) / (df[t] + 0.5)))]
    # summed in SQLite: the postings of common words run to thousands of rows on a big tree
    rows = db.execute(
        f"WITH q(term, idf) AS (VALUES {values}) "
        "SELECT f.path, SUM(q.idf * p.tf * (? + 1) / (p.tf + ? * (1 - ? + ? * MAX(f.length, 0) / ?))) "
        "FROM q JOIN postings p ON p.term = q.term JOIN files f ON f.id = p.file WHERE p.tf > 0 GROUP BY p.file",
        [*weights, K1, K1, B, B, avg],
    )
    return {
        path: float(score)
        for path, score in rows
        if isinstance(score, (int, float)) and math.isfinite(score)
    }
