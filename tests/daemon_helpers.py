"""Helpers for daemon tests: an isolated user that can run a daemon, and sample repositories."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import zmq

import zgrun
from conftest import ZG, git
from zgrep.server import client, protocol, runtime


class User:
    """An isolated user (runtime, state, config and cache dirs) that may run one daemon."""

    def __init__(self, base: Path) -> None:
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("ZG_")}
        for name in (
            "HOME",
            "XDG_RUNTIME_DIR",
            "XDG_STATE_HOME",
            "XDG_CONFIG_HOME",
            "XDG_CACHE_HOME",
        ):
            path = base / name.lower()
            path.mkdir(mode=0o700, parents=True, exist_ok=True)
            self.env[name] = str(path)
        self.env["HF_HUB_OFFLINE"] = "1"

    def zg(
        self,
        *args: str,
        cwd: Path | None = None,
        timeout: float = 120,
        env: dict[str, str] | None = None,
    ) -> subprocess.CompletedProcess[str]:
        """Run `zg` in this process as this user (`env`: extra variables for this one command)."""
        return zgrun.in_process(*args, cwd=cwd, env={**self.env, **(env or {})}, timeout=timeout)

    def zg_binary(
        self,
        *args: str,
        cwd: Path | None = None,
        timeout: float = 120,
        env: dict[str, str] | None = None,
    ) -> subprocess.CompletedProcess[str]:
        """Run the installed `zg` as this user (e2e: daemons, signals, what the process leaves)."""
        return zgrun.binary(*args, cwd=cwd, env={**self.env, **(env or {})}, timeout=timeout)

    def popen(self, *args: str, cwd: Path | None = None) -> subprocess.Popen[str]:
        return subprocess.Popen(
            [ZG, *args],
            cwd=cwd,
            env=self.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    def adopt(self, monkeypatch: Any) -> None:
        """Point this test process (client.probe and friends) at this user's daemon."""
        for name in ("HOME", "XDG_RUNTIME_DIR", "XDG_STATE_HOME"):
            monkeypatch.setenv(name, self.env[name])

    @property
    def rundir(self) -> Path:
        return Path(self.env["XDG_RUNTIME_DIR"]) / "zgrep"

    def info(self) -> dict[str, Any]:
        return json.loads((self.rundir / runtime.INFO_FILE).read_text())

    def request(
        self,
        op: str,
        root: str | None = None,
        args: dict[str, Any] | None = None,
        token: str | None = None,
        timeout: float = 10,
    ) -> dict[str, Any]:
        info = self.info()
        token = token if token is not None else (self.rundir / runtime.TOKEN_FILE).read_text()
        return client.exchange(
            info["endpoint"],
            protocol.make_request(op, root, args, token=token),
            timeout,
            info["pid"],
        )

    def server_status(self) -> dict[str, Any]:
        reply = self.request("server_status")
        assert reply["ok"], reply
        return reply["result"]

    def start(self, *extra: str) -> int:
        out = self.zg_binary("server", "on", *extra)
        assert out.returncode == 0, out.stderr
        return self.info()["pid"]


def make_repo(root: Path, files: int = 3) -> Path:
    """A git repository with a few distinct Python modules (or many similar ones)."""
    root.mkdir(parents=True)
    git(root, "init", "-q", "-b", "main")
    (root / "retry.py").write_text(
        'import time\n\n\ndef retry_with_backoff(call, attempts=5):\n    """Retry `call` with exponential backoff."""\n'
        "    for n in range(attempts):\n        try:\n            return call()\n        except OSError:\n"
        "            time.sleep(2 ** n)\n    raise RuntimeError('gave up')\n"
    )
    (root / "cache.py").write_text(
        'class LruCache:\n    """A least-recently-used cache with a size bound."""\n\n    def __init__(self, size):\n'
        "        self.size = size\n        self.items = {}\n\n    def get(self, key):\n        return self.items.get(key)\n"
    )
    (root / "parse.py").write_text(
        'import json\n\n\ndef parse_config(text):\n    """Parse a JSON configuration document."""\n'
        "    return json.loads(text)\n"
    )
    for i in range(files - 3):
        (root / f"gen_{i}.py").write_text(
            "".join(
                f'def compute_{i}_{j}(value, steps={j}):\n    """Accumulate {i} {j}."""\n    total = value + {i}\n'
                f"    for k in range(steps):\n        total += k * {j}\n    return total\n\n\n"
                for j in range(8)
            )
        )
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


def freeze_process(pid: int) -> None:
    """SIGSTOP `pid` (it stays, frozen, until SIGCONT or `reap`) and wait until the kernel reports it stopped."""
    os.kill(pid, signal.SIGSTOP)
    wait_for(lambda: client.pid_stopped(pid), 5, f"pid {pid} to stop")


def reap(pid: int) -> None:
    """Teardown for a daemon a test may have stopped: continue it, then kill it (no-op once gone)."""
    for signum in (signal.SIGCONT, signal.SIGKILL):
        try:
            os.kill(pid, signum)
        except ProcessLookupError:
            return
