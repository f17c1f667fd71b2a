"""`zg server on|off|status|run`: start, stop, inspect or run the resident daemon."""

from __future__ import annotations

import json
import os
import signal
import time

import click

from zgrep.cli.fast import TIMEOUT_MS, server_status
from zgrep.cli.main import fail
from zgrep.config import Config, ConfigError
from zgrep.locking import FileLock, lock_holder
from zgrep.server import client, runtime
from zgrep.contracts import Setting
from zgrep.workspace import WorkspaceError, find_root

STOP_WAIT_S = 15.0
TERM_WAIT_S = 5.0


def _config() -> Config:
    """The user's settings under the cwd workspace's (its server.endpoint only once trusted)."""
    try:
        cfg = Config.load(find_root())
    except (ConfigError, WorkspaceError) as exc:
        raise click.ClickException(str(exc)) from None
    if cfg.notice:
        click.echo(f"zg: {cfg.notice}", err=True)
    return cfg


def endpoint_problem(endpoint: str, allow_non_loopback: bool) -> str | None:
    """Why the daemon must not listen on `endpoint` (a usage error), or None ("" is the default ipc
    socket)."""
    if not endpoint:
        return None
    scheme, sep, rest = endpoint.partition("://")
    host, colon, port = rest.rpartition(":")
    if (
        not sep
        or scheme not in ("ipc", "tcp")
        or not rest
        or (scheme == "tcp" and not (colon and host and port))
    ):
        return f"unsupported endpoint {endpoint!r}: use ipc://PATH or tcp://127.0.0.1:PORT"
    if scheme == "tcp" and not allow_non_loopback and not runtime.is_loopback(host):
        return (
            f"{endpoint} is not a loopback address: other machines could reach the daemon and try its token; "
            "use tcp://127.0.0.1:PORT, or pass --allow-non-loopback to accept that risk"
        )
    return None


def _warm_config(raw: str | None) -> dict[str, Setting]:
    """--warm-config's settings: a JSON object of setting -> scalar, else none (warming is only a
    head start)."""
    try:
        value = json.loads(raw) if raw else {}
    except ValueError:
        return {}
    if not isinstance(value, dict) or not all(
        isinstance(k, str) and isinstance(v, (str, int, float, bool)) for k, v in value.items()
    ):
        return {}
    return value


def _check_endpoint(endpoint: str, allow_non_loopback: bool) -> None:
    """Exit 2 with one line when `endpoint` is refused."""
    problem = endpoint_problem(endpoint, allow_non_loopback)
    if problem is not None:
        fail(problem)


def _signal(pid: int, signum: int) -> None:
    try:
        os.kill(pid, signum)
    except ProcessLookupError:
        pass


def _alive_lock_free() -> bool:
    """True when no daemon holds the runtime dir (so any files there are stale)."""
    return lock_holder(runtime.runtime_dir() / runtime.ALIVE_LOCK) is None


def _daemon_pid() -> int | None:
    info = runtime.read_info()
    if info is not None:
        return info["pid"]
    try:
        return int((runtime.runtime_dir() / runtime.PID_FILE).read_text().strip())
    except (OSError, ValueError):
        return None


@click.group()
def server() -> None:
    """The resident daemon: on, off, status, run."""


ENDPOINT_HELP = "ipc://PATH or tcp://127.0.0.1:PORT (config server.endpoint)."
ALLOW_NON_LOOPBACK_HELP = (
    "Listen on a non-loopback tcp address. RISK: other machines can reach the daemon; only "
    "its token keeps them from searching (and reading) your code."
)


@server.command()
@click.option("--endpoint", default=None, help=ENDPOINT_HELP)
@click.option("--allow-non-loopback", is_flag=True, help=ALLOW_NON_LOOPBACK_HELP)
@click.option(
    "--idle-timeout", type=float, default=None, help="Release workspaces idle this long (seconds)."
)
@click.option(
    "--timeout", type=float, default=30.0, show_default=True, help="Seconds to wait for readiness."
)
def on(
    endpoint: str | None, allow_non_loopback: bool, idle_timeout: float | None, timeout: float
) -> None:
    """Start the daemon in the background; exit 0 once it answers (idempotent)."""
    cfg = _config()
    endpoint = endpoint if endpoint is not None else cfg.server.endpoint
    _check_endpoint(endpoint, allow_non_loopback)
    idle_timeout = idle_timeout if idle_timeout is not None else cfg.server.idle_timeout
    info = client.probe(500)
    if info is not None:
        click.echo(f"zg daemon already running (pid {info['pid']}, {info['endpoint']})")
        return
    rdir = runtime.runtime_dir(create=True)
    # concurrent `zg server on`s start one daemon
    with FileLock(rdir / runtime.START_LOCK, mode=0o600):
        info = client.probe(500)
        if info is not None:
            click.echo(f"zg daemon already running (pid {info['pid']}, {info['endpoint']})")
            return
        if _alive_lock_free():
            stale = runtime.read_info()
            runtime.remove_files(stale["endpoint"] if stale else None)
        else:
            pid = _daemon_pid()
            fail(
                f"a zg daemon (pid {pid}) is running but not answering; stop it with: zg server off"
            )
        _start(endpoint, allow_non_loopback, idle_timeout, timeout)


def _start(endpoint: str, allow_non_loopback: bool, idle_timeout: float, timeout: float) -> None:
    errfile = runtime.state_dir(create=True) / runtime.STDERR_FILE
    proc = runtime.spawn(endpoint, idle_timeout, "command", allow_non_loopback)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            tail = errfile.read_text("utf-8", "replace").strip().splitlines()
            fail(
                f"the daemon exited with status {proc.returncode}: {tail[-1] if tail else 'no output'} "
                f"(log: {runtime.state_dir() / runtime.LOG_FILE})"
            )
        info = client.probe(200)
        if info is not None:
            click.echo(f"zg daemon ready (pid {info['pid']}, {info['endpoint']})")
            return
        time.sleep(0.02)
    proc.terminate()
    fail(
        f"the daemon did not answer within {timeout:g}s; see {runtime.state_dir() / runtime.LOG_FILE}"
    )


@server.command()
@click.option(
    "--timeout",
    type=float,
    default=STOP_WAIT_S,
    show_default=True,
    help="Seconds to wait for a clean stop before SIGTERM, then SIGKILL (a daemon that does not "
    "answer the stop request gets SIGTERM at once).",
)
def off(timeout: float) -> None:
    """Stop the daemon: ask, wait, then SIGTERM and SIGKILL; remove its files."""
    info = runtime.read_info()
    pid = _daemon_pid()
    if pid is None or not runtime.pid_alive(pid):
        runtime.remove_files(info["endpoint"] if info else None)
        click.echo("zg daemon not running")
        return
    acked = info is not None and client.ask_shutdown(info)
    how = "stopped"
    # A daemon that took the request gets `timeout` to finish cleanly; one that did not answer
    # (stopped, hung, wrong token) goes straight to SIGTERM.
    if not client.wait_gone(pid, timeout if acked else 0.2):
        _signal(pid, signal.SIGTERM)
        _signal(pid, signal.SIGCONT)  # a stopped process handles SIGTERM only once continued
        how = "stopped (SIGTERM)"
        if not client.wait_gone(pid, TERM_WAIT_S):
            _signal(pid, signal.SIGKILL)
            how = "killed (SIGKILL)"
            client.wait_gone(pid, TERM_WAIT_S)
    runtime.remove_files(info["endpoint"] if info else None)
    click.echo(f"zg daemon {how} (pid {pid})")


@server.command()
@click.option("--json", "as_json", is_flag=True)
@click.option("--check-ready", is_flag=True, help="Print nothing; exit 0 when ready, 1 when not.")
@click.option("--timeout-ms", type=int, default=TIMEOUT_MS, show_default=True)
def status(as_json: bool, check_ready: bool, timeout_ms: int) -> None:
    """Show pid, endpoint, uptime, workspaces, models, jobs and memory (exit 1 if not running)."""
    server_status(as_json, check_ready, timeout_ms)


@server.command()
@click.option("--endpoint", default=None, help=ENDPOINT_HELP)
@click.option("--allow-non-loopback", is_flag=True, help=ALLOW_NON_LOOPBACK_HELP)
@click.option(
    "--idle-timeout", type=float, default=None, help="Release workspaces idle this long (seconds)."
)
@click.option("--quiet", is_flag=True, help="Log to the log file only.")
@click.option(
    "--started-by",
    type=click.Choice(runtime.STARTED_BY),
    default="command",
    hidden=True,
    help="autostart: started by an auto-mode search; exits once idle for --idle-timeout.",
)
@click.option(
    "--warm", default=None, hidden=True, help="A workspace to open as soon as the daemon listens."
)
@click.option(
    "--warm-config",
    default=None,
    hidden=True,
    help="The settings (a JSON object) of the command that started the daemon, for --warm.",
)
@click.option(
    "--start-lock-fd",
    type=int,
    default=None,
    hidden=True,
    help="An inherited descriptor holding the start lock, closed once the daemon answers.",
)
def run(
    endpoint: str | None,
    allow_non_loopback: bool,
    idle_timeout: float | None,
    quiet: bool,
    started_by: str,
    warm: str | None,
    warm_config: str | None,
    start_lock_fd: int | None,
) -> None:
    """Run the daemon in the foreground (systemd, docker, debugging)."""
    import zmq

    from zgrep.server.daemon import AlreadyRunning, run_daemon

    cfg = _config()
    endpoint = endpoint if endpoint is not None else cfg.server.endpoint
    _check_endpoint(endpoint, allow_non_loopback)
    try:
        run_daemon(
            endpoint,
            idle_timeout if idle_timeout is not None else cfg.server.idle_timeout,
            not quiet,
            started_by=started_by,
            warm=warm,
            warm_config=_warm_config(warm_config),
            start_lock_fd=start_lock_fd,
        )
    except AlreadyRunning as exc:
        fail(str(exc))
    except zmq.ZMQError as exc:
        fail(f"cannot listen on {endpoint or runtime.default_endpoint()}: {exc}")
