"""`zg serve` as a real process, queried with httpx: each endpoint answers what `zg ... --json` prints,
errors carry the CLI's line, loopback binds refuse foreign Host headers, other binds demand the token."""

from __future__ import annotations

import json
import re
import selectors
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

import corpus
from conftest import ZG
from daemon_helpers import User
from test_frontends_mcp import DIRECT, FILES
from test_thin_client import heavy, imported

pytestmark = pytest.mark.e2e


def start(
    user: User, root: Path, *args: str, env: dict[str, str] | None = None
) -> tuple[subprocess.Popen[str], str]:
    """`zg serve --port 0 ARGS` in `root`; the process and its base URL (from its start-up line)."""
    proc = subprocess.Popen(
        [ZG, "serve", "--port", "0", *args],
        cwd=root,
        env={**user.env, **DIRECT, **(env or {})},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stderr is not None
    sel = selectors.DefaultSelector()
    sel.register(proc.stderr, selectors.EVENT_READ)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and sel.select(timeout=1) == [] and proc.poll() is None:
        pass
    if (
        proc.poll() is None and sel.select(timeout=0) == []
    ):  # else readline() would block the suite for good
        proc.kill()
        pytest.fail("zg serve printed no start-up line within 60 s")
    line = proc.stderr.readline()
    found = re.search(r"http://\S+?:(\d+)/", line)
    assert found, line
    return proc, f"http://127.0.0.1:{found.group(1)}"


def stop(proc: subprocess.Popen[str]) -> None:
    proc.terminate()
    proc.wait(timeout=30)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[User, Path, str]]:
    base = tmp_path_factory.mktemp("serve")
    user = User(base)
    root = corpus.make_repo(base / "repo", FILES)
    assert user.zg("index", cwd=root, env=DIRECT).returncode == 0
    proc, url = start(user, root)
    yield user, root, url
    stop(proc)


def cli(user: User, root: Path, *args: str) -> Any:
    proc = user.zg(*args, cwd=root, env=DIRECT)
    assert proc.returncode in (0, 1), proc.stderr
    return json.loads(proc.stdout)


def get(url: str, endpoint: str, **params: Any) -> httpx.Response:
    return httpx.get(url + endpoint, params=params, timeout=120)


def test_endpoints_answer_what_the_cli_prints(served: tuple[User, Path, str]) -> None:
    user, root, url = served
    found = get(url, "/search", q="retry with exponential backoff")
    assert found.status_code == 200
    assert (
        found.json()["hits"]
        == cli(user, root, "search", "--json", "retry with exponential backoff")["hits"]
    )
    assert found.json()["hits"][0]["path"] == "src/net/retry.py"
    filtered = get(url, "/search", q=["session cookie", "config loader"], type="py", limit=2).json()
    expected = cli(
        user,
        root,
        "search",
        "--json",
        "-q",
        "session cookie",
        "-q",
        "config loader",
        "-t",
        "py",
        "-n",
        "2",
    )
    assert (
        filtered["groups"] == expected["groups"]
        and filtered["distinct_locations"] == expected["distinct_locations"]
    )

    text = get(url, "/read", path="src/net/retry.py", start=3, end=6).json()["text"]
    assert text == "".join(
        line + "\n" for line in (root / "src/net/retry.py").read_text().splitlines()[2:6]
    )
    assert get(url, "/callers", symbol="retry_with_backoff").json() == cli(
        user, root, "callers", "retry_with_backoff", "--json"
    )
    assert get(url, "/trace", entry="fetch", direction="forward").json() == cli(
        user, root, "trace", "fetch", "--direction", "forward", "--json"
    )
    assert get(url, "/adr/constraints", path="src/net/retry.py").json()["adrs"] == cli(
        user, root, "adr", "for", "src/net/retry.py", "--json"
    )
    status = get(url, "/status").json()
    assert (status["indexed"], status["files"]) == (
        True,
        cli(user, root, "status", "--json")["files"],
    )


def test_errors_carry_the_cli_line_and_foreign_hosts_are_refused(
    served: tuple[User, Path, str],
) -> None:
    user, root, url = served
    outside = get(url, "/read", path="../secret.txt")
    proc = user.zg("read", "../secret.txt", cwd=root, env=DIRECT)
    assert outside.status_code == 400 and outside.json()["error"]["message"] == proc.stderr.strip()
    nul = get(
        url, "/read", path="src/net/retry.py\0.txt"
    )  # no file name holds NUL: refused, not a dropped connection
    assert nul.status_code == 400 and nul.json()["error"]["message"].startswith(
        "zg: refusing a path with a NUL byte"
    )
    bad_glob = get(url, "/search", q="retry", glob="src/[unclosed")
    assert bad_glob.status_code == 400
    assert (
        bad_glob.json()["error"]["message"]
        == user.zg("search", "retry", "-g", "src/[unclosed", cwd=root, env=DIRECT).stderr.strip()
    )
    assert get(url, "/search", q="retry", limit="many").status_code == 400
    assert get(url, "/nowhere").status_code == 404
    rebound = httpx.get(url + "/status", headers={"Host": "attacker.example:80"}, timeout=30)
    assert rebound.status_code == 403 and "files" not in rebound.text


def test_a_non_loopback_bind_needs_consent_and_then_a_token(served: tuple[User, Path, str]) -> None:
    user, root, _ = served
    corpus.assert_one_line_error(
        user.zg_binary("serve", "--host", "0.0.0.0", "--port", "0", cwd=root),
        "0.0.0.0",
        "--allow-non-loopback",
    )
    proc, url = start(
        user,
        root,
        "--host",
        "0.0.0.0",
        "--allow-non-loopback",
        env={"ZG_SERVE_TOKEN": "s3cret-token"},
    )
    try:
        assert httpx.get(url + "/status", timeout=30).status_code == 401
        assert (
            httpx.get(
                url + "/status", headers={"Authorization": "Bearer wrong"}, timeout=30
            ).status_code
            == 401
        )
        ok = httpx.get(
            url + "/status", headers={"Authorization": "Bearer s3cret-token"}, timeout=60
        )
        assert ok.status_code == 200 and ok.json()["indexed"] is True
    finally:
        stop(proc)


def test_only_loopback_host_names_are_answered(served: tuple[User, Path, str]) -> None:
    _, _, url = served
    port = url.rsplit(":", 1)[1]
    for host in (
        "localhost.attacker.example",
        "127.0.0.1.attacker.example",
        f"attacker.example:{port}",
        "localhost:80:80",
        "[::1",
        "[::1]attacker.example",
        "attacker.example@127.0.0.1",
        "",
    ):
        refused = httpx.get(url + "/status", headers={"Host": host}, timeout=30)
        assert refused.status_code == 403 and "files" not in refused.text, host
    for host in (f"LOCALHOST:{port}", f"[::1]:{port}", f"127.0.0.1:{port}", f"127.0.0.2:{port}"):
        assert httpx.get(url + "/status", headers={"Host": host}, timeout=60).status_code == 200, (
            host
        )
    with socket.create_connection(
        ("127.0.0.1", int(port)), timeout=30
    ) as sock:  # HTTP/1.0 needs no Host header
        sock.sendall(b"GET /status HTTP/1.0\r\n\r\n")
        assert sock.makefile("rb").readline().split()[1] == b"403"


def test_serve_starts_without_the_engine_stack(served: tuple[User, Path, str]) -> None:
    user, root, _ = served
    with (
        socket.socket() as taken
    ):  # a port in use: zg serve builds everything up to the bind, then exits 2
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        out, names = imported(user, "serve", "--port", str(taken.getsockname()[1]), cwd=root)
    assert out.returncode == 2 and out.stderr.splitlines()[-1].startswith("zg: cannot listen"), (
        out.stderr[-500:]
    )
    assert "zgrep.frontends.http_api" in names and heavy(names) == []


def test_cross_site_requests_are_refused(served: tuple[User, Path, str]) -> None:
    # a page of another site could make the browser GET /search: that built an index and started the daemon
    _, root, url = served
    port = url.rsplit(":", 1)[1]
    for headers in (
        {"Origin": "https://attacker.example"},
        {"Origin": "null"},
        {"Origin": "http://127.0.0.1.attacker.example"},
        {"Origin": "http://localhost@attacker.example"},
        {"Sec-Fetch-Site": "cross-site"},
        {"Origin": f"http://localhost:{port}", "Sec-Fetch-Site": "cross-site"},
    ):
        refused = httpx.get(url + "/search", params={"q": "retry"}, headers=headers, timeout=30)
        assert refused.status_code == 403 and "cross-site" in refused.json()["error"]["message"], (
            headers
        )
        assert "hits" not in refused.text
    for headers in (
        {"Origin": f"http://localhost:{port}"},
        {"Origin": f"http://[::1]:{port}"},
        {"Sec-Fetch-Site": "same-origin"},
        {"Sec-Fetch-Site": "none"},
    ):
        assert httpx.get(url + "/status", headers=headers, timeout=60).status_code == 200, headers


def test_queries_per_request_are_capped(served: tuple[User, Path, str]) -> None:
    _, _, url = served
    many = get(url, "/search", q=[f"retry {i}" for i in range(400)])
    assert many.status_code == 400 and "at most 20 queries" in many.json()["error"]["message"]
    fields = get(url, "/search", q="retry", glob=[f"src/{i}/*.py" for i in range(1000)])
    assert fields.status_code == 400 and "query parameters" in fields.json()["error"]["message"]
    assert get(url, "/search", q=[f"retry {i}" for i in range(20)]).status_code == 200


def test_an_idle_connection_is_closed(served: tuple[User, Path, str]) -> None:
    _, _, url = served
    port = int(url.rsplit(":", 1)[1])
    with (
        socket.create_connection(("127.0.0.1", port), timeout=120) as idle,
        socket.create_connection(("127.0.0.1", port), timeout=120) as half,
    ):
        half.sendall(b"GET /status HTTP/1.1\r\nHost: localhost\r\n")  # never finishes its headers
        assert (
            idle.recv(1) == b"" and half.recv(1) == b""
        )  # closed by the server (a hung one raises TimeoutError)
    assert get(url, "/status").status_code == 200


def test_relations_ops_take_their_contract_arguments(served: tuple[User, Path, str]) -> None:
    """/callers, /trace and /impact come from the op table, with `edges` (repeated or comma-separated)."""
    user, root, url = served
    assert get(url, "/callers", symbol="retry_with_backoff", edges="call").json() == cli(
        user, root, "callers", "retry_with_backoff", "--edges", "call", "--json"
    )
    assert get(
        url, "/trace", entry="fetch", direction="forward", edges=["call", "reference"]
    ).json() == cli(
        user,
        root,
        "trace",
        "fetch",
        "--direction",
        "forward",
        "--edges",
        "call,reference",
        "--json",
    )
    impact = get(url, "/impact", targets="src/net/retry.py:retry_with_backoff", depth=2)
    assert impact.status_code == 200 and impact.json() == cli(
        user, root, "impact", "src/net/retry.py:retry_with_backoff", "--depth", "2", "--json"
    )
    bad = get(url, "/callers", symbol="fetch", edges="calls")
    assert bad.status_code == 400 and bad.json()["error"]["message"].startswith(
        "zg: --edges: unknown kind 'calls'"
    )
    assert get(url, "/impact", targets="src/net/retry.py", staged="perhaps").status_code == 400
    leaked = get(
        url, "/callers", symbol="retry_with_backoff", config='{"milvus.uri": "http://elsewhere"}'
    )
    assert (
        leaked.status_code == 200
    )  # what every request carries (its settings) is not a query parameter


def test_other_methods_are_answered_in_json(served: tuple[User, Path, str]) -> None:
    _, _, url = served
    for method in ("POST", "PUT", "DELETE", "PATCH"):
        answer = httpx.request(
            method, url + "/search", params={"q": "retry"}, content=b'{"q": "retry"}', timeout=30
        )
        assert answer.status_code == 405 and answer.headers["Allow"] == "GET", (method, answer.text)
        assert answer.headers["Content-Type"].startswith("application/json")
        assert answer.json()["error"] == {
            "code": "method_not_allowed",
            "message": f"zg: this API answers GET only, not {method}",
        }
