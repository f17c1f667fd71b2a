"""Auto mode starts the daemon: a search that finds none answers in-process and leaves a daemon
(detached, warm, `started_by: autostart`) for the next one; direct mode, `server.autostart = false`
and CI start nothing; an autostarted daemon exits once idle.

conftest.py sets CI=1 for the whole suite, so these tests drop it for the users they run.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import httpx
import pytest

from conftest import ZG
from daemon_helpers import User, make_repo, wait_for
from test_frontends_http import start as start_serve
from test_frontends_http import stop as stop_serve
from zgrep.config import Config
from zgrep.locking import lock_holder
from zgrep.server import runtime
from zgrep.server.client import Autostart

pytestmark = pytest.mark.e2e

START_S = 90  # generous: a loaded CI machine starts Python, loads the model and binds


def autostart_user(base: Path) -> User:
    user = User(base)
    user.env.pop("CI", None)
    return user


def search(user: User, repo: Path, *extra: str, env: dict[str, str] | None = None) -> dict:
    out = user.zg_binary("search", "--json", "retry with backoff", *extra, cwd=repo, env=env)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def spawned(user: User) -> bool:
    """Whether a daemon was started for this user (the start writes its stderr file before it runs)."""
    return (Path(user.env["XDG_STATE_HOME"]) / "zgrep" / runtime.STDERR_FILE).exists()


def stop(user: User) -> None:
    """Teardown: wait out a daemon still starting (it holds the start lock until it answers), then stop it."""
    wait_for(
        lambda: lock_holder(user.rundir / runtime.START_LOCK) is None,
        START_S,
        "the daemon to finish starting",
    )
    user.zg_binary("server", "off")


def test_first_search_answers_in_process_and_the_next_one_from_the_daemon(tmp_path: Path) -> None:
    user = autostart_user(tmp_path / "user")
    repo = make_repo(tmp_path / "repo")
    try:
        first = search(user, repo)
        assert first["mode"] == "direct" and first["hits"][0]["path"] == "retry.py"
        assert spawned(user)
        concurrent = search(
            user, repo
        )  # while the daemon loads: answered one way or the other, never an error
        assert (
            concurrent["mode"] in ("direct", "server")
            and concurrent["hits"][0]["path"] == "retry.py"
        )
        wait_for(
            lambda: user.zg_binary("server", "status", "--check-ready").returncode == 0,
            START_S,
            "the autostarted daemon",
        )
        status = json.loads(user.zg_binary("server", "status", "--json").stdout)
        assert status["started_by"] == "autostart"
        assert [w["root"] for w in status["workspaces"]] == [first["root"]]
        log = Path(user.env["XDG_STATE_HOME"]) / "zgrep" / runtime.LOG_FILE
        wait_for(
            lambda: f"warmed workspace {first['root']}" in log.read_text(),
            START_S,
            "the daemon to warm the workspace (a failed warm logs a warning instead)",
        )
        assert "started by: autostart" in user.zg_binary("server", "status").stdout
        second = search(user, repo)
        assert second["mode"] == "server" and second["hits"][0]["path"] == "retry.py"
        assert (
            json.loads(user.zg_binary("status", "--json", cwd=repo).stdout)["daemon"]["started_by"]
            == "autostart"
        )
        assert "started by autostart" in user.zg_binary("status", cwd=repo).stdout
    finally:
        stop(user)


def test_a_search_through_zg_serve_starts_the_daemon_as_the_cli_does(tmp_path: Path) -> None:
    user = autostart_user(tmp_path / "user")
    repo = make_repo(tmp_path / "repo")
    serve, url = start_serve(user, repo, env={"ZG_MODE": "auto"})
    try:
        first = httpx.get(
            url + "/search", params={"q": "retry with backoff"}, timeout=START_S
        ).json()
        assert first["mode"] == "direct" and first["hits"][0]["path"] == "retry.py"
        assert spawned(user)
        wait_for(
            lambda: user.zg_binary("server", "status", "--check-ready").returncode == 0,
            START_S,
            "the autostarted daemon",
        )
        second = httpx.get(
            url + "/search", params={"q": "retry with backoff"}, timeout=START_S
        ).json()
        assert second["mode"] == "server" and second["hits"][0]["path"] == "retry.py"
    finally:
        stop_serve(serve)
        stop(user)


@pytest.mark.parametrize(
    "value,ci",
    [
        ("1", True),
        ("true", True),
        ("yes", True),
        ("github", True),
        ("0", False),
        ("false", False),
        ("FALSE", False),
        ("no", False),
        ("Off", False),
        ("", False),
        (None, False),
    ],
)
def test_ci_is_any_value_but_a_false_one(
    monkeypatch: pytest.MonkeyPatch, value: str | None, ci: bool
) -> None:
    """CI=0, false, no, off (any case) or empty is not CI: auto mode may start the daemon; anything else is."""
    if value is None:
        monkeypatch.delenv("CI")
    else:
        monkeypatch.setenv("CI", value)
    assert (Autostart.from_config(Config.load(None)) is None) is ci


@pytest.fixture(scope="module")
def indexed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("autostart-off")
    repo = make_repo(base / "repo")
    out = User(base / "indexer").zg_binary("index", cwd=repo)
    assert out.returncode == 0, out.stderr
    return repo


@pytest.mark.parametrize(
    "how", ["ZG_MODE=direct", "server.autostart = false", "CI=1", "--mode direct", "not search"]
)
def test_no_daemon_is_started(indexed: Path, tmp_path: Path, how: str) -> None:
    user = autostart_user(tmp_path / "user")
    env: dict[str, str] = {}
    extra: tuple[str, ...] = ()
    if how == "server.autostart = false":
        (Path(user.env["XDG_CONFIG_HOME"]) / "zgrep").mkdir(parents=True)
        (Path(user.env["XDG_CONFIG_HOME"]) / "zgrep" / "config.toml").write_text(
            "[server]\nautostart = false\n"
        )
    elif how == "--mode direct":
        extra = ("--mode", "direct")
    else:
        name, _, value = how.partition("=")
        env[name] = value
    try:
        if how == "not search":  # index and status (what the git hooks run, too) never start one
            assert (
                user.zg_binary("index", cwd=indexed).returncode == 0
                and user.zg_binary("status", cwd=indexed).returncode == 0
            )
        else:
            assert search(user, indexed, *extra, env=env)["mode"] == "direct"
        assert not spawned(user) and not (user.rundir / runtime.INFO_FILE).exists()
        assert user.zg_binary("server", "status", "--check-ready").returncode == 1
    finally:
        stop(user)


def test_an_autostarted_daemon_exits_once_idle(tmp_path: Path) -> None:
    user = autostart_user(tmp_path / "user")
    proc = subprocess.Popen(
        [ZG, "server", "run", "--quiet", "--idle-timeout", "1", "--started-by", "autostart"],
        env=user.env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        wait_for(
            lambda: (user.rundir / runtime.INFO_FILE).exists() or proc.poll() is not None,
            START_S,
            "the daemon",
        )
        assert user.info()["started_by"] == "autostart"
        assert proc.wait(timeout=START_S) == 0, proc.stderr.read() if proc.stderr else ""
        assert not (user.rundir / runtime.INFO_FILE).exists()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_the_daemon_warms_with_the_settings_of_the_search_that_started_it(tmp_path: Path) -> None:
    # a search run with --model started a daemon that warmed the workspace with the shell's settings only, so
    # the next search with the same --model could not use the warm (it re-opened the workspace or, while the
    # warm still ran, was refused as busy)
    from zgrep.embedding.folder import default_model_dir

    user = autostart_user(tmp_path / "user")
    repo = make_repo(tmp_path / "repo")
    model = f"local:{default_model_dir()}"
    try:
        first = search(user, repo, "--model", model)
        assert first["mode"] == "direct"
        log = Path(user.env["XDG_STATE_HOME"]) / "zgrep" / runtime.LOG_FILE
        wait_for(
            lambda: log.exists() and f"warmed workspace {first['root']}" in log.read_text(),
            START_S,
            "the daemon to warm the workspace (a failed warm logs a warning instead)",
        )
        second = search(user, repo, "--model", model)
        assert second["mode"] == "server" and second["hits"][0]["path"] == "retry.py"
        assert (
            f"holding workspace {first['root']}" not in log.read_text()
        )  # the warmed one served it
    finally:
        stop(user)


def test_an_autostarted_daemon_lets_go_after_its_own_short_idle_timeout(tmp_path: Path) -> None:
    # make demo's search left an autostarted daemon holding ~310 MB for server.idle_timeout (30 minutes);
    # an autostarted daemon has its own, short, timeout (server.autostart_idle_timeout)
    assert (
        Config.load(None).server.autostart_idle_timeout
        <= 300
        < Config.load(None).server.idle_timeout
    )
    user = autostart_user(tmp_path / "user")
    repo = make_repo(tmp_path / "repo")
    config = Path(user.env["XDG_CONFIG_HOME"]) / "zgrep" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text("[server]\nautostart_idle_timeout = 3\n")
    try:
        assert search(user, repo)["mode"] == "direct"
        wait_for(
            lambda: user.zg_binary("server", "status", "--check-ready").returncode == 0,
            START_S,
            "the autostarted daemon",
        )
        pid = user.info()["pid"]
        status = json.loads(user.zg_binary("server", "status", "--json").stdout)
        assert status["started_by"] == "autostart" and status["idle_timeout_s"] == 3
        wait_for(lambda: not runtime.pid_alive(pid), START_S, "the idle autostarted daemon to exit")
        assert not (user.rundir / runtime.INFO_FILE).exists()
    finally:
        stop(user)
