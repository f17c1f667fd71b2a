"""`[server] endpoint` in a workspace's `.zgrep.toml` picks where the user's daemon listens: honoured
by `zg server on` run in that workspace only once the file is trusted."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import git
from daemon_helpers import User

pytestmark = pytest.mark.e2e


def test_workspace_endpoint_is_honoured_only_when_trusted(tmp_path: Path) -> None:
    user = User(tmp_path / "u")
    root = tmp_path / "ws"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    endpoint = f"ipc://{tmp_path}/custom.sock"
    (root / ".zgrep.toml").write_text(f'[server]\nendpoint = "{endpoint}"\n')
    try:
        started = user.zg_binary("server", "on", cwd=root)
        assert started.returncode == 0, started.stderr
        assert "server.endpoint" in started.stderr and "zg trust" in started.stderr
        assert (
            json.loads(user.zg_binary("server", "status", "--json").stdout)["endpoint"] != endpoint
        )
        assert user.zg_binary("server", "off").returncode == 0
        assert user.zg_binary("trust", cwd=root).returncode == 0
        started = user.zg_binary("server", "on", cwd=root)
        assert started.returncode == 0 and started.stderr == "", started.stderr
        assert (
            json.loads(user.zg_binary("server", "status", "--json").stdout)["endpoint"] == endpoint
        )
    finally:
        user.zg_binary("server", "off")
