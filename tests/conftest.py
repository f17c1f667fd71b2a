"""Shared fixtures: an isolated user environment, the `zg` command, and real git repositories.

Hermetic: from the session's start, and again for each module and each test, HOME and the XDG dirs are
private ones, so no `zg` a test runs (whatever its fixture's scope) sees the real user's daemon, config or
trust file. Every process a test starts carries this session's mark (SESSION_MARK); at the session's end
a zg daemon that still carries it fails the suite (and is killed).
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

import zgrun
from zgrun import ZG  # noqa: F401  (the helpers' and tests' name for the installed command)

# No test's `zg search` starts a daemon behind its back (auto mode's autostart is off under CI);
# tests/server/test_autostart.py drops the variable for the users it runs.
os.environ["CI"] = "1"
USER_DIRS = (
    "HOME",
    "XDG_CONFIG_HOME",
    "XDG_CACHE_HOME",
    "XDG_RUNTIME_DIR",
    "XDG_STATE_HOME",
    "XDG_DATA_HOME",
)
SESSION_MARK = "ZGREP_TEST_SESSION"  # not ZG_*: the fixtures and daemon_helpers.User drop those
DAEMON_EXIT_WAIT_S = 15.0  # for daemons still stopping when the last test ends
GITCONFIG = "[user]\n\tname = t\n\temail = t@example.com\n[commit]\n\tgpgsign = false\n"


def private_user(
    base: Path, setenv: Callable[[str, str], None], delenv: Callable[[str], None]
) -> Path:
    """Point HOME and the XDG dirs at fresh 0700 dirs under `base` (a git identity in HOME); drop ZG_*."""
    for name in USER_DIRS:
        path = base / name.lower()
        path.mkdir(mode=0o700, parents=True)
        setenv(name, str(path))
    (base / "home" / ".gitconfig").write_text(GITCONFIG)
    for name in [k for k in os.environ if k.startswith("ZG_")]:
        delenv(name)
    setenv("HF_HUB_OFFLINE", "1")
    return base


_session_user = Path(tempfile.mkdtemp(prefix="zg-test-user-"))
private_user(
    _session_user, os.environ.__setitem__, os.environ.__delitem__
)  # before any fixture, of any scope


def pytest_configure(config: pytest.Config) -> None:
    if not hasattr(
        config, "workerinput"
    ):  # the controller (or a run without xdist); workers inherit its mark
        os.environ[SESSION_MARK] = uuid.uuid4().hex


def pytest_unconfigure(config: pytest.Config) -> None:
    shutil.rmtree(_session_user, ignore_errors=True)


def session_daemons(basetemp: Path | None = None) -> list[int]:
    """Live zg daemons (`… server run`) whose environment carries this session's mark, or whose HOME or
    runtime dir lies under `basetemp` (a test that built its environment from scratch)."""
    mark = f"{SESSION_MARK}={os.environ.get(SESSION_MARK, '')}".encode()
    dirs = (
        [f"{name}={basetemp}{os.sep}".encode() for name in ("HOME", "XDG_RUNTIME_DIR")]
        if basetemp
        else []
    )
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
            if not any(a == b"server" and b == b"run" for a, b in zip(argv, argv[1:])):
                continue
            environ = (entry / "environ").read_bytes().split(b"\0")
            if mark in environ or any(v.startswith(d) for v in environ for d in dirs):
                found.append(int(entry.name))
        except OSError:  # gone meanwhile, or not ours to read
            continue
    return found


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Fail the suite when a daemon a test started outlives it (killed here, so none lingers)."""
    if hasattr(session.config, "workerinput"):
        return  # the controller checks once every worker is done
    factory = getattr(
        session.config, "_tmp_path_factory", None
    )  # the controller's: workers' lie under it
    basetemp = factory.getbasetemp() if factory is not None else None
    deadline = time.monotonic() + DAEMON_EXIT_WAIT_S
    while (left := session_daemons(basetemp)) and time.monotonic() < deadline:
        time.sleep(0.2)
    if not left:
        return
    for pid in left:
        for signum in (signal.SIGCONT, signal.SIGKILL):
            try:
                os.kill(pid, signum)
            except ProcessLookupError:
                break
    sys.stderr.write(
        f"\nzg daemons started by tests were still alive at the session's end (killed): "
        f"{', '.join(f'pid {p}' for p in left)}\n"
    )
    session.exitstatus = pytest.ExitCode.TESTS_FAILED


@pytest.fixture(scope="module", autouse=True)
def isolated_module(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """Each module's fixtures get their own private user (a module-scoped repo's `zg` calls included)."""
    with pytest.MonkeyPatch.context() as monkeypatch:
        yield private_user(
            tmp_path_factory.mktemp("module-user"), monkeypatch.setenv, monkeypatch.delenv
        )


@pytest.fixture(autouse=True)
def isolated_user(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> Path:
    """Each test gets its own HOME and XDG config/cache/runtime/state dirs, so no real user daemon or config leaks in."""
    return private_user(tmp_path_factory.mktemp("user"), monkeypatch.setenv, monkeypatch.delenv)


def git(cwd: Path, *args: str) -> str:
    """Run git in `cwd` and return stdout (raises on failure)."""
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.com",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.com",
    }
    return subprocess.run(
        ["git", *args], cwd=cwd, env=env, check=True, capture_output=True, text=True
    ).stdout


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """An empty git repository with a configured identity."""
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    git(root, "config", "user.name", "t")
    git(root, "config", "user.email", "t@example.com")
    return root


def _runner(
    call: Callable[..., subprocess.CompletedProcess[str]],
) -> Callable[..., subprocess.CompletedProcess[str]]:
    """`call` (zgrun.in_process or zgrun.binary) as run(*args, cwd=..., input=..., env=...), `env`
    added to this process's environment."""

    def run(
        *args: str,
        cwd: Path | None = None,
        input: str | None = None,
        env: dict[str, str] | None = None,
        timeout: float = 120,
    ) -> subprocess.CompletedProcess[str]:
        return call(*args, cwd=cwd, input=input, env={**os.environ, **(env or {})}, timeout=timeout)

    return run


@pytest.fixture
def zg() -> Callable[..., subprocess.CompletedProcess[str]]:
    """Run `zg` in this process (zgrun.in_process)."""
    return _runner(zgrun.in_process)


@pytest.fixture
def zg_binary() -> Callable[..., subprocess.CompletedProcess[str]]:
    """Run the installed `zg` command as a subprocess (e2e tests)."""
    return _runner(zgrun.binary)
