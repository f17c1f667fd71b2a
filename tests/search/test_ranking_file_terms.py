"""File-level evidence beyond single chunks: the whole-file term statistics the index keeps beside the
relations (`.zgrep/filestats.sqlite`: kept with every change, rebuilt by --full, harmless when damaged), and a
dense hit far more similar than the rest ranking first though a hub file has many weakly similar chunks
(a real repo, real Milvus Lite, the real `zg`)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from corpus import FILES, engine_index, make_repo, run_zg, user_env, write_files
from zgrep.index.filestats import FILESTATS_DB, NEXT_FILESTATS, FileStatsReader
from zgrep.search.text import lexical_query

GEO = '''\
import math


def haversine_km(lat1, lon1, lat2, lon2):
    """Great-circle distance between two points on Earth in kilometres."""
    r = 6371.0
    p1, p2 = math.radians(lat1), math.radians(lat2)
    dp = math.radians(lat2 - lat1)
    dl = math.radians(lon2 - lon1)
    a = math.sin(dp / 2) ** 2 + math.cos(p1) * math.cos(p2) * math.sin(dl / 2) ** 2
    return 2 * r * math.asin(math.sqrt(a))
'''
# A command-line hub: many chunks with a number, a range or two values in them, none about places on Earth.
HUB = "\n\n".join(
    f'''\
def option_{name}(value, low, high):
    """Check that the {name} option lies between low and high, and return it as a number."""
    if not low <= value <= high:
        raise ValueError("{name} must lie between " + str(low) + " and " + str(high))
    return float(value)
'''
    for name in (
        "width",
        "height",
        "depth",
        "count",
        "retries",
        "timeout",
        "ratio",
        "margin",
        "offset",
        "limit",
    )
)


def _reader(root: Path) -> FileStatsReader:
    return FileStatsReader(root / ".zgrep" / FILESTATS_DB)


def _stats(reader: FileStatsReader, query: str) -> dict[str, float]:
    return reader.bm25_scores(lexical_query(query).split())


def test_whole_file_statistics_follow_every_change(tmp_path):
    # one reader throughout, as a daemon's engine keeps it: it sees every run's commits
    root = make_repo(tmp_path / "repo")
    engine_index(root)
    reader = _reader(root)
    assert "src/net/retry.py" in _stats(reader, "backoff attempts")
    write_files(root, {"src/net/retry.py": "def gizmo_sprocket():\n    return 'sprocket'\n"})
    (root / "src/auth/users.py").unlink()
    engine_index(root)
    assert "src/net/retry.py" not in _stats(reader, "backoff attempts")
    assert list(_stats(reader, "sprocket")) == ["src/net/retry.py"]
    assert not any(path == "src/auth/users.py" for path in _stats(reader, "user name directory"))
    # scored over the files as they are now (file count, mean length), as a new reader scores them
    fresh = _reader(root)
    assert _stats(reader, "return value name") == _stats(fresh, "return value name")
    fresh.close()
    engine_index(root, full=True)
    assert list(_stats(reader, "sprocket")) == ["src/net/retry.py"]
    assert not (root / ".zgrep" / NEXT_FILESTATS).exists()
    reader.close()


def test_a_damaged_statistics_file_is_harmless_and_rebuilt(tmp_path):
    base = tmp_path
    root = make_repo(base / "repo")
    env = user_env(base)
    assert run_zg("index", cwd=root, env=env).returncode == 0
    reader = _reader(root)  # open before the damage, as a daemon's would be
    assert "src/net/retry.py" in _stats(reader, "backoff attempts")
    db = root / ".zgrep" / FILESTATS_DB
    for suffix in ("-wal", "-shm"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)
    db.write_bytes(b"not a database at all" * 100)
    assert _stats(reader, "backoff attempts") == {}
    proc = run_zg("search", "retry with backoff", "--json", "--refresh", "off", cwd=root, env=env)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["hits"][0]["path"] == "src/net/retry.py"
    assert (
        run_zg("index", cwd=root, env=env).returncode == 0
    )  # the next run rebuilds what it cannot read
    assert "src/net/retry.py" in _stats(reader, "backoff attempts")
    reader.close()


@pytest.fixture(scope="module")
def geo_repo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    base = tmp_path_factory.mktemp("geo")
    root = make_repo(base / "repo", {**FILES, "src/geo.py": GEO, "src/options.py": HUB})
    env = user_env(base)
    proc = run_zg("index", cwd=root, env=env)
    assert proc.returncode == 0, proc.stderr
    return root, env


@pytest.mark.parametrize("mode", ["hybrid", "semantic"])
def test_a_paraphrase_of_a_small_module_beats_a_hub_of_weak_matches(geo_repo, mode):
    root, env = geo_repo
    proc = run_zg(
        "search",
        "distance between two latitude longitude points",
        "--mode-search",
        mode,
        "--json",
        cwd=root,
        env=env,
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["hits"][0]["path"] == "src/geo.py"


def test_a_statistics_file_put_in_place_of_another_is_read(tmp_path):
    # a rebuilt database renamed over the old one: the open reader reads the new file, not the old
    first = make_repo(tmp_path / "one")
    second = make_repo(
        tmp_path / "two", {**FILES, "src/gizmo.py": "def gizmo_sprocket():\n    return 1\n"}
    )
    engine_index(first)
    engine_index(second)
    reader = _reader(first)
    assert _stats(reader, "sprocket") == {}
    db = first / ".zgrep" / FILESTATS_DB
    for suffix in ("-wal", "-shm"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)
    shutil.copy(second / ".zgrep" / FILESTATS_DB, tmp_path / "copy.sqlite")
    os.replace(tmp_path / "copy.sqlite", db)
    assert list(_stats(reader, "sprocket")) == ["src/gizmo.py"]
    reader.close()
