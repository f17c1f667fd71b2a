"""Workspace identity and isolation under one daemon (issue 23): a re-cloned workspace is reopened with one
writer, a `..` spelling is the same workspace, and a stuck workspace never stalls the others.

Real daemon processes, real ZeroMQ sockets, real git repositories, real flocks.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import git
from daemon_helpers import User, make_repo, wait_for
from zgrep.locking import ENGINE_LOCK, FileLock, WorkspaceLock
from zgrep.workspace import STATE_DIR

pytestmark = pytest.mark.e2e


def make_recl(root: Path) -> Path:
    """The repo of the issue's repro: `helper` defined in a.py and called from b.py, committed."""
    root.mkdir(parents=True)
    git(root, "init", "-q", "-b", "main")
    (root / "a.py").write_text(
        'def helper(value):\n    """Double a value."""\n    return value * 2\n'
    )
    (root / "b.py").write_text(
        "from a import helper\n\n\ndef use_helper():\n    return helper(21)\n"
    )
    git(root, "add", "-A")
    git(root, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-qm", "init")
    return root


def callers(user: User, repo: Path) -> subprocess.CompletedProcess[str]:
    return user.zg_binary("callers", "--json", "helper", cwd=repo)


def test_a_workspace_recloned_under_the_daemon_is_reopened_with_one_writer(tmp_path: Path) -> None:
    user = User(tmp_path / "u")
    repo = tmp_path / "recl"
    user.start()
    try:
        make_recl(repo)
        assert user.zg_binary("index", cwd=repo).returncode == 0
        first = callers(user, repo)
        assert first.returncode == 0, first.stderr
        shutil.rmtree(repo)
        make_recl(repo)
        indexed = user.zg_binary("index", "--json", cwd=repo)
        assert indexed.returncode == 0 and json.loads(indexed.stdout)["mode"] == "server", (
            indexed.stderr
        )
        again = callers(user, repo)
        assert again.returncode == 0, again.stderr
        assert json.loads(again.stdout)["callers"] == json.loads(first.stdout)["callers"], (
            again.stdout
        )
        # the daemon holds the new workspace's lock: a second writer is refused
        direct = user.zg_binary("--mode", "direct", "index", cwd=repo)
        assert direct.returncode == 2 and "held by the zg daemon" in direct.stderr, (
            direct.returncode,
            direct.stderr,
        )
        (repo / "a.py").write_text(
            (repo / "a.py").read_text() + "\n\ndef zebra_quagga_token():\n    return 7\n"
        )
        assert user.zg_binary("index", cwd=repo).returncode == 0
        found = user.zg_binary("search", "--json", "zebra_quagga_token", cwd=repo)
        assert found.returncode == 0, found.stderr
        assert json.loads(found.stdout)["hits"][0]["path"] == "a.py"
        held = [w["root"] for w in user.server_status()["workspaces"]]
        assert held == [str(repo)], held
        # what the daemon wrote is in the new workspace's own index, not the deleted one's
        assert user.zg_binary("server", "off").returncode == 0
        after = user.zg_binary(
            "search", "--json", "--mode", "direct", "zebra_quagga_token", cwd=repo
        )
        assert after.returncode == 0 and json.loads(after.stdout)["hits"][0]["path"] == "a.py", (
            after.stderr
        )
        assert (
            json.loads(callers(user, repo).stdout)["callers"] == json.loads(again.stdout)["callers"]
        )
        assert json.loads(user.zg_binary("status", "--json", cwd=repo).stdout)["files"] == 2
    finally:
        assert user.zg_binary("server", "off").returncode == 0


def test_a_dotdot_spelling_is_the_same_workspace(tmp_path: Path) -> None:
    user = User(tmp_path / "u")
    repo = make_repo(tmp_path / "ws")
    user.start()
    try:
        assert user.zg_binary("index", cwd=repo).returncode == 0
        for spelling in (f"{repo}/../ws", f"{repo}/./", f"{tmp_path}/ws/../ws/."):
            reply = user.request(
                "search", spelling, {"queries": ["retry with backoff"], "refresh": "off"}
            )
            assert reply["ok"], reply
            assert reply["result"]["hits"][0]["path"] == "retry.py"
        assert [w["root"] for w in user.server_status()["workspaces"]] == [str(repo)]
    finally:
        off = user.zg_binary("server", "off")
        assert off.returncode == 0 and "SIG" not in off.stdout, off.stdout


def test_a_stuck_workspace_is_busy_while_the_others_are_served(tmp_path: Path) -> None:
    user = User(tmp_path / "u")
    stuck = make_repo(tmp_path / "stuck")
    healthy = make_repo(tmp_path / "healthy")
    assert user.zg("index", "--mode", "direct", cwd=healthy).returncode == 0
    (stuck / STATE_DIR).mkdir()
    lock = FileLock(
        stuck / STATE_DIR / ENGINE_LOCK
    )  # another process holds the stuck workspace's index
    assert lock.acquire(blocking=False)
    waiting: list[subprocess.Popen[str]] = []
    try:
        user.env["ZG_LOCK_TIMEOUT"] = (
            "600"  # the daemon's index job waits for that lock (a job that never ends)
        )
        pid = user.start()
        del user.env["ZG_LOCK_TIMEOUT"]
        waiting = [user.popen("index", "--mode", "server", cwd=stuck) for _ in range(6)]
        wait_for(
            lambda: any(w["job_running"] for w in user.server_status()["workspaces"]),
            30,
            "the stuck job",
        )
        for query in ("retry with backoff", "least recently used cache", "parse configuration"):
            out = user.zg_binary(
                "search", "--json", "--mode", "server", query, cwd=healthy, timeout=60
            )
            assert out.returncode == 0, out.stderr
        busy = user.zg_binary("search", "--mode", "server", "retry", cwd=stuck, timeout=60)
        assert busy.returncode == 2 and "busy" in busy.stderr and str(stuck) in busy.stderr, (
            busy.stderr
        )
        assert all(p.poll() is None for p in waiting)  # the index commands wait for their job
        wait_for(
            lambda: (
                f"{stuck} (busy: its index job has reported no progress for"
                in user.zg_binary("server", "status").stdout
            ),
            90,
            "zg server status to report the stuck workspace busy",
        )
        assert (
            user.zg_binary(
                "search", "--json", "--mode", "server", "retry with backoff", cwd=healthy
            ).returncode
            == 0
        )
        off = user.zg_binary("server", "off", timeout=60)
        assert off.returncode == 0 and off.stdout.strip() == f"zg daemon stopped (pid {pid})", (
            off.stdout
        )
        for proc in waiting:
            _, stderr = proc.communicate(timeout=60)
            assert proc.returncode == 2 and "stopped" in stderr, stderr
    finally:
        lock.release()
        for proc in waiting:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        user.zg_binary("server", "off")


def test_a_workspace_lock_on_a_deleted_state_dir_is_taken_again_on_the_new_one(
    tmp_path: Path,
) -> None:
    state = tmp_path / "ws" / STATE_DIR
    lock = WorkspaceLock(state / ENGINE_LOCK)
    lock.acquire(timeout=5)
    try:
        shutil.rmtree(state)
        state.mkdir()  # re-created: the held flock is on the deleted file, the new one is free
        probe = [
            sys.executable,
            "-c",
            "import sys; from pathlib import Path; from zgrep.locking import lock_holder; "
            "print(lock_holder(Path(sys.argv[1])))",
            str(state / ENGINE_LOCK),
        ]
        (state / ENGINE_LOCK).touch()
        assert (
            subprocess.run(probe, capture_output=True, text=True, check=True).stdout.strip()
            == "None"
        )
        lock.acquire(timeout=5)
        holder = subprocess.run(probe, capture_output=True, text=True, check=True).stdout.strip()
        assert holder.startswith(f"pid {os.getpid()}"), (
            holder
        )  # another process sees this one holding the new file
    finally:
        lock.release()
