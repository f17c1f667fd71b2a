"""Shared fixtures: an isolated user environment, the `zg` command, and real git repositories."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Callable

import pytest

ZG = str(Path(sys.executable).with_name("zg"))
# No test's `zg search` starts a daemon behind its back (auto mode's autostart is off under CI);
# tests/test_autostart.py drops the variable for the users it runs.
os.environ["CI"] = "1"


@pytest.fixture(autouse=True)
def isolated_user(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Each test gets its own XDG config/cache/runtime dirs, so no real user daemon or config leaks in."""
    home = tmp_path_factory.mktemp("user")
    for name in ("XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_RUNTIME_DIR"):
        path = home / name.lower()
        path.mkdir(mode=0o700)
        monkeypatch.setenv(name, str(path))
    for name in [k for k in os.environ if k.startswith("ZG_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    return home


def git(cwd: Path, *args: str) -> str:
    """Run git in `cwd` and return stdout (raises on failure)."""
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com"}
    return subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True, text=True).stdout


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """An empty git repository with a configured identity."""
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    git(root, "config", "user.name", "t")
    git(root, "config", "user.email", "t@example.com")
    return root


@pytest.fixture
def zg() -> Callable[..., subprocess.CompletedProcess[str]]:
    """Run the installed `zg` command: zg(*args, cwd=..., input=..., env=...)."""

    def run(*args: str, cwd: Path | None = None, input: str | None = None, env: dict[str, str] | None = None,
            timeout: float = 120) -> subprocess.CompletedProcess[str]:
        return subprocess.run([ZG, *args], cwd=cwd, input=input, capture_output=True, text=True, timeout=timeout,
                              env={**os.environ, **(env or {})})

    return run
