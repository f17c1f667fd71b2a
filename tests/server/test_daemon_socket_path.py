"""A runtime dir too deep for a unix socket path (sockaddr_un holds 107 bytes) still serves the daemon."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from daemon_helpers import User, make_repo

from zgrep.server import runtime

pytestmark = pytest.mark.e2e


def test_daemon_serves_from_a_runtime_dir_too_long_for_a_socket_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    user = User(tmp_path / ("deep-" * 12) / "u")
    user.adopt(monkeypatch)
    assert len(str(user.rundir / runtime.SOCKET_FILE)) > 107
    repo = make_repo(tmp_path / "repo")
    user.start()
    try:
        assert (user.rundir / runtime.SOCKET_FILE).exists()
        out = user.zg_binary("search", "--json", "--mode", "server", "retry with backoff", cwd=repo)
        assert out.returncode == 0, out.stderr
        assert json.loads(out.stdout)["hits"][0]["path"] == "retry.py"
    finally:
        assert user.zg_binary("server", "off").returncode == 0
