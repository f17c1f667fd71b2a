"""The resident daemon: real processes, real ZeroMQ sockets, real Milvus Lite indexes."""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path
from typing import Iterator

import pytest
import zmq

from daemon_helpers import User, make_repo, raw_socket, reap, freeze_process, wait_for
from zgrep.server import client, protocol, runtime

pytestmark = pytest.mark.e2e

IDLE_TIMEOUT_S = 3
# Enough files that the daemon's index job is still running after the test sees it start and
# acts: with 300 the job could end between the status poll and the signal on a loaded machine.
MIDWAY_FILES = 1200


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[User, Path]]:
    """One daemon (short idle timeout) and one indexed workspace, shared by the tests that allow it."""
    base = tmp_path_factory.mktemp("shared")
    user = User(base)
    repo = make_repo(base / "repo")
    user.start("--idle-timeout", str(IDLE_TIMEOUT_S))
    out = user.zg_binary("index", "--mode", "server", cwd=repo)
    assert out.returncode == 0, out.stderr
    yield user, repo
    user.zg_binary("server", "off")


@pytest.fixture
def daemon(shared: tuple[User, Path], monkeypatch: pytest.MonkeyPatch) -> tuple[User, Path]:
    """The shared daemon, with this process's environment pointing at it."""
    shared[0].adopt(monkeypatch)
    return shared


def test_on_is_idempotent_and_status_reports(daemon: tuple[User, Path]) -> None:
    user, repo = daemon
    pid = user.info()["pid"]
    again = user.zg_binary("server", "on")
    assert again.returncode == 0 and "already running" in again.stdout and user.info()["pid"] == pid
    ready = user.zg_binary("server", "status", "--check-ready")
    assert ready.returncode == 0 and ready.stdout == "" and ready.stderr == ""
    status = json.loads(user.zg_binary("server", "status", "--json").stdout)
    assert status["pid"] == pid and status["endpoint"].startswith("ipc://") and status["version"]
    sock = Path(status["endpoint"][len("ipc://") :])
    assert sock.stat().st_mode & 0o777 == 0o600 and user.rundir.stat().st_mode & 0o777 == 0o700
    assert (user.rundir / runtime.TOKEN_FILE).stat().st_mode & 0o777 == 0o600
    assert client.daemon_state()["ready"] is True


def test_server_search_equals_direct_and_idle_release(daemon: tuple[User, Path]) -> None:
    user, repo = daemon
    query = "exponential backoff between attempts"
    served = user.zg_binary("search", "--json", "--mode", "server", query, cwd=repo)
    assert served.returncode == 0, served.stderr
    busy = user.zg_binary("search", "--mode", "direct", query, cwd=repo)
    assert (
        busy.returncode == 2
        and "held by the zg daemon" in busy.stderr
        and "zg server off" in busy.stderr
    )
    wait_for(
        lambda: not user.server_status()["workspaces"],
        IDLE_TIMEOUT_S + 10,
        "the idle workspace to be released",
    )
    direct = user.zg_binary("search", "--json", "--mode", "direct", query, cwd=repo)
    assert direct.returncode == 0, direct.stderr
    a, b = json.loads(served.stdout), json.loads(direct.stdout)
    assert (a["mode"], b["mode"]) == ("server", "direct")
    assert a["hits"] == b["hits"] and a["hits"][0]["path"] == "retry.py"
    log = (Path(user.env["XDG_STATE_HOME"]) / "zgrep" / runtime.LOG_FILE).read_text()
    assert "search" in log and query not in log


def test_refresh_background_needs_the_daemon(daemon: tuple[User, Path], tmp_path: Path) -> None:
    user, repo = daemon
    served = user.zg_binary(
        "search", "--json", "--refresh", "background", "parse configuration", cwd=repo
    )
    assert served.returncode == 0 and json.loads(served.stdout)["mode"] == "server"
    nobody = User(
        tmp_path
    )  # no daemon, in a workspace no daemon holds (one it holds leads to it: test_rendezvous)
    other = make_repo(tmp_path / "other")
    refused = nobody.zg_binary(
        "search", "--refresh", "background", "parse configuration", cwd=other
    )
    assert refused.returncode == 2 and "zg server on" in refused.stderr
    absent = nobody.zg_binary("search", "--mode", "server", "parse configuration", cwd=other)
    assert absent.returncode == 2 and "zg server on" in absent.stderr


def test_watcher_picks_up_an_edit(daemon: tuple[User, Path]) -> None:
    user, repo = daemon
    assert user.zg_binary(
        "search", "--mode", "server", "--refresh", "off", "cache", cwd=repo
    ).returncode in (0, 1)
    (repo / "quantile.py").write_text(
        'def streaming_quantile_sketch(values):\n    """Estimate a quantile."""\n'
        "    return sorted(values)[len(values) // 2]\n"
    )

    def found() -> bool:
        out = user.zg_binary(
            "search",
            "--json",
            "--mode",
            "server",
            "--refresh",
            "off",
            "streaming_quantile_sketch",
            cwd=repo,
        )
        return any(h["path"] == "quantile.py" for h in json.loads(out.stdout)["hits"])

    wait_for(found, 15, "the watcher to index the new file")


def test_bad_messages_get_answers_and_the_daemon_keeps_serving(daemon: tuple[User, Path]) -> None:
    user, _ = daemon
    endpoint = user.info()["endpoint"]
    token = (user.rundir / runtime.TOKEN_FILE).read_text()
    sock = raw_socket(endpoint)
    cases = [
        (b"\xff\xfe garbage \x00\x01", "malformed"),
        (b'{"v": 1, "op": "ping", "ro', "malformed"),
        (json.dumps({"v": 99, "op": "ping", "token": token}).encode(), "version_mismatch"),
        (json.dumps({"v": 1, "op": "ping", "token": "wrong"}).encode(), "unauthorized"),
        (json.dumps({"v": 1, "op": "ping"}).encode(), "unauthorized"),
        (json.dumps({"v": 1, "op": "rm -rf", "token": token}).encode(), "unknown_op"),
        (
            json.dumps({"v": 1, "op": "search", "root": "relative/dir", "token": token}).encode(),
            "bad_request",
        ),
    ]
    for payload, code in cases:
        sock.send_multipart([b"", payload])
        reply = json.loads(sock.recv_multipart()[-1])
        assert reply["ok"] is False and reply["error"]["code"] == code, (payload[:40], reply)
        assert user.request("ping")["ok"]
    huge = raw_socket(endpoint)
    huge.send_multipart([b"", b"x" * (100 * 1024 * 1024)])
    with pytest.raises(zmq.Again):  # libzmq drops the oversized frame and the peer
        huge.recv_multipart()
    assert user.request("ping")["ok"]
    sock.close()
    huge.close()


def test_version_mismatch_names_both_versions(daemon: tuple[User, Path]) -> None:
    user, _ = daemon
    sock = raw_socket(user.info()["endpoint"])
    sock.send_multipart([b"", json.dumps({"v": 7, "op": "ping"}).encode()])
    message = json.loads(sock.recv_multipart()[-1])["error"]["message"]
    assert "7" in message and str(protocol.PROTOCOL_VERSION) in message
    sock.close()


def test_searches_are_served_while_an_index_job_runs(
    daemon: tuple[User, Path], tmp_path: Path
) -> None:
    user, first = daemon
    repo = make_repo(tmp_path / "busy")
    assert user.zg("index", "--mode", "direct", cwd=repo).returncode == 0
    make_repo(tmp_path / "more", files=1200)
    for path in (tmp_path / "more").glob("gen_*.py"):
        path.rename(repo / path.name)
    indexing = user.popen("index", "--mode", "server", "--json", cwd=repo)
    wait_for(
        lambda: any(
            w["root"] == str(repo) and w["job_running"] for w in user.server_status()["workspaces"]
        ),
        30,
        "the index job to start",
    )
    searches = [
        user.popen("search", "--json", "--refresh", "off", "--mode", "server", query, cwd=repo)
        for query in ("retry with backoff", "least recently used cache")
    ]
    outputs = [s.communicate(timeout=60) for s in searches]
    still_running = any(
        w["root"] == str(repo) and w["job_running"] for w in user.server_status()["workspaces"]
    )
    for search, (stdout, stderr) in zip(searches, outputs):
        assert search.returncode == 0, stderr
        assert json.loads(stdout)["mode"] == "server"
    assert json.loads(outputs[0][0])["hits"][0]["path"] == "retry.py"
    assert still_running, "the searches waited for the index job"
    assert user.zg_binary("search", "--mode", "server", "cache", cwd=first).returncode == 0
    status = user.server_status()
    assert len(status["workspaces"]) == 2 and status["model_instances"] == 1  # one model for both
    stdout, stderr = indexing.communicate(timeout=120)
    assert indexing.returncode == 0, stderr
    assert json.loads(stdout)["files"] == 1200


def test_kill9_midway_falls_back_to_direct_and_on_cleans_stale_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    user = User(tmp_path / "u")
    user.adopt(monkeypatch)
    repo = make_repo(tmp_path / "repo", files=MIDWAY_FILES)
    pid = user.start()
    search = user.popen(
        "search", "--json", "retry with backoff", cwd=repo
    )  # auto: the daemon builds the index
    wait_for(
        lambda: any(w["job_running"] for w in user.server_status()["workspaces"]),
        30,
        "the index job",
    )
    os.kill(pid, signal.SIGKILL)
    stdout, stderr = search.communicate(timeout=120)
    assert search.returncode == 0, stderr
    assert json.loads(stdout)["mode"] == "direct"
    assert (user.rundir / runtime.INFO_FILE).exists() and (
        user.rundir / runtime.SOCKET_FILE
    ).exists()
    after = user.zg_binary(
        "search", "--json", "least recently used cache", cwd=repo, timeout=60
    )  # no wait for the dead daemon
    assert after.returncode == 0 and json.loads(after.stdout)["mode"] == "direct"
    assert user.zg_binary("server", "status", "--check-ready").returncode == 1
    new_pid = user.start()
    assert new_pid != pid and client.probe(1000) is not None
    off = user.zg_binary("server", "off")
    assert off.returncode == 0 and "stopped" in off.stdout
    assert (
        not (user.rundir / runtime.INFO_FILE).exists()
        and not (user.rundir / runtime.SOCKET_FILE).exists()
    )
    assert user.zg_binary("server", "off").returncode == 0


def test_tcp_endpoint_requires_the_token(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    user = User(tmp_path / "u")
    user.adopt(monkeypatch)
    repo = make_repo(tmp_path / "repo")
    user.start("--endpoint", "tcp://127.0.0.1:*")
    try:
        endpoint = user.info()["endpoint"]
        assert endpoint.startswith("tcp://127.0.0.1:")
        wrong = user.request("ping", token="not-the-token")
        assert wrong["ok"] is False and wrong["error"]["code"] == "unauthorized"
        assert user.request("ping")["ok"]
        out = user.zg_binary("search", "--json", "--mode", "server", "retry with backoff", cwd=repo)
        assert out.returncode == 0, out.stderr
        assert json.loads(out.stdout)["hits"][0]["path"] == "retry.py"
    finally:
        assert user.zg_binary("server", "off").returncode == 0


def test_stopped_daemon_fails_fast_and_off_stops_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    user = User(tmp_path / "u")
    user.adopt(monkeypatch)
    repo = make_repo(tmp_path / "repo")
    pid = user.start()
    try:
        assert (
            user.zg_binary("index", "--mode", "server", cwd=repo).returncode == 0
        )  # the daemon now holds the index
        freeze_process(pid)
        for mode in ("auto", "server", "direct"):
            out = user.zg_binary(
                "search", "--mode", mode, "retry with backoff", cwd=repo, timeout=60
            )  # fails, never hangs
            lines = out.stderr.strip().splitlines()
            assert out.returncode == 2 and out.stdout == "" and len(lines) == 1, (mode, out.stderr)
            assert f"pid {pid}" in lines[0] and "zg server off" in lines[0], lines[0]
            assert "--mode auto" not in lines[0]
        status = user.zg_binary("server", "status", timeout=30)
        assert (
            status.returncode == 1 and f"pid {pid}" in status.stdout and "stopped" in status.stdout
        )
        off = user.zg_binary("server", "off", timeout=90)
        assert off.returncode == 0, off.stderr
        assert f"pid {pid}" in off.stdout and not runtime.pid_alive(pid)
        assert (
            not (user.rundir / runtime.INFO_FILE).exists()
            and not (user.rundir / runtime.SOCKET_FILE).exists()
        )
        after = user.zg_binary("search", "--json", "retry with backoff", cwd=repo)
        assert after.returncode == 0, after.stderr
        result = json.loads(after.stdout)
        assert result["mode"] == "direct" and result["hits"][0]["path"] == "retry.py"
    finally:
        reap(pid)


def test_daemon_stopped_midway_fails_fast(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    user = User(tmp_path / "u")
    user.adopt(monkeypatch)
    repo = make_repo(tmp_path / "repo", files=MIDWAY_FILES)
    pid = user.start()
    try:
        search = user.popen(
            "search", "--json", "retry with backoff", cwd=repo
        )  # auto: the daemon builds the index
        wait_for(
            lambda: any(w["job_running"] for w in user.server_status()["workspaces"]),
            30,
            "the index job",
        )
        freeze_process(pid)
        stdout, stderr = search.communicate(timeout=60)  # fails, never hangs
        assert search.returncode == 2 and stdout == "", stderr
        assert (
            f"the zg daemon (pid {pid}) holds this index and is not answering" in stderr
            and "zg server off" in stderr
        )
        off = user.zg_binary("server", "off", timeout=90)
        assert off.returncode == 0 and not runtime.pid_alive(pid), off.stderr
    finally:
        reap(pid)
