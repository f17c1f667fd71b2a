"""The thin client path (cli -> client -> protocol) must not import the engine stack."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Iterator

import pytest

from conftest import ZG
from daemon_helpers import User, make_repo

pytestmark = pytest.mark.e2e

HEAVY = (
    "pymilvus",
    "milvus_lite",
    "grpc",
    "tree_sitter",
    "tree_sitter_language_pack",
    "numpy",
    "tokenizers",
    "zgrep.engine",
    "zgrep.dispatch",
    "zgrep.index.run",
    "zgrep.search.run",
    "zgrep.server.daemon",
    "zgrep.server.holder",
    "zgrep.server.jobrunner",
    "zgrep.server.transport",
)


def imported(
    user: User, *args: str, cwd: Path | None = None
) -> tuple[subprocess.CompletedProcess[str], set[str]]:
    """Run `zg ARGS` under -X importtime; the module names it imported."""
    out = subprocess.run(
        [sys.executable, "-X", "importtime", ZG, *args],
        cwd=cwd,
        env=user.env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    names = {
        line.rsplit("|", 1)[-1].strip()
        for line in out.stderr.splitlines()
        if line.startswith("import time:")
    }
    return out, names


def heavy(names: set[str]) -> list[str]:
    return sorted(n for n in names if any(n == h or n.startswith(h + ".") for h in HEAVY))


@pytest.fixture(scope="module")
def running(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[User, Path]]:
    base = tmp_path_factory.mktemp("thin")
    user = User(base)
    repo = make_repo(base / "repo")
    user.start()
    assert user.zg_binary("index", "--mode", "server", cwd=repo).returncode == 0
    yield user, repo
    user.zg_binary("server", "off")


def test_server_search_imports_no_engine(running: tuple[User, Path]) -> None:
    user, repo = running
    out, names = imported(
        user, "search", "--mode", "server", "--json", "retry with backoff", cwd=repo
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert (
        "click" in names and "zmq" not in names
    )  # the client speaks ZMTP itself (zgrep.server.zmtp)
    assert heavy(names) == []


def test_auto_search_and_status_import_no_engine(running: tuple[User, Path]) -> None:
    user, repo = running
    for args in (
        ("search", "--json", "cache"),
        ("status", "--json"),
        ("server", "status", "--json"),
    ):
        out, names = imported(user, *args, cwd=repo)
        assert out.returncode in (0, 1), out.stderr[-2000:]
        assert heavy(names) == [] and "zmq" not in names, args


def test_check_ready_is_thin_with_and_without_a_daemon(
    running: tuple[User, Path], tmp_path: Path
) -> None:
    user, _ = running
    out, names = imported(user, "server", "status", "--check-ready")
    assert out.returncode == 0 and out.stdout == ""
    assert heavy(names) == []
    nobody = User(tmp_path)
    out, names = imported(nobody, "server", "status", "--check-ready")
    assert out.returncode == 1 and out.stdout == ""
    assert heavy(names) == [] and "zmq" not in names


def click_cli(user: User, *args: str) -> subprocess.CompletedProcess[str]:
    """`zg ARGS` through the click CLI (zgrep.cli.main), which the `zg` entry point hands what it does not serve."""
    code = "import sys; sys.argv[0] = 'zg'; from zgrep.cli.main import main; main()"
    return subprocess.run(
        [sys.executable, "-c", code, *args],
        env=user.env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def without_counts(text: str) -> str:
    """`text` with its numbers (uptime, idle seconds, requests served) as N: they move between two calls."""
    return re.sub(r"\d+(\.\d+)?", "N", text)


def test_server_status_is_served_without_click_as_click_serves_it(
    running: tuple[User, Path],
) -> None:
    """`zg server status` skips click (and the config) with a daemon up; what it prints and its exit code
    are the click command's."""
    user, _ = running
    for args in (
        ("server", "status"),
        ("server", "status", "--json", "--timeout-ms", "800"),
        ("server", "status", "--mode=server", "--timeout-ms=800"),
    ):
        out, names = imported(user, *args)
        assert out.returncode == 0, out.stderr[-2000:]
        assert "click" not in names and "zgrep.config" not in names and heavy(names) == [], args
        slow = click_cli(user, *args)
        assert (out.returncode, without_counts(out.stdout)) == (
            slow.returncode,
            without_counts(slow.stdout),
        )
    status = json.loads(imported(user, "server", "status", "--json")[0].stdout)
    assert (
        status["running"] is True
        and status["ready"] is True
        and status["pid"] == user.info()["pid"]
    )
    out, names = imported(user, "server", "status", "--check-ready")
    assert (out.returncode, out.stdout, "click" in names) == (0, "", False)


@pytest.mark.parametrize(
    "args",
    [
        ("server", "status", "-h"),
        ("server", "status", "--timeout-ms", "soon"),
        ("server", "status", "--jsn"),
        ("server", "status", "--mode", "remote"),
        ("server", "status", "--json=yes"),
        ("server", "status", "--timeout-ms"),
        ("server", "status", "extra"),
    ],
)
def test_server_status_help_and_usage_errors_are_the_click_clis(
    running: tuple[User, Path], args: tuple[str, ...]
) -> None:
    """Help, unknown flags and bad values reach click: the same bytes and exit code as the click CLI's."""
    user, _ = running
    fast = user.zg(*args)
    slow = click_cli(user, *args)
    assert (fast.returncode, fast.stdout, fast.stderr) == (
        slow.returncode,
        slow.stdout,
        slow.stderr,
    )
    assert (
        fast.returncode in (0, 2) and (fast.stdout if fast.returncode == 0 else fast.stderr).strip()
    )


def test_server_status_without_a_daemon_is_served_without_click(tmp_path: Path) -> None:
    nobody = User(tmp_path)
    for args in (("server", "status"), ("server", "status", "--json")):
        out, names = imported(nobody, *args)
        slow = click_cli(nobody, *args)
        assert (out.returncode, out.stdout, out.stderr.count("zg:")) == (1, slow.stdout, 0), args
        assert slow.returncode == 1 and "click" not in names
    assert json.loads(out.stdout) == {"running": False, "ready": False}


@pytest.fixture
def unserved(tmp_path: Path) -> tuple[User, Path]:
    """A user without a daemon and a repository indexed in direct mode."""
    nobody = User(tmp_path)
    repo = make_repo(tmp_path / "repo")
    assert nobody.zg("index", "--mode", "direct", cwd=repo).returncode == 0
    return nobody, repo


def test_direct_status_of_a_consistent_index_loads_neither_milvus_nor_the_model(
    unserved: tuple[User, Path],
) -> None:
    """Without a daemon, the state files (manifest, verified.json) answer `zg status`: no engine, no model."""
    nobody, repo = unserved
    out, names = imported(nobody, "status", "--json", cwd=repo)
    assert out.returncode == 0, out.stderr[-2000:]
    status = json.loads(out.stdout)
    assert status["fresh"] is True and status["problem"] is None and status["files"] == 3
    model = (
        "pymilvus",
        "milvus_lite",
        "grpc",
        "numpy",
        "tokenizers",
        "zgrep.store.milvus",
        "zgrep.embedding.static",
    )
    assert sorted(n for n in names if n.split(".")[0] in model or n in model) == []
    (
        repo / ".zgrep" / "verified.json"
    ).unlink()  # without the record, the engine is asked (and answers the same)
    again, names = imported(nobody, "status", "--json", cwd=repo)
    assert again.returncode == 0 and json.loads(again.stdout) == status
    assert "pymilvus" in names


def test_status_names_another_configured_model_without_loading_it(
    unserved: tuple[User, Path], tmp_path: Path
) -> None:
    """The configured model's id and dimension come from its folder's config.json: a mismatch is still named."""
    from zgrep.embedding.folder import default_model_dir

    nobody, repo = unserved
    other = tmp_path / "other-model"
    shutil.copytree(default_model_dir(), other)
    config = json.loads((other / "config.json").read_text())
    (other / "config.json").write_text(json.dumps({**config, "model_id": "team/other-static"}))
    out, names = imported(nobody, "status", "--json", "--model", f"local:{other}", cwd=repo)
    assert out.returncode == 1
    problem = json.loads(out.stdout)["problem"]
    assert (
        f"configured team/other-static ({config['dim']}-d)" in problem
        and "zg index --full" in problem
    )
    assert "numpy" not in names and "zgrep.embedding.static" not in names


def test_direct_index_with_nothing_changed_loads_neither_milvus_nor_tree_sitter(
    unserved: tuple[User, Path],
) -> None:
    """A `zg index` that finds nothing to write answers from the state files: no engine, no chunker."""
    nobody, repo = unserved
    out, names = imported(nobody, "index", "--json", "--mode", "direct", cwd=repo)
    assert out.returncode == 0, out.stderr[-2000:]
    report = json.loads(out.stdout)
    assert report["changed"] == 0 and report["unchanged"] == 3
    heavy_here = ("pymilvus", "milvus_lite", "grpc", "tree_sitter", "numpy", "zgrep.chunking")
    assert sorted(n for n in names if n.split(".")[0] in heavy_here or n in heavy_here) == []
