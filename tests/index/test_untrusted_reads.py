"""Every read of workspace content goes through the guarded open: an ADR anchor on /dev/zero, a FIFO, a 50 MB
file or `.git/config` cannot exhaust, wedge or leak anything, in the CLI, the MCP server or the HTTP API."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import corpus
from conftest import ZG
from zgrep.config import Config
from zgrep.frontends.api import READ_TEXT_MAX_BYTES, FrontendError, Workspace
from zgrep.frontends.http_api import make_server

ADR = (
    "---\nid: ADR-0001\ntitle: t\nstatus: accepted\ndate: 2024-01-01\nchange_type: api\n"
    "code_anchors:\n  - {path: zero.txt}\n---\n# t\n"
)


# Started from a small launcher: a child forked from the (large) pytest worker would count the worker's pages.
_LAUNCHER = (
    "import os, subprocess, sys\n"
    "p = subprocess.Popen(sys.argv[1:], stdout=subprocess.DEVNULL)\n"
    "_, status, usage = os.wait4(p.pid, 0)\n"
    "print(os.waitstatus_to_exitcode(status), usage.ru_maxrss)\n"
)


def _peak_run(args: list[str], cwd: Path) -> tuple[int, str, int]:
    """(exit code, stderr, peak RSS in KiB) of a command, from its own rusage."""
    proc = subprocess.run(
        [sys.executable, "-c", _LAUNCHER, *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
    )
    code, peak = proc.stdout.split()
    return int(code), proc.stderr, int(peak)


@pytest.fixture
def zero_repo(tmp_path: Path) -> Path:
    root = corpus.make_repo(
        tmp_path / "zero", {"a.py": "def f(): pass\n", "docs/adr/0001-t.md": ADR}, commit=False
    )
    os.symlink("/dev/zero", root / "zero.txt")
    corpus.git(root, "add", "-A")
    corpus.git(root, "commit", "-qm", "i")
    return root


@pytest.mark.e2e
def test_an_anchor_on_dev_zero_is_refused_in_one_line_with_little_memory(zero_repo: Path) -> None:
    code, err, peak_kib = _peak_run([ZG, "adr", "check"], zero_repo)
    assert code == 2
    assert err.count("\n") == 1 and "zero.txt" in err and "outside the workspace" in err
    assert peak_kib < 200 * 1024  # it read 2.66 GB before


def test_a_fifo_anchor_and_a_record_linked_out_are_refused(tmp_path: Path, zg) -> None:
    root = corpus.make_repo(
        tmp_path / "fifo", {"docs/adr/0001-t.md": ADR.replace("zero.txt", "pipe")}
    )
    os.mkfifo(root / "pipe")
    proc = zg("adr", "check", cwd=root, timeout=60)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "pipe" in proc.stderr
    assert "not a regular file" in proc.stderr
    (root / "pipe").unlink()
    os.symlink("/etc/passwd", root / "docs" / "adr" / "0007-x.md")
    proc = zg("adr", "check", cwd=root, timeout=60)
    assert (
        proc.returncode == 2
        and "0007-x.md" in proc.stderr
        and "root:" not in proc.stdout + proc.stderr
    )


def _workspace(root: Path) -> Workspace:
    return Workspace(root, Config.load(root), "mcp")


def _within(seconds: float, fn: Any) -> Any:
    """fn()'s result, failing the test when it has not returned by the deadline (it used to block forever)."""
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["value"] = fn()
        except BaseException as exc:  # handed to the test thread
            box["error"] = exc

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(seconds)
    assert not worker.is_alive(), "the call did not return"
    if "error" in box:
        raise box["error"]
    return box["value"]


def test_the_front_ends_adr_check_refuses_the_dev_zero_anchor(zero_repo: Path) -> None:
    with pytest.raises(FrontendError, match="refusing to read zero.txt"):
        _within(30, lambda: _workspace(zero_repo).adr_check())


@pytest.fixture
def hostile(tmp_path: Path) -> Path:
    root = corpus.make_repo(tmp_path / "hostile", {"a.py": "def f():\n    return 1\n"})
    os.mkfifo(root / "fifo1")
    with open(root / "big.txt", "w") as fh:
        line = "x" * 99 + "\n"
        for _ in range(50 * 1024 * 1024 // 100):
            fh.write(line)
    (root / "medium.txt").write_text("".join(f"line {i} " + "y" * 90 + "\n" for i in range(20_000)))
    return root


def test_reads_refuse_fifos_huge_files_and_state_dirs_and_cut_long_slices(hostile: Path) -> None:
    ws = _workspace(hostile)
    with pytest.raises(FrontendError, match="cannot read fifo1: it is not a regular file"):
        _within(30, lambda: ws.read("fifo1"))
    with pytest.raises(FrontendError, match="larger than 16 MiB"):
        ws.read("big.txt")
    with pytest.raises(FrontendError, match="not served"):
        ws.read(".git/config")
    doc = ws.read("medium.txt")
    assert (
        doc["truncated"] is True
        and doc["start_line"] == 1
        and doc["end_line"] < doc["total_lines"] == 20_000
    )
    assert (
        len(doc["text"].encode()) <= READ_TEXT_MAX_BYTES
        and f"start={doc['end_line'] + 1}" in doc["note"]
    )
    rest = ws.read("medium.txt", doc["end_line"] + 1)
    assert rest["text"].startswith(f"line {doc['end_line']} ")
    assert ws.read("a.py") == {
        "path": "a.py",
        "start_line": 1,
        "end_line": 2,
        "total_lines": 2,
        "text": "def f():\n    return 1\n",
    }


@pytest.fixture
def http(hostile: Path) -> Iterator[str]:
    server = make_server(_workspace(hostile), "127.0.0.1", 0, None)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def _get(url: str) -> tuple[int, dict[str, Any]]:
    try:
        with urllib.request.urlopen(url, timeout=30) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def test_http_read_of_a_fifo_answers_at_once(http: str) -> None:
    for _ in range(3):
        status, doc = _get(f"{http}/read?path=fifo1")
        assert status == 400 and "not a regular file" in doc["error"]["message"]
    status, doc = _get(f"{http}/read?path=.git/config")
    assert status == 400 and "not served" in doc["error"]["message"]
    assert _get(f"{http}/read?path=a.py")[0] == 200


def _rpc(proc: subprocess.Popen[str], id_: int, method: str, params: dict[str, Any]) -> None:
    assert proc.stdin is not None
    proc.stdin.write(
        json.dumps({"jsonrpc": "2.0", "id": id_, "method": method, "params": params}) + "\n"
    )
    proc.stdin.flush()


@pytest.mark.e2e
def test_zg_mcp_survives_45_fifo_reads_and_exits_when_stdin_closes(hostile: Path) -> None:
    env = {**os.environ, "ZG_MODE": "direct"}
    proc = subprocess.Popen(
        [ZG, "mcp"],
        cwd=hostile,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert proc.stdin is not None and proc.stdout is not None
    try:
        _rpc(
            proc,
            0,
            "initialize",
            {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "t", "version": "1"},
            },
        )
        proc.stdin.write(
            json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}) + "\n"
        )
        for i in range(1, 46):
            _rpc(proc, i, "tools/call", {"name": "read", "arguments": {"path": "fifo1"}})
        _rpc(proc, 46, "tools/call", {"name": "read", "arguments": {"path": "a.py"}})
        answers: dict[int, Any] = {}
        deadline = time.monotonic() + 90
        while len(answers) < 47 and time.monotonic() < deadline:
            line = _within(max(deadline - time.monotonic(), 1), proc.stdout.readline)
            if not line:
                break
            msg = json.loads(line)
            if "id" in msg:
                answers[msg["id"]] = msg
        assert len(answers) == 47
        assert all(answers[i]["result"]["isError"] for i in range(1, 46))
        assert "return 1" in json.dumps(answers[46]["result"])
        proc.stdin.close()
        assert proc.wait(timeout=30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_http_adr_check_refuses_the_dev_zero_anchor_in_one_line(zero_repo: Path) -> None:
    server = make_server(_workspace(zero_repo), "127.0.0.1", 0, None)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        status, doc = _within(
            60, lambda: _get(f"http://127.0.0.1:{server.server_address[1]}/adr/check")
        )
    finally:
        server.shutdown()
        server.server_close()
    assert status == 400 and doc["error"]["message"].startswith(
        "zg adr: error: refusing to read zero.txt"
    )
