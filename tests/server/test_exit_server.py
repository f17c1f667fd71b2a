"""`zg server on` failing to start is an error (exit 2, one line), not grep's 'nothing found' (1)."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
from daemon_helpers import User

pytestmark = pytest.mark.e2e


def test_a_daemon_that_cannot_listen_is_exit_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    user = User(tmp_path / "u")
    user.adopt(monkeypatch)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        out = user.zg_binary(
            "server", "on", "--endpoint", f"tcp://127.0.0.1:{taken.getsockname()[1]}"
        )
    lines = out.stderr.strip().splitlines()
    assert out.returncode == 2 and len(lines) == 1 and "Address already in use" in lines[0], (
        out.stderr
    )
    assert user.zg_binary("server", "status", "--check-ready").returncode == 1
