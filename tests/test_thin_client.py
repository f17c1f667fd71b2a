"""The thin client path (cli -> client -> protocol) must not import the engine stack."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Iterator

import pytest

from conftest import ZG
from daemon_helpers import User, make_repo

HEAVY = ("pymilvus", "milvus_lite", "grpc", "tree_sitter", "tree_sitter_language_pack", "numpy", "tokenizers",
         "zgrep.engine", "zgrep.dispatch", "zgrep.index.run", "zgrep.search.run", "zgrep.server.daemon")


def imported(user: User, *args: str, cwd: Path | None = None) -> tuple[subprocess.CompletedProcess[str], set[str]]:
    """Run `zg ARGS` under -X importtime; the module names it imported."""
    out = subprocess.run([sys.executable, "-X", "importtime", ZG, *args], cwd=cwd, env=user.env,
                         capture_output=True, text=True, timeout=60)
    names = {line.rsplit("|", 1)[-1].strip() for line in out.stderr.splitlines() if line.startswith("import time:")}
    return out, names


def heavy(names: set[str]) -> list[str]:
    return sorted(n for n in names if any(n == h or n.startswith(h + ".") for h in HEAVY))


@pytest.fixture(scope="module")
def running(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[User, Path]]:
    base = tmp_path_factory.mktemp("thin")
    user = User(base)
    repo = make_repo(base / "repo")
    user.start()
    assert user.zg("index", "--mode", "server", cwd=repo).returncode == 0
    yield user, repo
    user.zg("server", "off")


def test_server_search_imports_no_engine(running: tuple[User, Path]) -> None:
    user, repo = running
    out, names = imported(user, "search", "--mode", "server", "--json", "retry with backoff", cwd=repo)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "click" in names and "zmq" not in names  # the client speaks ZMTP itself (zgrep.server.zmtp)
    assert heavy(names) == []


def test_auto_search_and_status_import_no_engine(running: tuple[User, Path]) -> None:
    user, repo = running
    for args in (("search", "--json", "cache"), ("status", "--json"), ("server", "status", "--json")):
        out, names = imported(user, *args, cwd=repo)
        assert out.returncode in (0, 1), out.stderr[-2000:]
        assert heavy(names) == [] and "zmq" not in names, args


def test_check_ready_is_thin_with_and_without_a_daemon(running: tuple[User, Path], tmp_path: Path) -> None:
    user, _ = running
    out, names = imported(user, "server", "status", "--check-ready")
    assert out.returncode == 0 and out.stdout == ""
    assert heavy(names) == []
    nobody = User(tmp_path)
    out, names = imported(nobody, "server", "status", "--check-ready")
    assert out.returncode == 1 and out.stdout == ""
    assert heavy(names) == [] and "zmq" not in names
