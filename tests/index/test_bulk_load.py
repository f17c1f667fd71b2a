"""Loading a whole tree into empty relations and statistics databases (indexes built at the end):
the same rows as file-by-file writes, and a killed load finished by the next writer."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from zgrep.index.filestats import FileStatsReader, FileStatsStore
from zgrep.relations.extract import extract
from zgrep.relations.store import RelationsStore

FILES = {
    f"pkg/m{n}.py": f"import os\n\n\ndef f{n}(x):\n    return os.path.join(x, 'q{n}')\n"
    for n in range(6)
}


def _rows(path: Path) -> dict[str, list[tuple[object, ...]]]:
    db = sqlite3.connect(path)
    try:
        tables = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        rows = {t: sorted(db.execute(f"SELECT * FROM {t}"), key=repr) for t in tables}
        rows["indexes"] = sorted(db.execute("SELECT name FROM sqlite_master WHERE type = 'index'"))
        return rows
    finally:
        db.close()


def _write(root: Path, load: bool, replaced: str = "") -> None:
    relations, stats = RelationsStore(root / "r.sqlite"), FileStatsStore(root / "f.sqlite")
    if load:
        assert relations.begin_load() and stats.begin_load()
    for path, text in FILES.items():
        relations.replace_files([extract(path, replaced or text)] if path.endswith("0.py") else [])
        relations.replace_files([extract(path, text)])
        stats.replace_files([(path, {"join": 2, "x": 1})])
        stats.replace_files([(path, {"join": 1, path: 3})])
    if load:
        relations.end_load()
        stats.end_load()
    relations.close()
    stats.close()


def test_a_load_writes_the_rows_file_by_file_writes_do(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    _write(tmp_path / "a", load=False)
    _write(tmp_path / "b", load=True, replaced="def other():\n    pass\n")
    for name in ("r.sqlite", "f.sqlite"):
        assert _rows(tmp_path / "b" / name) == _rows(tmp_path / "a" / name)
    again = RelationsStore(tmp_path / "b" / "r.sqlite")
    assert not again.begin_load()  # it holds files: written in place
    again.close()


def test_a_killed_load_is_finished_by_the_next_writer(tmp_path: Path) -> None:
    stats, relations = FileStatsStore(tmp_path / "f.sqlite"), RelationsStore(tmp_path / "r.sqlite")
    assert stats.begin_load() and relations.begin_load()
    stats.replace_files([("a.py", {"join": 1}), ("b.py", {"split": 2})])
    relations.replace_files([extract("a.py", "def f():\n    g()\n")])
    stats.close()  # (no end_load: the run was killed)
    relations.close()
    assert not FileStatsReader(tmp_path / "f.sqlite").bm25_scores(["split"])
    FileStatsStore(tmp_path / "f.sqlite").close()
    RelationsStore(tmp_path / "r.sqlite").close()
    reader = FileStatsReader(tmp_path / "f.sqlite")
    assert set(reader.bm25_scores(["split"])) == {"b.py"}
    reader.close()
    assert ("postings_file",) in _rows(tmp_path / "f.sqlite")["indexes"]
    assert ("refs_name",) in _rows(tmp_path / "r.sqlite")["indexes"]
