"""The daemon settles its heap (collect, then freeze) once per state of an index: after the first search, and
again after an index job changed it, so the cyclic GC stops walking Milvus Lite's long-lived objects mid-search."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from daemon_helpers import User, make_repo, reap, wait_for
from zgrep.server import runtime

pytestmark = pytest.mark.e2e


def _settles(user: User, line: str = "settled the heap") -> int:
    log = Path(user.env["XDG_STATE_HOME"]) / "zgrep" / runtime.LOG_FILE
    return log.read_text().count(line) if log.exists() else 0


def _search(user: User, repo: Path, query: str) -> list[dict[str, object]]:
    """The hits of a server-mode search ([] when none)."""
    out = user.zg_binary("search", "--json", "--mode", "server", query, cwd=repo)
    assert out.returncode in (0, 1), out.stderr
    return json.loads(out.stdout)["hits"]


def test_the_heap_settles_after_the_first_search_and_after_changes(tmp_path: Path) -> None:
    user = User(tmp_path / "user")
    repo = make_repo(tmp_path / "repo")
    assert user.zg("index", "--mode", "direct", cwd=repo).returncode == 0
    pid = user.start()
    try:
        assert _settles(user) == 0
        _search(user, repo, "exponential backoff")
        wait_for(lambda: _settles(user) == 1, 60, "the heap to settle after the first search")
        _search(user, repo, "parse configuration")
        (repo / "parse.py").write_text(
            (repo / "parse.py").read_text() + "\n\ndef parse_yaml_quokka(text):\n    return text\n"
        )
        # searches go on until one finds the edit and the daemon has settled once more
        wait_for(
            lambda: (
                [h["path"] for h in _search(user, repo, "parse_yaml_quokka")][:1] == ["parse.py"]
                and _settles(user) == 2
            ),
            60,
            "the edit to be indexed and the heap to settle again",
        )
        _search(user, repo, "least recently used cache")
        # nothing changed: no further pass (the daemon logs its decision before it replies)
        assert _settles(user, "heap settle scheduled") == 2
    finally:
        user.zg_binary("server", "off")
        reap(pid)
