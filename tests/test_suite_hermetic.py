"""The suite is hermetic (issue 23, item 9): every `zg` a test runs, whatever its fixture's scope, gets a
private HOME and XDG dirs, and a daemon a test leaves running fails the session."""

from __future__ import annotations

import json
import os
import pwd
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from conftest import USER_DIRS, ZG
from daemon_helpers import wait_for
from zgrep.server import runtime

pytestmark = pytest.mark.e2e

REAL_HOME = pwd.getpwuid(os.getuid()).pw_dir
TESTS = Path(__file__).parent


@pytest.fixture(scope="module")
def module_env() -> dict[str, str]:
    """What a module-scoped fixture's `zg` sees (as tests/adr/test_adr_cli.py's repository did)."""
    out = subprocess.run(
        [sys.executable, "-c", "import json, os; print(json.dumps(dict(os.environ)))"],
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout)


def test_a_module_fixture_runs_with_a_private_user(
    module_env: dict[str, str], tmp_path: Path
) -> None:
    for name in USER_DIRS:
        assert name in module_env and module_env[name] != os.environ[name], (
            name
        )  # the module's, not this test's
        assert (
            not module_env[name].startswith(REAL_HOME + os.sep) and module_env[name] != REAL_HOME
        ), name
        assert Path(module_env[name]).stat().st_mode & 0o777 == 0o700
    assert os.environ["HOME"] != REAL_HOME and Path(os.environ["XDG_STATE_HOME"]).is_dir()
    assert not [k for k in module_env if k.startswith("ZG_")]


def test_a_daemon_left_running_fails_the_session(tmp_path: Path) -> None:
    (tmp_path / "test_leak.py").write_text(
        textwrap.dedent(f"""
        import os, subprocess, time
        from pathlib import Path

        def start(name, env):
            proc = subprocess.Popen([{ZG!r}, "server", "run", "--quiet"], env=env, stdout=subprocess.DEVNULL,
                                    stderr=subprocess.DEVNULL)
            (Path(__file__).parent / name).write_text(str(proc.pid))
            time.sleep(2)

        def test_leaves_a_daemon():
            start("pid-inherited", None)

        def test_leaves_a_daemon_from_a_scratch_environment(tmp_path):
            for name in ("home", "run"):
                (tmp_path / name).mkdir(mode=0o700)
            start("pid-scratch", {{"PATH": os.environ["PATH"], "HOME": str(tmp_path / "home"),
                                   "XDG_RUNTIME_DIR": str(tmp_path / "run")}})
        """)
    )
    env = {**os.environ, "PYTHONPATH": str(TESTS)}
    inner = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "conftest",
            "-p",
            "no:cacheprovider",
            "--rootdir",
            str(tmp_path),
            str(tmp_path / "test_leak.py"),
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    pids = [int((tmp_path / name).read_text()) for name in ("pid-inherited", "pid-scratch")]
    assert inner.returncode == 1, inner.stdout + inner.stderr
    assert (
        "2 passed" in inner.stdout and "still alive at the session's end (killed)" in inner.stderr
    ), inner.stderr
    assert all(f"pid {pid}" in inner.stderr for pid in pids), inner.stderr
    wait_for(
        lambda: not any(runtime.pid_alive(pid) for pid in pids), 30, "the leaked daemons to be gone"
    )
