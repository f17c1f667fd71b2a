"""Route a request to the daemon or run it in-process (--mode auto|server|direct); in auto mode a
search that found no daemon starts one, detached, for the next command (`server.autostart`).

Thin path: the standard library, the operation table, the protocol and runtime modules and a ZMTP
peer of its own (zmtp: no pyzmq); the engine only in direct mode. `zg server status` and a served
`zg search` import neither pathlib nor typing through it: what only other calls need (locks, the
workspace's paths) is imported where it is used."""

from __future__ import annotations

import os
import sys
import time

from zgrep.server import protocol, runtime, zmtp
from zgrep.service import PING, SERVER_STATUS, SHUTDOWN, ErrorCode, ZgError, operation
from zgrep.procfs import process_state

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (see zgrep.service)
if TYPE_CHECKING:
    from typing import TypedDict

    from zgrep.config import Config
    from zgrep.contracts import Args, JSONObject, Setting
    from zgrep.progress import Progress, ProgressEvent
    from zgrep.server.runtime import DaemonInfo

    class DaemonState(TypedDict, total=False):
        """Whether a daemon runs and answers; with its pid, endpoint, version, uptime and starter
        when it runs."""

        running: bool
        ready: bool
        stopped: bool  # its process is stopped (SIGSTOP, a debugger)
        pid: int
        endpoint: str
        version: str | None
        uptime_s: float | None
        started_by: str | None

POLL_S = 0.2
READ_ONLY_DEADLINE_S = 600.0
BUSY_PROBE_MS = 1000  # for a live daemon that missed the first probe (busy, or a loaded machine)
# a daemon stopped (SIGSTOP, Ctrl-Z) this long during a request counts as lost
STOPPED_GRACE_S = 1.0
STARTING_WAIT_S = 15.0  # for a daemon being started (autostart, zg server on) to answer
ASK_WAIT_S = 1.5  # for the daemon to acknowledge a shutdown request
RETIRE_WAIT_S = 15.0  # for an autostarted daemon of another install to stop once asked
NO_DAEMON = "no zgrep daemon is ready; start one with: zg server on"
RESTART = "restart it: zg server off; zg server on"
MISSED: set[int] = set()
"""The pids of daemons that missed a BUSY_PROBE_MS probe in this process: not waited for again (the
click CLI the fast path hands a search to would wait as long once more)."""


class ClientError(ZgError):
    """A request failed; `exit_code` is what the CLI should exit with."""

    def __init__(self, code: str, message: str, exit_code: int = 2) -> None:
        super().__init__(code, message)
        self.exit_code = exit_code


class DaemonLost(RuntimeError):
    """The daemon did not answer (died, timed out, was stopped, or sent something unreadable)."""


class Unanswered(DaemonLost):
    """The daemon did not answer the probe sent ahead of a request (`exchange`'s `probe_s`): as a
    failed `probe`, whatever became of the request."""


def stderr_progress() -> Progress | None:
    """A printer of index progress events for stderr when it is a terminal, else None (direct and
    server mode alike)."""
    if not sys.stderr.isatty():
        return None
    start = time.monotonic()

    def show(event: ProgressEvent) -> None:
        done, total = event.get("files_done", 0), event.get("files_total", 0)
        elapsed = max(time.monotonic() - start, 1e-6)
        rate = event.get("chunks_done", 0) / elapsed
        eta = (total - done) * elapsed / done if done else 0.0
        sys.stderr.write(
            f"\rindexing {done}/{total} files, {event.get('chunks_done', 0)} chunks, "
            f"{rate:.0f} chunks/s, ETA {eta:.0f}s "
        )
        if event.get("final"):
            sys.stderr.write("\n")
        sys.stderr.flush()

    return show


def pid_stopped(pid: int) -> bool:
    """Whether process `pid` is stopped (SIGSTOP, Ctrl-Z, a tracer): it answers nothing until
    continued."""
    return process_state(pid) in (b"T", b"t")


def exchange(
    endpoint: str,
    request: protocol.Request,
    timeout_s: float | None,
    pid: int | None = None,
    on_progress: Progress | None = None,
    probe_s: float | None = None,
) -> protocol.Reply:
    """Send one request to the daemon's ROUTER (a ZMTP DEALER peer, zgrep.server.zmtp) and wait for
    its final response. Gives up after `timeout_s` (None: no limit), as soon as process `pid` is
    gone, or once it has been stopped for STOPPED_GRACE_S. With `probe_s`, a ping goes ahead of the
    request on the same connection, and Unanswered is raised unless the daemon answers it within
    `probe_s` (the probe and the request in one round trip; the daemon answers pings in its loop)."""
    first = timeout_s if probe_s is None else probe_s
    connect_s = max(min(first if first is not None else 5.0, 5.0), 0.001)
    try:
        peer = zmtp.Dealer(endpoint, connect_s)
    except zmtp.PeerError:
        lost = f"could not reach the daemon at {endpoint}"
        raise (DaemonLost if probe_s is None else Unanswered)(lost) from None
    try:
        if probe_s is not None:
            ping = protocol.make_request(PING.name, None, token=request.get("token"))
            peer.send([b"", protocol.encode(ping)])
        peer.send([b"", protocol.encode(request)])
        if probe_s is not None:
            try:
                pong = receive(peer, probe_s, pid, None)
            except DaemonLost as exc:
                raise Unanswered(str(exc)) from None
            if not pong.get("ok"):
                raise Unanswered("the daemon refused the probe")
        return receive(peer, timeout_s, pid, on_progress)
    finally:
        peer.close()


def receive(
    peer: zmtp.Dealer, timeout_s: float | None, pid: int | None, on_progress: Progress | None
) -> protocol.Reply:
    """The next final response on `peer` (progress messages go to `on_progress`); DaemonLost as
    `exchange` says."""
    deadline = None if timeout_s is None else time.monotonic() + timeout_s
    stopped_since: float | None = None
    try:
        while True:
            wait = POLL_S if deadline is None else min(POLL_S, deadline - time.monotonic())
            if wait <= 0:
                raise DaemonLost(f"no answer from the daemon within {timeout_s:g}s")
            frames = peer.recv(wait)
            if frames is not None:
                try:
                    msg = protocol.decode_response(frames[-1])
                except protocol.ProtocolError as exc:
                    raise DaemonLost(str(exc)) from None
                if "progress" in msg and "ok" not in msg:
                    if on_progress is not None:
                        on_progress(msg["progress"])
                    continue
                return msg
            if pid is not None:
                if not runtime.pid_alive(pid):
                    raise DaemonLost(f"the daemon (pid {pid}) exited before answering")
                if not pid_stopped(pid):
                    stopped_since = None
                elif stopped_since is None:
                    stopped_since = time.monotonic()
                elif time.monotonic() - stopped_since >= STOPPED_GRACE_S:
                    raise DaemonLost(f"the daemon (pid {pid}) is stopped (SIGSTOP?)")
    except OSError as exc:  # zmtp.PeerError included: the connection broke mid-way
        raise DaemonLost(f"the connection to the daemon broke: {exc}") from None


def probe(timeout_ms: int) -> DaemonInfo | None:
    """The daemon's endpoint info when it answers a ping within `timeout_ms`, else None."""
    info = runtime.read_info()
    if info is None or not runtime.pid_alive(info["pid"]) or pid_stopped(info["pid"]):
        return None
    request = protocol.make_request(PING.name, None, token=runtime.read_token())
    try:
        reply = exchange(info["endpoint"], request, timeout_ms / 1000, info["pid"])
    except DaemonLost:
        return None
    return info if reply.get("ok") else None


def ask_server_status(timeout_ms: int) -> protocol.Reply | None:
    """The daemon's reply to a status request within `timeout_ms`, or None when no daemon answers."""
    info = runtime.read_info()
    if info is None or not runtime.pid_alive(info["pid"]) or pid_stopped(info["pid"]):
        return None
    request = protocol.make_request(SERVER_STATUS.name, None, token=runtime.read_token())
    try:
        return exchange(info["endpoint"], request, timeout_ms / 1000, info["pid"])
    except DaemonLost:
        return None


def wait_starting() -> DaemonInfo | None:
    """While a daemon is being started (its starter holds the start lock until it answers), wait for
    it: its endpoint info once it answers, None once the start ends without one or takes too long.
    """
    from zgrep.locking import lock_holder

    deadline = time.monotonic() + STARTING_WAIT_S
    while (
        lock_holder(runtime.runtime_dir() / runtime.START_LOCK) is not None
        and time.monotonic() < deadline
    ):
        if (info := probe(200)) is not None:
            return info
        time.sleep(0.05)
    return probe(200) if live_daemon() is not None else None


def ask_shutdown(info: DaemonInfo) -> bool:
    """Ask the daemon described by `info` to stop; whether it took the request (a stopped process
    reads none)."""
    if pid_stopped(info["pid"]):
        return False
    request = protocol.make_request(SHUTDOWN.name, None, token=runtime.read_token())
    try:
        return bool(exchange(info["endpoint"], request, ASK_WAIT_S, info["pid"]).get("ok"))
    except DaemonLost:
        return False


def wait_gone(pid: int, timeout_s: float) -> bool:
    """Wait until process `pid` has exited; False when it still runs after `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    while runtime.pid_alive(pid):
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.05)
    return True


def daemon_state(timeout_ms: int = 500) -> DaemonState:
    """Whether a daemon is running and ready, with its pid, endpoint, version and uptime."""
    info = runtime.read_info()
    if info is None or not runtime.pid_alive(info["pid"]):
        return {"running": False, "ready": False}
    ready = probe(timeout_ms) is not None
    started = info.get("started")
    return {
        "running": True,
        "ready": ready,
        "stopped": pid_stopped(info["pid"]),
        "pid": info["pid"],
        "endpoint": info["endpoint"],
        "version": info.get("version"),
        "uptime_s": round(time.time() - started, 1) if started else None,
        "started_by": info.get("started_by"),
    }


class Autostart:
    """How an auto-mode command starts the daemon when none answers (server.endpoint,
    server.autostart_idle_timeout)."""

    __slots__ = ("endpoint", "idle_timeout")

    def __init__(self, endpoint: str, idle_timeout: float) -> None:
        self.endpoint = endpoint
        self.idle_timeout = idle_timeout

    @classmethod
    def from_config(cls, cfg: Config) -> Autostart | None:
        """The settings, or None when `server.autostart` is off or this runs under CI (`in_ci`)."""
        from zgrep.config import in_ci

        if not cfg.server.autostart or in_ci():
            return None
        return cls(cfg.server.endpoint, cfg.server.autostart_idle_timeout)


def start_daemon(autostart: Autostart, root: str, config: dict[str, Setting] | None = None) -> bool:
    """Start the daemon detached, warming `root` with the starting command's settings (`config`: its
    --model/--milvus-uri), unless one runs or is being started; True when started. The start lock
    goes with it (held until it answers), so concurrent commands start one daemon."""
    from zgrep.locking import lock_holder

    fd = runtime.take_start_lock()
    if fd is None:
        return False
    try:
        if lock_holder(runtime.runtime_dir() / runtime.ALIVE_LOCK) is not None:
            return False  # a daemon runs (loading, busy or hung): the probe's fallback handles it
        runtime.spawn(
            autostart.endpoint,
            autostart.idle_timeout,
            "autostart",
            warm=root,
            start_lock_fd=fd,
            warm_config=config,
        )
        return True
    except OSError:
        return False  # could not start one: this command's answer stands, the next one tries again
    finally:
        os.close(fd)  # the daemon's copy keeps the lock


def env_config() -> dict[str, str]:
    """This shell's ZG_* settings, forwarded so the daemon answers as direct mode would."""
    from zgrep.config import DEFAULTS, env_name

    return {
        key: os.environ[env_name(key)]
        for key in DEFAULTS
        if key != "mode" and not key.startswith("server.") and env_name(key) in os.environ
    }


def call_server(
    info: DaemonInfo,
    op: str,
    root: str,
    args: Args,
    on_progress: Progress | None = None,
    probe_ms: int | None = None,
) -> JSONObject:
    """Run `op` in the daemon described by `info`; DaemonLost when it fails mid-way (Unanswered
    when, with `probe_ms`, the probe sent ahead of it got no answer in that time)."""
    served = operation(op)
    show = (on_progress or stderr_progress()) if served.progress else None
    sent: Args = {
        **args,
        "config": {**env_config(), **(args.get("config") or {})},
        "progress": show is not None,
    }
    request = protocol.make_request(op, root, sent, token=runtime.read_token())
    timeout = READ_ONLY_DEADLINE_S if served.read_only else None
    probe_s = None if probe_ms is None else probe_ms / 1000
    response = exchange(info["endpoint"], request, timeout, info["pid"], show, probe_s)
    if not response["ok"]:
        err = response["error"]
        raise ClientError(err["code"], err["message"])
    return response["result"]


def call_direct(op: str, root: str, args: Args, on_progress: Progress | None = None) -> JSONObject:
    """Run `op` in this process with the same Engine the daemon uses."""
    served = operation(op)
    if served.daemon_only is not None and (why := served.daemon_only(args)):
        raise ClientError(ErrorCode.NEEDS_DAEMON, why)
    from zgrep.dispatch import (
        run_direct,
    )  # the engine stack: loaded only in direct mode (thin client)

    request = protocol.make_request(op, root, args)
    response = run_direct(request, (on_progress or stderr_progress()) if served.progress else None)
    if not response["ok"]:
        err = response["error"]
        raise ClientError(err["code"], err["message"])
    return response["result"]


def workspace_holder(root: str) -> str | None:
    """Who holds the workspace's engine lock ("pid N (...)"), or None when it is free."""
    from pathlib import Path

    from zgrep.locking import ENGINE_LOCK, lock_holder
    from zgrep.workspace import STATE_DIR

    return lock_holder(Path(root) / STATE_DIR / ENGINE_LOCK)


def wait_workspace_free(root: str, timeout_s: float = 10.0) -> None:
    """Wait until nobody holds the workspace's engine lock (a dead daemon's lock goes with it)."""
    deadline = time.monotonic() + timeout_s
    while workspace_holder(root) is not None and time.monotonic() < deadline:
        time.sleep(0.05)


def live_daemon() -> DaemonInfo | None:
    """The endpoint info of a daemon whose process exists (answering or not), else None."""
    info = runtime.read_info()
    return info if info is not None and runtime.pid_alive(info["pid"]) else None


def daemon_holding(root: str) -> int | None:
    """The pid of the live zg daemon when it is the process holding this workspace's lock."""
    holder = workspace_holder(root)
    info = live_daemon()
    if holder is None or info is None or holder.split()[:2] != ["pid", str(info["pid"])]:
        return None
    return int(info["pid"])


def unresponsive(pid: int) -> ClientError:
    """The daemon holds the workspace (so direct mode cannot open it) but does not answer."""
    return ClientError(
        ErrorCode.WORKSPACE_BUSY,
        f"the zg daemon (pid {pid}) holds this index and is not answering; {RESTART}",
    )


def refuse_if_daemon_holds(root: str) -> None:
    """Forced direct mode: fail fast, naming the daemon, when it holds this workspace."""
    pid = daemon_holding(root)
    if pid is None:
        return
    raise ClientError(
        ErrorCode.WORKSPACE_BUSY,
        f"the index of {root} is held by the zg daemon (pid {pid}); drop --mode direct "
        "(auto and server mode use the daemon), or release it first: zg server off",
    )


def call_direct_checked(
    op: str, root: str, args: Args, mode: str, on_progress: Progress | None = None
) -> tuple[JSONObject, str]:
    """call_direct, naming the daemon when it turns out to hold the workspace after all; in auto
    mode a daemon that started meanwhile (autostart) and took the workspace answers instead."""
    try:
        return call_direct(op, root, args, on_progress), "direct"
    except ClientError as exc:
        if exc.code != ErrorCode.WORKSPACE_BUSY or (pid := daemon_holding(root)) is None:
            raise
        if mode == "direct":
            refuse_if_daemon_holds(root)
        info = probe(BUSY_PROBE_MS)
        if info is not None and (other := runtime.other_install(info)) is not None:
            raise held_by_other_install(root, pid, other) from None
        if info is not None:
            try:
                return call_server(info, op, root, args, on_progress), "server"
            except DaemonLost:
                pass
        raise unresponsive(pid) from None


def retire(info: DaemonInfo, root: str) -> bool:
    """Stop an autostarted daemon (of another install) and wait for it to release `root`; whether it
    went."""
    if not ask_shutdown(info) or not wait_gone(info["pid"], RETIRE_WAIT_S):
        return False
    wait_workspace_free(root)
    return True


def call_beside(
    info: DaemonInfo, other: str, op: str, root: str, args: Args, on_progress: Progress | None
) -> tuple[JSONObject, str]:
    """Answer in-process beside a daemon of another install (which this one must not use), saying so
    in one line."""
    pid = info["pid"]
    print(
        f"zg: the zg daemon (pid {pid}) is another install ({other}); answering in direct mode (to serve this "
        f"install from the daemon: {RESTART.removeprefix('restart it: ')})",
        file=sys.stderr,
    )
    try:
        return call_direct(op, root, args, on_progress), "direct"
    except ClientError as exc:
        if exc.code != ErrorCode.WORKSPACE_BUSY or daemon_holding(root) != pid:
            raise
        raise held_by_other_install(root, pid, other) from None


def held_by_other_install(root: str, pid: int, other: str) -> ClientError:
    """The workspace is held by a daemon this install must not use (so direct mode cannot open it
    either)."""
    return ClientError(
        ErrorCode.WORKSPACE_BUSY,
        f"the index of {root} is held by the zg daemon (pid {pid}) of "
        f"another install ({other}); stop it: zg server off",
    )


def call(
    op: str,
    root: str,
    args: Args,
    mode: str = "auto",
    probe_ms: int | None = None,
    on_progress: Progress | None = None,
    autostart: Autostart | None = None,
) -> tuple[JSONObject, str]:
    """Run `op` for workspace `root`; return (result, mode actually used). `on_progress` gets a
    progress op's events (default: a stderr line when stderr is a terminal). `autostart`: in auto
    mode, an op the table marks `autostart` answered in-process because no daemon ran then starts
    one (after its store is closed). A daemon holding `root` is reached whatever runtime dir this
    environment names (runtime.following); one of another install is restarted when it was
    autostarted, else answered beside in direct mode. `probe_ms`: how long a daemon has to answer
    the probe (default server.probe_timeout_ms's)."""
    if probe_ms is None:
        from zgrep.config import ServerSection

        probe_ms = ServerSection.probe_timeout_ms
    from zgrep.vocab import MODES

    if mode not in MODES:
        raise ClientError(
            ErrorCode.BAD_REQUEST, f"unknown mode {mode!r}; choose from {', '.join(MODES)}"
        )
    with runtime.following(root):
        return route(op, root, args, mode, probe_ms, on_progress, autostart)


def route(
    op: str,
    root: str,
    args: Args,
    mode: str,
    probe_ms: int,
    on_progress: Progress | None,
    autostart: Autostart | None,
) -> tuple[JSONObject, str]:
    """call()'s routing, inside the runtime dir it follows."""
    if mode == "direct":
        refuse_if_daemon_holds(root)
        return call_direct_checked(op, root, args, mode, on_progress)
    info = runtime.read_info()
    if info is not None and info["pid"] in MISSED:
        info = None  # as a failed probe (the fast path's, in this process)
    elif operation(op).read_only and info is not None and reachable(info):
        answered = served_probed(info, op, root, args, mode, on_progress, probe_ms)
        if answered is not None:
            return answered
        info = None  # as a failed probe: what follows is the same
    else:
        info = probe(probe_ms)
    if info is None and live_daemon() is None:
        info = wait_starting()  # rather than race it for the workspace in-process
    if info is None and (running := live_daemon()) is not None:
        if not pid_stopped(running["pid"]) and running["pid"] not in MISSED:
            info = probe(BUSY_PROBE_MS)  # a live daemon that is busy (an index job): give it longer
        if info is None:
            if (pid := daemon_holding(root)) is not None:
                raise unresponsive(pid)  # direct mode could not open the index either: say so now
            if mode == "server":
                raise ClientError(
                    ErrorCode.NO_DAEMON,
                    f"the zg daemon (pid {running['pid']}) is not answering; {RESTART}",
                )
    if info is not None and (other := runtime.other_install(info)) is not None:
        if mode == "server":
            raise ClientError(
                ErrorCode.NO_DAEMON,
                f"the zg daemon (pid {info['pid']}) is another install ({other}); {RESTART}",
            )
        if info.get("started_by") != "autostart" or not retire(info, root):
            return call_beside(info, other, op, root, args, on_progress)
        info = None
    if info is None:
        if mode == "server":
            raise ClientError(ErrorCode.NO_DAEMON, NO_DAEMON)
        answered = call_direct_checked(op, root, args, mode, on_progress)
        if autostart is not None and operation(op).autostart and answered[1] == "direct":
            start_daemon(autostart, root, args.get("config") or None)
        return answered
    return served(info, op, root, args, mode, on_progress)


def served_probed(
    info: DaemonInfo,
    op: str,
    root: str,
    args: Args,
    mode: str,
    on_progress: Progress | None,
    probe_ms: int,
) -> tuple[JSONObject, str] | None:
    """A read answered by the daemon `info` describes, its request carrying the probe (one round
    trip); None when the probe got no answer within `probe_ms`, whatever became of the request."""
    try:
        return served(info, op, root, args, mode, on_progress, probe_ms)
    except Unanswered:
        return None


def call_served(
    op: str, root: str, args: Args, mode: str, probe_ms: int
) -> tuple[JSONObject, str] | None:
    """call()'s first step alone: a read (auto or server mode) answered by this install's daemon when
    it answers the probe its request carries within `probe_ms`, or, still alive and not stopped,
    within BUSY_PROBE_MS on a second try (a daemon that does not answer, hung, costs that long); None
    where call() would go on otherwise (no such daemon, both probes unanswered: MISSED, direct mode,
    not a read), having written nothing (`zg search`'s fast path then hands the command to the click
    CLI, whose call() does the rest)."""
    if mode not in ("auto", "server") or not operation(op).read_only:
        return None
    with runtime.following(root):
        info = runtime.read_info()
        if info is None or not reachable(info):
            return None
        answered = served_probed(info, op, root, args, mode, None, probe_ms)
        if answered is None and reachable(info):  # busy rather than gone: give it longer
            answered = served_probed(info, op, root, args, mode, None, BUSY_PROBE_MS)
            if answered is None:
                MISSED.add(info["pid"])
        return answered


def reachable(info: DaemonInfo) -> bool:
    """Whether the daemon `info` describes is this install's, alive and not stopped (so worth a
    request that carries the probe)."""
    return (
        runtime.other_install(info) is None
        and runtime.pid_alive(info["pid"])
        and not pid_stopped(info["pid"])
    )


def served(
    info: DaemonInfo,
    op: str,
    root: str,
    args: Args,
    mode: str,
    on_progress: Progress | None,
    probe_ms: int | None = None,
) -> tuple[JSONObject, str]:
    """`op` answered by the daemon `info` describes; when it fails mid-way, a read in auto mode is
    answered in-process (unless the daemon still holds the workspace). Unanswered (`probe_ms`) is
    the caller's."""
    try:
        return call_server(info, op, root, args, on_progress, probe_ms), "server"
    except Unanswered:
        raise
    except DaemonLost as exc:
        if (pid := daemon_holding(root)) is not None:
            raise unresponsive(pid) from None  # alive, stopped or hung, and still holding the index
        if mode == "auto" and operation(op).read_only:
            wait_workspace_free(root)
            return call_direct_checked(op, root, args, mode, on_progress)
        raise ClientError(
            ErrorCode.DAEMON_LOST,
            f"the zgrep daemon failed during {op}: {exc}; check "
            "`zg server status`, or run with --mode direct",
        ) from None
