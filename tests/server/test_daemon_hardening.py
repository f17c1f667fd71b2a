"""Daemon hardening (issue 8): hostile frames, exposed endpoints, remote consent, eval through the daemon.

Real daemon processes and real ZeroMQ sockets throughout.
"""

from __future__ import annotations

import json
import random
import secrets
from pathlib import Path
from typing import Any
from collections.abc import Iterator

import pytest
import zmq

from daemon_helpers import User, make_repo, raw_socket, wait_for
from embedding_server import EmbeddingServer
from fuzzframes import fuzz_frames, spellings
from zgrep.server import protocol, runtime

pytestmark = pytest.mark.e2e

FUZZ_FRAMES = 2400
FUZZ_WINDOW = 50  # frames in flight at once: below every socket's high-water mark


@pytest.fixture(scope="module")
def tcp_daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[User, Path]]:
    """One daemon on a loopback TCP port (where a client without the token can reach it) and an indexed repo."""
    base = tmp_path_factory.mktemp("hardening")
    user = User(base)
    repo = make_repo(base / "repo")
    user.start("--endpoint", "tcp://127.0.0.1:*")
    out = user.zg_binary("index", "--mode", "server", cwd=repo)
    assert out.returncode == 0, out.stderr
    yield user, repo
    user.zg_binary("server", "off")


def ask(sock: zmq.Socket, *frames: bytes) -> dict[str, Any]:
    """Send one multi-frame message; the daemon's reply (its last frame), decoded."""
    sock.send_multipart(list(frames))
    return protocol.decode_response(sock.recv_multipart()[-1])


def assert_serving(user: User, repo: Path) -> None:
    """The daemon still answers a ping and a normal search."""
    assert user.request("ping")["ok"]
    out = user.zg_binary("search", "--json", "--mode", "server", "retry with backoff", cwd=repo)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["hits"][0]["path"] == "retry.py"


# --- item 1: one frame must not kill the daemon ---------------------------------------------------------------


def test_the_issue_frames_answer_malformed_before_any_token_check(
    tcp_daemon: tuple[User, Path],
) -> None:
    user, repo = tcp_daemon
    sock = raw_socket(user.info()["endpoint"])
    for payload in (
        b"[" * 200000,
        b'{"v":' + b"1" * 5000 + b"}",
        b'{"v":1,"op":"ping","token":"\\ud800"}',
        b'{"v":1,"op":["ping"]}',
        b'{"v":true,"op":"ping"}',
    ):
        reply = ask(sock, b"", payload)
        assert reply["ok"] is False and reply["error"]["code"] == "malformed", (payload[:30], reply)
        assert user.request("ping")["ok"], payload[:30]
    sock.close()
    assert_serving(user, repo)


def test_type_checked_fields_answer_malformed_with_the_token(tcp_daemon: tuple[User, Path]) -> None:
    user, repo = tcp_daemon
    token = (user.rundir / runtime.TOKEN_FILE).read_text()
    sock = raw_socket(user.info()["endpoint"])
    base = {"v": 1, "op": "index", "root": str(repo), "token": token}
    bad = [
        {"root": "/" + "r" * 5000},
        {"root": "/tmp/a\0b"},
        {"root": "\ud800"},
        {"root": ["/"]},
        {"args": {"paths": ["a.py", 3]}},
        {"args": {"paths": "a.py"}},
        {"args": {"config": ["x"]}},
        {"args": {"config": {"search.limit": [[[]]]}}},
        {"args": {"full": "yes"}},
        {"args": {"progress": {}}},
        {"args": {"refresh": 7}},
        {"token": 12},
        {"v": 1.0},
    ]
    for fields in bad:
        payload = json.dumps({**base, **fields}).encode()
        reply = ask(sock, b"", payload)
        assert reply["ok"] is False and reply["error"]["code"] in (
            "malformed",
            "bad_request",
            "version_mismatch",
        ), (fields, reply)
        assert len(reply["error"]["message"]) < 300, reply
    sock.close()
    assert_serving(user, repo)


def test_extra_frames_get_one_malformed_answer(tcp_daemon: tuple[User, Path]) -> None:
    user, repo = tcp_daemon
    token = (user.rundir / runtime.TOKEN_FILE).read_text()
    sock = raw_socket(user.info()["endpoint"])
    ping = protocol.encode(protocol.make_request("ping", None, token=token))
    assert (
        ask(sock, b"", ping)["ok"] and ask(sock, ping)["ok"]
    )  # with or without the empty delimiter
    for frames in ([b"", b"extra", ping], [b"", b"", b"", ping], [b"x", ping]):
        reply = ask(sock, *frames)
        assert reply["ok"] is False and reply["error"]["code"] == "malformed", (frames, reply)
    sock.close()
    assert_serving(user, repo)


def test_fuzzed_frames_all_get_answers_and_the_daemon_keeps_serving(
    tcp_daemon: tuple[User, Path],
) -> None:
    user, repo = tcp_daemon
    token = (user.rundir / runtime.TOKEN_FILE).read_text()
    rng = random.Random(8)
    sock = raw_socket(user.info()["endpoint"])
    sock.setsockopt(zmq.RCVTIMEO, 60_000)
    sent = answered = 0
    big = b"x" * (protocol.MAX_MESSAGE_BYTES // 2 + 1)
    foreign = [
        secrets.token_urlsafe(32) for _ in range(3)
    ]  # other daemons' tokens: the same shape, not this one's
    messages = [[b"", big, big]] + [
        fuzz_frames(rng, token, spellings(repo), foreign) for _ in range(FUZZ_FRAMES)
    ]
    codes: dict[str, int] = {}
    for start in range(0, len(messages), FUZZ_WINDOW):
        window = messages[start : start + FUZZ_WINDOW]
        for frames in window:
            sock.send_multipart(frames)
            sent += 1
        for _ in window:
            try:
                reply = protocol.decode_response(sock.recv_multipart()[-1])
            except zmq.Again:
                raise AssertionError(
                    f"the daemon stopped answering after {answered} of {sent} fuzzed messages"
                ) from None
            answered += 1
            code = "ok" if reply["ok"] else reply["error"]["code"]
            codes[code] = codes.get(code, 0) + 1
    sock.close()
    assert sent == answered == FUZZ_FRAMES + 1
    assert codes.get("too_large") and codes.get("malformed", 0) > FUZZ_FRAMES // 4, codes
    assert codes.get("ok") and "internal" not in codes, (
        codes
    )  # hostile args are refused by name, not by a crash
    assert_serving(user, repo)


# --- item 2: listen only on loopback unless the user names the risk -----------------------------------------


def assert_usage_error(out: Any, *needles: str) -> None:
    lines = out.stderr.strip().splitlines()
    assert out.returncode == 2 and len(lines) == 1 and "Traceback" not in out.stderr, out.stderr
    assert all(n in lines[0] for n in needles), lines[0]


def test_non_loopback_and_foreign_endpoints_are_refused(tmp_path: Path) -> None:
    user = User(tmp_path / "u")
    try:
        for endpoint in (
            "tcp://0.0.0.0:*",
            "tcp://*:*",
            "tcp://eth0:*",
            "tcp://10.1.2.3:*",
            "tcp://[::]:*",
        ):
            for command in ("on", "run"):
                out = user.zg_binary("server", command, "--endpoint", endpoint, timeout=60)
                assert_usage_error(out, endpoint, "--allow-non-loopback")
                assert not (user.rundir / runtime.INFO_FILE).exists(), (endpoint, command)
        for endpoint in ("http://x", "tcp://127.0.0.1", "inproc://zgrep", "ipc://"):
            assert_usage_error(
                user.zg_binary("server", "on", "--endpoint", endpoint),
                "unsupported endpoint",
                "ipc://PATH",
            )
        config = Path(user.env["XDG_CONFIG_HOME"]) / "zgrep" / "config.toml"
        config.parent.mkdir(parents=True)
        config.write_text('[server]\nendpoint = "tcp://0.0.0.0:*"\n')
        assert_usage_error(
            user.zg_binary("server", "on"), "tcp://0.0.0.0:*", "--allow-non-loopback"
        )
        assert not (user.rundir / runtime.INFO_FILE).exists()
    finally:
        user.zg_binary("server", "off")


def test_the_explicit_flag_listens_on_all_interfaces_with_the_token(tmp_path: Path) -> None:
    user = User(tmp_path / "u")
    try:
        user.start("--endpoint", "tcp://0.0.0.0:*", "--allow-non-loopback")
        assert user.info()["endpoint"].startswith("tcp://0.0.0.0:")
        for token in ("", "not-the-token"):
            wrong = user.request("ping", token=token)
            assert wrong["ok"] is False and wrong["error"]["code"] == "unauthorized"
        assert user.request("ping")["ok"]
        assert (
            user.zg_binary("server", "on", "--endpoint", "tcp://127.0.0.1:*").returncode == 0
        )  # already running
    finally:
        assert user.zg_binary("server", "off").returncode == 0


# --- item 3: the daemon's own environment grants no remote consent -------------------------------------------


def test_remote_consent_is_per_command_not_the_daemons_environment(tmp_path: Path) -> None:
    user = User(tmp_path / "u")
    repo = make_repo(tmp_path / "repo")
    config = Path(user.env["XDG_CONFIG_HOME"]) / "zgrep" / "config.toml"
    config.parent.mkdir(parents=True)
    with EmbeddingServer(dim=8) as server:
        config.write_text(
            f'[embedding]\nprovider = "ollama"\nmodel = "test-embed"\nurl = "{server.url}"\n'
            "max_retries = 0\ntimeout = 5\n"
        )
        opt_in = {"ZG_EMBEDDING_ALLOW_REMOTE": "1"}
        try:
            started = user.zg_binary("server", "on", env=opt_in)
            assert started.returncode == 0, started.stderr
            for mode in ("auto", "server"):
                plain = user.zg_binary("search", "--mode", mode, "retry with backoff", cwd=repo)
                assert_usage_error(plain, "sends code to the server at", "allow_remote = true")
            assert server.requests == []
            once = user.zg_binary("index", "--mode", "server", "--json", cwd=repo, env=opt_in)
            assert once.returncode == 0 and json.loads(once.stdout)["mode"] == "server", once.stderr
            sent = len(server.requests)
            assert sent > 0  # that one command's opt-in reached the remote embedder
            held = [w for w in user.server_status()["workspaces"] if w["root"] == str(repo)]
            assert (
                held and not held[0]["watching"]
            )  # no watcher indexes later edits under that opt-in
            (repo / "later.py").write_text("def pangolin_scales():\n    return 3\n")
            for mode in ("auto", "server"):
                plain = user.zg_binary("search", "--mode", mode, "pangolin scales", cwd=repo)
                assert_usage_error(plain, "sends code to the server at", "allow_remote = true")
            assert len(server.requests) == sent
        finally:
            user.zg_binary("server", "off")


def test_a_held_workspace_stops_sending_code_once_its_consent_is_withdrawn(tmp_path: Path) -> None:
    user = User(tmp_path / "u")
    repo = make_repo(tmp_path / "repo")
    (repo / ".zgrep.toml").write_text("[embedding]\nallow_remote = true\n")
    config = Path(user.env["XDG_CONFIG_HOME"]) / "zgrep" / "config.toml"
    config.parent.mkdir(parents=True)

    def held() -> dict[str, Any]:
        return next(w for w in user.server_status()["workspaces"] if w["root"] == str(repo))

    with EmbeddingServer(dim=8) as server:
        config.write_text(
            f'[embedding]\nprovider = "ollama"\nmodel = "test-embed"\nurl = "{server.url}"\n'
            "max_retries = 0\ntimeout = 5\n"
        )
        assert user.zg_binary("trust", cwd=repo).returncode == 0
        try:
            user.start()
            assert user.zg_binary("index", "--mode", "server", cwd=repo).returncode == 0
            sent = len(server.requests)
            assert (
                sent > 0 and held()["watching"]
            )  # the workspace's own record consents: edits get indexed
            revoked = user.zg_binary("trust", "--revoke", cwd=repo)
            assert revoked.returncode == 0, revoked.stderr
            jobs = held()["jobs_done"]
            (repo / "later.py").write_text("def pangolin_scales():\n    return 3\n")
            wait_for(lambda: held()["jobs_done"] > jobs, 30, "the watcher's index job")
            assert len(server.requests) == sent
            plain = user.zg_binary("search", "--mode", "server", "pangolin scales", cwd=repo)
            assert plain.returncode == 2 and "sends code to the server at" in plain.stderr, (
                plain.stderr
            )
            assert "zg trust" in plain.stderr and "Traceback" not in plain.stderr
            assert len(server.requests) == sent
        finally:
            user.zg_binary("server", "off")


# --- item 4 (issue 8 §6): zg eval goes through the daemon that holds the workspace ----------------------------


def test_eval_runs_through_the_daemon_holding_the_workspace(
    tcp_daemon: tuple[User, Path], tmp_path: Path
) -> None:
    user, repo = tcp_daemon
    annotations = tmp_path / "queries.json"
    annotations.write_text(
        json.dumps(
            [  # semble format
                {
                    "query": "retry with exponential backoff",
                    "relevant": ["retry.py"],
                    "category": "semantic",
                },
                {
                    "query": "least recently used cache",
                    "relevant": [{"path": "cache.py", "start_line": 1, "end_line": 3}],
                    "category": "semantic",
                },
                {"query": "parse_config", "relevant": ["parse.py"], "category": "symbol"},
            ]
        )
    )
    alone = User(tmp_path / "alone")  # no daemon: eval runs in-process
    out = alone.zg_binary("eval", "--json", str(annotations), cwd=make_repo(tmp_path / "repo"))
    assert out.returncode == 0 and json.loads(out.stdout)["mode"] == "direct", out.stderr
    assert (
        user.zg_binary("search", "--mode", "server", "retry", cwd=repo).returncode == 0
    )  # the daemon holds the index
    for mode in ("server", "auto"):
        out = user.zg_binary("eval", "--json", "--mode", mode, str(annotations), cwd=repo)
        assert out.returncode == 0, (mode, out.stderr)
        report = json.loads(out.stdout)
        assert report["mode"] == "server" and report["overall"]["queries"] == 3
        assert report["overall"]["hit@1"] == 1.0, report["per_query"]
    direct = user.zg_binary("eval", "--mode", "direct", str(annotations), cwd=repo)
    assert_usage_error(direct, "held by the zg daemon", "zg server off")
    assert user.request("ping")["ok"]


@pytest.mark.parametrize(
    "warm_config",
    [
        "{not json",
        '["a list"]',
        '{"search.limit": {"nested": 1}}',
        '{"no.such.setting": "x"}',
        '{"search.limit": 5000}',
    ],
)
def test_a_malformed_warm_config_only_skips_the_warm(tmp_path: Path, warm_config: str) -> None:
    # `zg server run --warm-config` comes from the autostarting command; whatever it holds, the daemon still
    # starts and serves the workspace (a bad value costs only the head start)
    user = User(tmp_path / "u")
    repo = make_repo(tmp_path / "repo")
    assert user.zg("index", "--mode", "direct", cwd=repo).returncode == 0
    daemon = user.popen(
        "server", "run", "--quiet", "--warm", str(repo), "--warm-config", warm_config
    )
    try:
        wait_for(
            lambda: user.zg_binary("server", "status", "--check-ready").returncode == 0,
            90,
            "the daemon to answer",
        )
        out = user.zg_binary("search", "--json", "--mode", "server", "retry with backoff", cwd=repo)
        assert out.returncode == 0, out.stderr
        assert json.loads(out.stdout)["hits"][0]["path"] == "retry.py"
    finally:
        user.zg_binary("server", "off")
        daemon.wait(timeout=60)
