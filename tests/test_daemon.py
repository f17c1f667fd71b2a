"""The resident daemon: real processes, real ZeroMQ sockets, real Milvus Lite indexes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any, Iterator

import pytest
import zmq

from conftest import ZG, git
from zgrep import client, protocol, runtime

IDLE_TIMEOUT_S = 3


class User:
    """An isolated user (runtime, state, config and cache dirs) that may run one daemon."""

    def __init__(self, base: Path) -> None:
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("ZG_")}
        for name in ("HOME", "XDG_RUNTIME_DIR", "XDG_STATE_HOME", "XDG_CONFIG_HOME", "XDG_CACHE_HOME"):
            path = base / name.lower()
            path.mkdir(mode=0o700, parents=True, exist_ok=True)
            self.env[name] = str(path)
        self.env["HF_HUB_OFFLINE"] = "1"

    def zg(self, *args: str, cwd: Path | None = None, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        return subprocess.run([ZG, *args], cwd=cwd, env=self.env, capture_output=True, text=True, timeout=timeout)

    def popen(self, *args: str, cwd: Path | None = None) -> subprocess.Popen[str]:
        return subprocess.Popen([ZG, *args], cwd=cwd, env=self.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True)

    @property
    def rundir(self) -> Path:
        return Path(self.env["XDG_RUNTIME_DIR"]) / "zgrep"

    def info(self) -> dict[str, Any]:
        return json.loads((self.rundir / runtime.INFO_FILE).read_text())

    def request(self, op: str, root: str | None = None, args: dict[str, Any] | None = None,
                token: str | None = None, timeout: float = 10) -> dict[str, Any]:
        info = self.info()
        token = token if token is not None else (self.rundir / runtime.TOKEN_FILE).read_text()
        return client.exchange(info["endpoint"], protocol.make_request(op, root, args, token=token), timeout, info["pid"])

    def server_status(self) -> dict[str, Any]:
        reply = self.request("server_status")
        assert reply["ok"], reply
        return reply["result"]

    def start(self, *extra: str) -> int:
        out = self.zg("server", "on", *extra)
        assert out.returncode == 0, out.stderr
        return self.info()["pid"]


def make_repo(root: Path, files: int = 3) -> Path:
    """A git repository with a few distinct Python modules (or many similar ones)."""
    root.mkdir(parents=True)
    git(root, "init", "-q", "-b", "main")
    (root / "retry.py").write_text(
        "import time\n\n\ndef retry_with_backoff(call, attempts=5):\n    \"\"\"Retry `call` with exponential backoff.\"\"\"\n"
        "    for n in range(attempts):\n        try:\n            return call()\n        except OSError:\n"
        "            time.sleep(2 ** n)\n    raise RuntimeError('gave up')\n")
    (root / "cache.py").write_text(
        "class LruCache:\n    \"\"\"A least-recently-used cache with a size bound.\"\"\"\n\n    def __init__(self, size):\n"
        "        self.size = size\n        self.items = {}\n\n    def get(self, key):\n        return self.items.get(key)\n")
    (root / "parse.py").write_text(
        "import json\n\n\ndef parse_config(text):\n    \"\"\"Parse a JSON configuration document.\"\"\"\n"
        "    return json.loads(text)\n")
    for i in range(files - 3):
        (root / f"gen_{i}.py").write_text("".join(
            f"def compute_{i}_{j}(value, steps={j}):\n    \"\"\"Accumulate {i} {j}.\"\"\"\n    total = value + {i}\n"
            f"    for k in range(steps):\n        total += k * {j}\n    return total\n\n\n" for j in range(8)))
    return root


def raw_socket(endpoint: str) -> zmq.Socket:
    sock = zmq.Context.instance().socket(zmq.DEALER)
    sock.setsockopt(zmq.LINGER, 0)
    sock.setsockopt(zmq.RCVTIMEO, 5000)
    sock.connect(endpoint)
    return sock


def wait_for(predicate: Any, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[User, Path]]:
    """One daemon (short idle timeout) and one indexed workspace, shared by the tests that allow it."""
    base = tmp_path_factory.mktemp("shared")
    user = User(base)
    repo = make_repo(base / "repo")
    user.start("--idle-timeout", str(IDLE_TIMEOUT_S))
    out = user.zg("index", "--mode", "server", cwd=repo)
    assert out.returncode == 0, out.stderr
    yield user, repo
    user.zg("server", "off")


@pytest.fixture
def daemon(shared: tuple[User, Path], monkeypatch: pytest.MonkeyPatch) -> tuple[User, Path]:
    """The shared daemon, with this process's environment pointing at it."""
    user, _ = shared
    for name in ("HOME", "XDG_RUNTIME_DIR", "XDG_STATE_HOME"):
        monkeypatch.setenv(name, user.env[name])
    return shared


def test_on_is_idempotent_and_status_reports(daemon: tuple[User, Path]) -> None:
    user, repo = daemon
    pid = user.info()["pid"]
    again = user.zg("server", "on")
    assert again.returncode == 0 and "already running" in again.stdout and user.info()["pid"] == pid
    ready = user.zg("server", "status", "--check-ready")
    assert ready.returncode == 0 and ready.stdout == "" and ready.stderr == ""
    status = json.loads(user.zg("server", "status", "--json").stdout)
    assert status["pid"] == pid and status["endpoint"].startswith("ipc://") and status["version"]
    sock = Path(status["endpoint"][len("ipc://"):])
    assert sock.stat().st_mode & 0o777 == 0o600 and user.rundir.stat().st_mode & 0o777 == 0o700
    assert (user.rundir / runtime.TOKEN_FILE).stat().st_mode & 0o777 == 0o600
    assert client.daemon_state()["ready"] is True


def test_server_search_equals_direct_and_idle_release(daemon: tuple[User, Path]) -> None:
    user, repo = daemon
    query = "exponential backoff between attempts"
    served = user.zg("search", "--json", "--mode", "server", query, cwd=repo)
    assert served.returncode == 0, served.stderr
    busy = user.zg("search", "--mode", "direct", query, cwd=repo)
    assert busy.returncode == 2 and "held by the zg daemon" in busy.stderr and "zg server off" in busy.stderr
    wait_for(lambda: not user.server_status()["workspaces"], IDLE_TIMEOUT_S + 10, "the idle workspace to be released")
    direct = user.zg("search", "--json", "--mode", "direct", query, cwd=repo)
    assert direct.returncode == 0, direct.stderr
    a, b = json.loads(served.stdout), json.loads(direct.stdout)
    assert (a["mode"], b["mode"]) == ("server", "direct")
    assert a["hits"] == b["hits"] and a["hits"][0]["path"] == "retry.py"
    log = (Path(user.env["XDG_STATE_HOME"]) / "zgrep" / runtime.LOG_FILE).read_text()
    assert "search" in log and query not in log


def test_refresh_background_needs_the_daemon(daemon: tuple[User, Path], tmp_path: Path) -> None:
    user, repo = daemon
    served = user.zg("search", "--json", "--refresh", "background", "parse configuration", cwd=repo)
    assert served.returncode == 0 and json.loads(served.stdout)["mode"] == "server"
    nobody = User(tmp_path)
    refused = nobody.zg("search", "--refresh", "background", "parse configuration", cwd=repo)
    assert refused.returncode == 2 and "zg server on" in refused.stderr
    absent = nobody.zg("search", "--mode", "server", "parse configuration", cwd=repo)
    assert absent.returncode == 2 and "zg server on" in absent.stderr


def test_watcher_picks_up_an_edit(daemon: tuple[User, Path]) -> None:
    user, repo = daemon
    assert user.zg("search", "--mode", "server", "--refresh", "off", "cache", cwd=repo).returncode in (0, 1)
    (repo / "quantile.py").write_text("def streaming_quantile_sketch(values):\n    \"\"\"Estimate a quantile.\"\"\"\n"
                                      "    return sorted(values)[len(values) // 2]\n")

    def found() -> bool:
        out = user.zg("search", "--json", "--mode", "server", "--refresh", "off", "streaming_quantile_sketch", cwd=repo)
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
        (json.dumps({"v": 1, "op": "search", "root": "relative/dir", "token": token}).encode(), "bad_request"),
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


def test_searches_are_served_while_an_index_job_runs(daemon: tuple[User, Path], tmp_path: Path) -> None:
    user, _ = daemon
    repo = make_repo(tmp_path / "busy")
    assert user.zg("index", "--mode", "direct", cwd=repo).returncode == 0
    make_repo(tmp_path / "more", files=300)
    for path in (tmp_path / "more").glob("gen_*.py"):
        path.rename(repo / path.name)
    indexing = user.popen("index", "--mode", "server", "--json", cwd=repo)
    wait_for(lambda: any(w["root"] == str(repo) and w["job_running"] for w in user.server_status()["workspaces"]),
             30, "the index job to start")
    searches = [user.popen("search", "--json", "--refresh", "off", "--mode", "server", query, cwd=repo)
                for query in ("retry with backoff", "least recently used cache")]
    outputs = [s.communicate(timeout=60) for s in searches]
    still_running = any(w["root"] == str(repo) and w["job_running"] for w in user.server_status()["workspaces"])
    for search, (stdout, stderr) in zip(searches, outputs):
        assert search.returncode == 0, stderr
        assert json.loads(stdout)["mode"] == "server"
    assert json.loads(outputs[0][0])["hits"][0]["path"] == "retry.py"
    assert still_running, "the searches waited for the index job"
    stdout, stderr = indexing.communicate(timeout=120)
    assert indexing.returncode == 0, stderr
    assert json.loads(stdout)["files"] == 300


def test_kill9_midway_falls_back_to_direct_and_on_cleans_stale_files(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    user = User(tmp_path / "u")
    for name in ("HOME", "XDG_RUNTIME_DIR", "XDG_STATE_HOME"):
        monkeypatch.setenv(name, user.env[name])
    repo = make_repo(tmp_path / "repo", files=300)
    pid = user.start()
    search = user.popen("search", "--json", "retry with backoff", cwd=repo)  # auto: the daemon builds the index
    wait_for(lambda: any(w["job_running"] for w in user.server_status()["workspaces"]), 30, "the index job")
    os.kill(pid, signal.SIGKILL)
    stdout, stderr = search.communicate(timeout=120)
    assert search.returncode == 0, stderr
    assert json.loads(stdout)["mode"] == "direct"
    assert (user.rundir / runtime.INFO_FILE).exists() and (user.rundir / runtime.SOCKET_FILE).exists()
    started = time.monotonic()
    after = user.zg("search", "--json", "least recently used cache", cwd=repo)
    assert after.returncode == 0 and json.loads(after.stdout)["mode"] == "direct"
    assert time.monotonic() - started < 5
    assert user.zg("server", "status", "--check-ready").returncode == 1
    new_pid = user.start()
    assert new_pid != pid and client.probe(1000) is not None
    off = user.zg("server", "off")
    assert off.returncode == 0 and "stopped" in off.stdout
    assert not (user.rundir / runtime.INFO_FILE).exists() and not (user.rundir / runtime.SOCKET_FILE).exists()
    assert user.zg("server", "off").returncode == 0


def test_tcp_endpoint_requires_the_token(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    user = User(tmp_path / "u")
    for name in ("HOME", "XDG_RUNTIME_DIR", "XDG_STATE_HOME"):
        monkeypatch.setenv(name, user.env[name])
    repo = make_repo(tmp_path / "repo")
    user.start("--endpoint", "tcp://127.0.0.1:*")
    try:
        endpoint = user.info()["endpoint"]
        assert endpoint.startswith("tcp://127.0.0.1:")
        wrong = user.request("ping", token="not-the-token")
        assert wrong["ok"] is False and wrong["error"]["code"] == "unauthorized"
        assert user.request("ping")["ok"]
        out = user.zg("search", "--json", "--mode", "server", "retry with backoff", cwd=repo)
        assert out.returncode == 0, out.stderr
        assert json.loads(out.stdout)["hits"][0]["path"] == "retry.py"
    finally:
        assert user.zg("server", "off").returncode == 0
