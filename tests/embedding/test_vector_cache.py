"""VectorCache: round trips, isolation by model, corrupt files, two processes at once."""

from __future__ import annotations

import multiprocessing
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from zgrep.embedding.cache import VectorCache


def vectors(n: int, dim: int = 16, prefix: str = "h", seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {f"{prefix}{i:06d}": rng.standard_normal(dim).astype(np.float32) for i in range(n)}


def test_round_trip_and_miss(tmp_path: Path) -> None:
    stored = vectors(3)
    with VectorCache(tmp_path / "state" / "vectors.db") as cache:
        cache.put_many("local:m", stored)
        got = cache.get_many("local:m", [*stored, "unknown"])
    assert set(got) == set(stored)
    for key, vec in stored.items():
        assert got[key].dtype == np.float32
        np.testing.assert_array_equal(got[key], vec)


def test_survives_reopen_and_replaces(tmp_path: Path) -> None:
    path = tmp_path / "vectors.db"
    with VectorCache(path) as cache:
        cache.put_many("m", {"a": np.ones(4, np.float32)})
        cache.put_many("m", {"a": np.full(4, 2.0, np.float32)})
    with VectorCache(path) as cache:
        np.testing.assert_array_equal(cache.get_many("m", ["a"])["a"], np.full(4, 2.0))


def test_model_ids_are_isolated(tmp_path: Path) -> None:
    with VectorCache(tmp_path / "vectors.db") as cache:
        cache.put_many("local:a", {"same": np.ones(4, np.float32)})
        cache.put_many("ollama:b", {"same": np.zeros(8, np.float32)})
        assert cache.get_many("local:a", ["same"])["same"].shape == (4,)
        assert cache.get_many("ollama:b", ["same"])["same"].shape == (8,)
        assert cache.get_many("openai:c", ["same"]) == {}


def test_ten_thousand_in_chunked_queries(tmp_path: Path) -> None:
    stored = vectors(10_000, dim=64)
    with VectorCache(tmp_path / "vectors.db") as cache:
        cache.put_many("m", stored)
        got = cache.get_many("m", list(stored))
    assert len(got) == 10_000
    np.testing.assert_array_equal(got["h009999"], stored["h009999"])


def test_garbage_file_is_moved_aside(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "vectors.db"
    path.write_bytes(b"this is not a database" * 100)
    with VectorCache(path) as cache:
        cache.put_many("m", {"a": np.ones(4, np.float32)})
        assert set(cache.get_many("m", ["a"])) == {"a"}
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "corrupt" in err
    assert len(list(tmp_path.glob("vectors.db.corrupt-*"))) == 1


def test_corruption_found_while_reading_is_recovered(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "vectors.db"
    stored = vectors(2_000, dim=64)
    with VectorCache(path) as cache:
        cache.put_many("m", stored)
    with VectorCache(path) as cache:  # checkpoints the WAL into the main file on close
        pass
    data = bytearray(path.read_bytes())
    data[8192:] = b"\xa5" * (len(data) - 8192)  # keep the header and schema page, trash the rest
    path.write_bytes(bytes(data))
    with VectorCache(path) as cache:
        assert cache.get_many("m", list(stored)) == {}
        cache.put_many("m", {"a": np.ones(4, np.float32)})
        assert set(cache.get_many("m", ["a"])) == {"a"}
    assert "corrupt" in capsys.readouterr().err


def _writer(path: str, prefix: str, seed: int) -> None:
    cache = VectorCache(Path(path))
    stored = vectors(2_000, dim=32, prefix=prefix, seed=seed)
    items = list(stored.items())
    for start in range(0, len(items), 100):
        cache.put_many("m", dict(items[start : start + 100]))
        cache.get_many("m", [key for key, _ in items[: start + 100]])
    cache.close()


def test_two_processes_write_concurrently(tmp_path: Path) -> None:
    path = tmp_path / "vectors.db"
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_writer, args=(str(path), p, s)) for p, s in (("a", 1), ("b", 2))]
    for proc in procs:
        proc.start()
    for proc in procs:
        proc.join(60)
    assert [proc.exitcode for proc in procs] == [0, 0]
    with VectorCache(path) as cache:
        got = cache.get_many("m", [*vectors(2_000, 32, "a", 1), *vectors(2_000, 32, "b", 2)])
    assert len(got) == 4_000
    np.testing.assert_array_equal(got["b001999"], vectors(2_000, 32, "b", 2)["b001999"])


def _old_format_file(path: Path, stored: dict[str, np.ndarray]) -> None:
    """A cache as zgrep wrote it before format 2 (text keys, WITHOUT ROWID)."""
    db = sqlite3.connect(path)
    db.execute(
        "CREATE TABLE vectors (model TEXT NOT NULL, hash TEXT NOT NULL, dim INTEGER NOT NULL,"
        " vec BLOB NOT NULL, PRIMARY KEY (model, hash)) WITHOUT ROWID"
    )
    db.executemany(
        "INSERT INTO vectors VALUES ('m', ?, ?, ?)",
        [(key, vec.size, vec.astype("<f4").tobytes()) for key, vec in stored.items()],
    )
    db.commit()
    db.close()


def test_an_older_format_is_emptied_not_read(tmp_path: Path) -> None:
    path = tmp_path / "vectors.db"
    old = vectors(3_000, dim=256)
    _old_format_file(path, old)
    before = path.stat().st_size
    with VectorCache(path) as cache:
        assert cache.get_many("m", list(old)) == {}
        cache.put_many("m", {"a": np.ones(4, np.float32)})
        assert set(cache.get_many("m", ["a", *old])) == {"a"}
    assert path.stat().st_size < before / 10  # the old rows' pages are given back


@pytest.mark.parametrize(
    "shape",
    [
        "CREATE TABLE vectors2 (key BLOB, vec BLOB)",  # this format's name, other columns
        "CREATE TABLE vectors2 (key BLOB NOT NULL UNIQUE, dim INTEGER NOT NULL, vec BLOB NOT"
        " NULL); CREATE TABLE extra (x)",
    ],
)
def test_a_file_of_another_shape_is_emptied(tmp_path: Path, shape: str) -> None:
    path = tmp_path / "vectors.db"
    db = sqlite3.connect(path)
    db.executescript(shape + "; PRAGMA user_version = 2;")
    db.close()
    with VectorCache(path) as cache:
        cache.put_many("m", {"a": np.ones(4, np.float32)})
        np.testing.assert_array_equal(cache.get_many("m", ["a"])["a"], np.ones(4))


def test_rows_of_the_wrong_size_or_type_are_misses(tmp_path: Path) -> None:
    path = tmp_path / "vectors.db"
    with VectorCache(path) as cache:
        cache.put_many("m", {"short": np.ones(4, np.float32), "text": np.ones(4, np.float32)})
    db = sqlite3.connect(path)
    rows = db.execute("SELECT rowid FROM vectors2 ORDER BY rowid").fetchall()
    db.execute("UPDATE vectors2 SET vec = x'0000' WHERE rowid = ?", rows[0])
    db.execute("UPDATE vectors2 SET vec = '0123456789abcdef' WHERE rowid = ?", rows[1])
    db.commit()
    db.close()
    with VectorCache(path) as cache:
        assert cache.get_many("m", ["short", "text"]) == {}


def test_a_cut_short_file_is_moved_aside(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "vectors.db"
    stored = vectors(2_000, dim=256)
    with VectorCache(path) as cache:
        cache.put_many("m", stored)
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    with VectorCache(path) as cache:
        assert cache.get_many("m", list(stored)) == {}
        cache.put_many("m", {"a": np.ones(4, np.float32)})
        assert set(cache.get_many("m", ["a"])) == {"a"}
    assert "corrupt" in capsys.readouterr().err
    assert len(list(tmp_path.glob("vectors.db.corrupt-*"))) == 1


def test_a_vector_costs_little_more_than_its_bytes(tmp_path: Path) -> None:
    path = tmp_path / "vectors.db"
    stored = vectors(4_000, dim=256)
    with VectorCache(path) as cache:
        for start in range(0, 4_000, 400):
            cache.put_many(
                "zgrep/minilm-l6-code-int8-256", dict(list(stored.items())[start : start + 400])
            )
    assert path.stat().st_size < 1.25 * 4_000 * 256 * 4
