"""One daemon per user, whoever asks: an agent host's environment (the MCP SDK drops XDG_RUNTIME_DIR) still
reaches the daemon that holds the workspace, a forged record in a workspace reaches nothing, and a daemon of
another install is restarted (autostarted) or answered beside in direct mode (started by `zg server on`)."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import zmq
from mcp import Client, StdioServerParameters
from mcp.client.stdio import get_default_environment, stdio_client

from conftest import ZG
from daemon_helpers import User, make_repo, reap, wait_for
from zgrep.locking import lock_holder
from zgrep.server import client, runtime

pytestmark = pytest.mark.e2e

START_S = 90  # a loaded machine starts Python, loads the model and binds


@pytest.fixture
def shell(tmp_path: Path) -> Iterator[tuple[User, Path]]:
    """A user whose shell started the daemon (its own XDG_RUNTIME_DIR) and indexed a workspace through it."""
    user = User(tmp_path / "user")
    repo = make_repo(tmp_path / "repo")
    pid = user.start()
    try:
        assert user.zg_binary("index", "--mode", "server", cwd=repo).returncode == 0
        assert lock_holder(repo / ".zgrep" / "engine.lock") is not None
        yield user, repo
    finally:
        user.zg_binary("server", "off")
        reap(pid)


def mcp_calls(repo: Path, *calls: tuple[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """Tool calls through the MCP SDK's client, in one session started with the SDK's default environment."""
    params = StdioServerParameters(
        command=ZG, args=["mcp"], cwd=str(repo)
    )  # env=None: get_default_environment()

    async def run() -> list[dict[str, Any]]:
        out = []
        async with Client(stdio_client(params), read_timeout_seconds=120) as session:
            for name, args in calls:
                result = await session.call_tool(name, args)
                assert not result.is_error, result.content
                assert len(result.content) == 1  # one compact JSON text block (db90826)
                out.append(json.loads(result.content[0].text))
        return out

    return asyncio.run(run())


def test_an_mcp_session_with_the_sdk_environment_is_answered_by_the_shells_daemon(
    shell: tuple[User, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    user, repo = shell
    monkeypatch.setenv("HOME", user.env["HOME"])  # what the host passes on; no XDG_* at all
    assert "XDG_RUNTIME_DIR" not in get_default_environment()
    served = user.server_status()["requests_served"]
    result, status = mcp_calls(repo, ("search", {"query": "retry with backoff"}), ("status", {}))
    assert result["mode"] == "server" and result["hits"][0]["path"] == "retry.py"
    assert status["daemon"]["running"] and status["daemon"]["pid"] == user.info()["pid"]
    assert user.server_status()["requests_served"] > served
    record = repo / ".zgrep" / runtime.HOLDER_FILE
    assert record.stat().st_mode & 0o777 == 0o600
    assert not (
        Path(user.env["HOME"]) / ".cache" / "zgrep" / "run" / runtime.INFO_FILE
    ).exists()  # none started


def test_a_forged_holder_record_reaches_no_socket(shell: tuple[User, Path], tmp_path: Path) -> None:
    user, repo = shell
    pid = user.info()["pid"]
    fake = tmp_path / "fake-run"
    fake.mkdir(mode=0o700)
    endpoint = f"ipc://{fake}/daemon.sock"
    trap = zmq.Context.instance().socket(zmq.ROUTER)
    trap.setsockopt(zmq.LINGER, 0)
    trap.bind(endpoint)
    try:
        (fake / runtime.INFO_FILE).write_text(json.dumps({"pid": pid, "endpoint": endpoint}))
        (fake / runtime.TOKEN_FILE).write_text("forged")
        record = repo / ".zgrep" / runtime.HOLDER_FILE
        record.write_text(
            json.dumps({"pid": pid, "runtime_dir": str(fake)})
        )  # names the real holder's pid
        record.chmod(0o600)
        stranger = User(
            tmp_path / "stranger"
        )  # another environment: it must find nothing to follow
        stranger.env["HOME"] = user.env["HOME"]
        out = stranger.zg_binary("search", "--json", "retry with backoff", cwd=repo)
        assert (
            out.returncode == 2 and "held by" in out.stderr
        )  # fails as before, but sends nothing anywhere
        assert trap.poll(200) == 0
    finally:
        trap.close(0)


def clone_install(base: Path) -> Path:
    """Another install of zg (its own prefix, the same code): a venv whose lib is this one's; its python."""
    venv = Path(sys.prefix)
    (base / "bin").mkdir(parents=True)
    shutil.copy(venv / "pyvenv.cfg", base / "pyvenv.cfg")
    (base / "lib").symlink_to(venv / "lib")
    (base / "bin" / "python").symlink_to(os.path.realpath(sys.executable))
    return base / "bin" / "python"


def run_other(python: Path, user: User, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(python), "-m", "zgrep.cli.main", *args],
        cwd=cwd,
        env=user.env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def info_of(user: User) -> dict[str, Any] | None:
    """The endpoint file of the user's daemon, or None."""
    try:
        return user.info()
    except (OSError, ValueError):
        return None


def search(user: User, repo: Path) -> tuple[dict[str, Any], str]:
    out = user.zg_binary("search", "--json", "retry with backoff", cwd=repo)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout), out.stderr


def test_a_daemon_of_another_install_started_by_command_is_answered_beside_in_one_line(
    tmp_path: Path,
) -> None:
    user = User(tmp_path / "user")
    user.env.pop("CI", None)  # autostart allowed: a daemon runs, so none may be started
    repo = make_repo(tmp_path / "repo")
    other = clone_install(tmp_path / "other")
    assert run_other(other, user, "server", "on", cwd=tmp_path).returncode == 0
    pid = user.info()["pid"]
    try:
        result, stderr = search(user, repo)
        assert result["mode"] == "direct" and result["hits"][0]["path"] == "retry.py"
        lines = stderr.strip().splitlines()
        assert len(lines) == 1 and f"pid {pid}" in lines[0] and str(other) in lines[0], stderr
        assert user.info()["pid"] == pid and user.server_status()["requests_served"] == 0
        forced = user.zg_binary("search", "--json", "--mode", "server", "retry", cwd=repo)
        assert forced.returncode == 2 and "another install" in forced.stderr
        assert user.info()["prefix"] == str(tmp_path / "other")
    finally:
        user.zg_binary("server", "off")
        reap(pid)


def test_an_autostarted_daemon_of_another_install_is_restarted_from_this_one(
    tmp_path: Path,
) -> None:
    user = User(tmp_path / "user")
    user.env.pop("CI", None)
    repo = make_repo(tmp_path / "repo")
    other = clone_install(tmp_path / "other")
    pids: list[int] = []
    try:
        first = run_other(other, user, "search", "--json", "retry with backoff", cwd=repo)
        assert first.returncode == 0 and json.loads(first.stdout)["mode"] == "direct", first.stderr
        wait_for(
            lambda: (
                info_of(user) is not None and lock_holder(user.rundir / runtime.START_LOCK) is None
            ),
            START_S,
            "the other install's daemon to start",
        )
        old = user.info()
        pids.append(old["pid"])
        assert old["started_by"] == "autostart"
        log = Path(user.env["XDG_STATE_HOME"]) / "zgrep" / runtime.LOG_FILE
        wait_for(
            lambda: "warmed workspace" in log.read_text(),
            START_S,
            "the other install's daemon to warm up",
        )
        assert (lock_holder(repo / ".zgrep" / "engine.lock") or "").startswith(f"pid {old['pid']} ")

        result, stderr = search(
            user, repo
        )  # stops it, answers in-process, starts this install's daemon
        assert result["mode"] == "direct" and result["hits"][0]["path"] == "retry.py", stderr
        assert not runtime.pid_alive(old["pid"])
        wait_for(
            lambda: (
                (info := info_of(user)) is not None
                and info["pid"] != old["pid"]
                and lock_holder(user.rundir / runtime.START_LOCK) is None
            ),
            START_S,
            "this install's daemon",
        )
        new = user.info()
        pids.append(new["pid"])
        assert old["prefix"] == str(tmp_path / "other") and new["prefix"] == sys.prefix
        assert Path(new["executable"]).parent == Path(sys.executable).parent
        assert client.wait_gone(old["pid"], 1)
        again, _ = search(user, repo)
        assert again["mode"] == "server" and again["hits"][0]["path"] == "retry.py"
    finally:
        wait_for(
            lambda: lock_holder(user.rundir / runtime.START_LOCK) is None, START_S, "a start to end"
        )
        user.zg_binary("server", "off")
        for pid in pids:
            reap(pid)
