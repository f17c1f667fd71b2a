"""Ctrl-C during `zg index` / `zg search`: exit 130 (not 1, which means "no hits"), one line, and an index
that the next run completes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from conftest import ZG
from corpus import make_repo, run_zg, user_env

pytestmark = pytest.mark.e2e

MODULES = 1200


def module(i: int) -> str:
    return (
        f'def compute_{i}(value):\n    """Accumulate {i}."""\n    total = value + {i}\n'
        f"    for k in range(10):\n        total += k * {i}\n    return total\n"
    )


def indexed_files(root: Path) -> int:
    """How many files the state dir records as indexed (0 while it is not written yet)."""
    try:
        return len(json.loads((root / ".zgrep" / "files.json").read_text())["files"])
    except (OSError, ValueError, KeyError):
        return 0


def interrupt_when(
    proc: subprocess.Popen[str], ready: object, what: str, timeout: float = 120
) -> tuple[str, str]:
    """Send SIGINT to `proc`'s process group (as Ctrl-C does) once `ready()` holds; its output."""
    deadline = time.monotonic() + timeout
    while not ready():
        assert proc.poll() is None, f"zg finished before {what}: {proc.communicate()}"
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.01)
    os.killpg(proc.pid, signal.SIGINT)
    return proc.communicate(timeout=120)


def default_sigint() -> None:
    """A terminal's foreground job gets Ctrl-C; a test run as a background job inherits SIGINT ignored."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def start(root: Path, env: dict[str, str], *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [ZG, *args, "--mode", "direct"],
        cwd=root,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        preexec_fn=default_sigint,
    )


def assert_interrupted(proc: subprocess.Popen[str], stderr: str) -> None:
    assert proc.returncode == 130, (proc.returncode, stderr)
    assert "Aborted" not in stderr and "Traceback" not in stderr, stderr
    assert stderr.strip() == "zg: interrupted", stderr


def test_ctrl_c_while_indexing_exits_130_and_the_next_run_completes(tmp_path):
    root = make_repo(tmp_path / "repo", {f"pkg/mod_{i}.py": module(i) for i in range(MODULES)})
    env = user_env(tmp_path / "user")

    indexing = start(root, env, "index")
    _, err = interrupt_when(indexing, lambda: indexed_files(root) > 0, "the first indexed batch")
    assert_interrupted(indexing, err)
    partial = indexed_files(root)
    assert 0 < partial < MODULES

    # a search refreshes the unfinished index first; interrupt that too
    searching = start(root, env, "search", "accumulate")
    _, err = interrupt_when(
        searching, lambda: indexed_files(root) > partial, "search to index more files"
    )
    assert_interrupted(searching, err)

    again = run_zg("index", "--mode", "direct", cwd=root, env=env)
    assert again.returncode == 0, again.stderr
    status = json.loads(run_zg("status", "--json", "--mode", "direct", cwd=root, env=env).stdout)
    assert (
        status["files"] == MODULES and status["fresh"] is True and not status.get("run_unfinished")
    ), status
    last = MODULES - 1
    hit = run_zg(
        "search", f"compute_{last}", "--json", "-n", "1", "--mode", "direct", cwd=root, env=env
    )
    assert hit.returncode == 0, hit.stderr
    assert json.loads(hit.stdout)["hits"][0]["path"] == f"pkg/mod_{last}.py"
