"""Where the per-user daemon keeps its socket, pid, endpoint, token and log files, and how it is
started.

Imported on the thin client path: the standard library and light zgrep modules only (procfs; fsutil,
locking and workspace where they are used). What `zg server status` reads (read_info, read_token,
pid_alive) takes the runtime dir as a string (`runtime_path`): it imports neither pathlib nor typing,
~30M instructions of that command."""

from __future__ import annotations

import os
import stat
import sys
from contextvars import ContextVar

from zgrep import __version__, jsoncodec
from zgrep.procfs import process_state

PID_FILE = "daemon.pid"
INFO_FILE = "daemon.json"
TOKEN_FILE = "token"
SOCKET_FILE = "daemon.sock"
ALIVE_LOCK = "daemon.lock"
START_LOCK = "start.lock"
LOG_FILE = "daemon.log"
STDERR_FILE = "daemon.stderr"
IPC_PATH_MAX = 100  # sockaddr_un.sun_path holds 107 bytes; keep a margin
STARTED_BY = (
    "command",
    "autostart",
)  # `zg server on` / run, or an auto-mode search that found no daemon
# in a workspace's state dir: the runtime dir of the daemon holding it (0600)
HOLDER_FILE = "daemon.json"
_FOLLOWED: ContextVar[str | None] = ContextVar("zgrep_runtime_dir", default=None)

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (see zgrep.service)
if TYPE_CHECKING:
    import subprocess
    from pathlib import Path
    from contextvars import Token
    from types import TracebackType
    from typing import Any, Required, TypedDict

    from zgrep.contracts import Setting

    class DaemonInfo(TypedDict, total=False):
        """The daemon's endpoint file (INFO_FILE): read_info returns it only with an int `pid` and a
        str `endpoint`."""

        pid: Required[int]
        endpoint: Required[str]
        version: str  # install(): what identifies the daemon's zg install
        executable: str
        prefix: str
        started: float  # epoch seconds
        started_by: str  # command | autostart


def _private_dir(path: Path) -> Path:
    """Create `path` (and parents) and make the leaf 0700."""
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    os.chmod(path, 0o700)
    return path


def _own_private_dir(path: str | Path) -> bool:
    """Whether `path` is a directory (not a symlink) of this user that nobody else may enter."""
    try:
        st = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISDIR(st.st_mode) and st.st_uid == os.getuid() and not st.st_mode & 0o077


def runtime_path() -> str:
    """`$XDG_RUNTIME_DIR/zgrep`, else `/run/user/$UID/zgrep` when that is this user's own (an agent
    host may drop the variable), else a 0700 `run` dir under the zgrep cache dir. Inside
    `following(root)`: the runtime dir of the daemon holding that workspace."""
    followed = _FOLLOWED.get()
    if followed is not None:
        return followed
    xdg = os.environ.get("XDG_RUNTIME_DIR")
    if xdg and os.path.isdir(xdg) and os.access(xdg, os.W_OK):
        return os.path.join(xdg, "zgrep")
    if _own_private_dir(user_run := f"/run/user/{os.getuid()}"):
        return os.path.join(user_run, "zgrep")
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(cache, "zgrep", "run")


def runtime_dir(create: bool = False) -> Path:
    """`runtime_path()` as a Path; made (0700) with `create`."""
    from pathlib import Path

    path = Path(runtime_path())
    return _private_dir(path) if create else path


def record_holder(root: Path) -> None:
    """Record in `root`'s state dir (0600, beside its engine lock) that this daemon, whose files are
    in runtime_dir(), holds the workspace: clients started with another environment find it there.
    Best effort: a workspace whose state dir cannot take it is still served."""
    from zgrep.fsutil import atomic_write
    from zgrep.workspace import STATE_DIR

    try:
        atomic_write(
            root / STATE_DIR / HOLDER_FILE,
            jsoncodec.dumps({"pid": os.getpid(), "runtime_dir": str(runtime_dir())}),
        )
    except OSError:
        pass


def forget_holder(root: Path) -> None:
    """Remove this daemon's record from `root`'s state dir (another process's record stays)."""
    from zgrep.workspace import STATE_DIR

    path = root / STATE_DIR / HOLDER_FILE
    if _holder_record(path).get("pid") == os.getpid():
        try:
            path.unlink()
        except OSError:
            pass


def _holder_record(path: str | Path) -> dict[str, Any]:
    """The record at `path` when this user wrote it and only this user may read it, else {}."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return {}
    try:
        st = os.fstat(fd)
        if (
            not stat.S_ISREG(st.st_mode)
            or st.st_uid != os.getuid()
            or st.st_mode & 0o077
            or st.st_size > 4096
        ):
            return {}
        record = jsoncodec.loads(os.read(fd, 4096).decode("utf-8-sig"))
    except (OSError, ValueError):
        return {}
    finally:
        os.close(fd)
    return record if isinstance(record, dict) else {}


def holder_runtime_dir(root: str | Path) -> str | None:
    """The runtime dir of the zg daemon that holds workspace `root` now, by its record, or None.
    Workspace files are untrusted: the dir must be this user's private dir, and the process named
    both there and in the record must be the one holding the workspace's engine lock."""
    from zgrep.locking import ENGINE_LOCK, lock_holder
    from zgrep.workspace import STATE_DIR

    state = os.path.join(root, STATE_DIR)
    holder = lock_holder(os.path.join(state, ENGINE_LOCK))
    if holder is None:
        return None
    record = _holder_record(os.path.join(state, HOLDER_FILE))
    pid, rdir = record.get("pid"), record.get("runtime_dir")
    if (
        not isinstance(pid, int)
        or not isinstance(rdir, str)
        or holder.split()[:2] != ["pid", str(pid)]
    ):
        return None
    if not _own_private_dir(rdir) or lock_holder(os.path.join(rdir, ALIVE_LOCK)) is None:
        return None
    info = read_info(rdir)
    return rdir if info is not None and info["pid"] == pid else None


class following:  # (a context manager as a class: this module loads no contextlib)
    """Within this block (this thread), runtime_dir() is that of the daemon holding `root` when it
    runs with another environment (say, started from a shell whose XDG_RUNTIME_DIR an agent host
    dropped)."""

    def __init__(self, root: str | Path | None) -> None:
        self.root = root
        self.token: Token[str | None] | None = None

    def __enter__(self) -> None:
        found = holder_runtime_dir(self.root) if self.root else None
        # (normalised as pathlib spells it: the record holds str(runtime_dir()), "//" and all)
        if found is not None and os.path.normpath(found) != os.path.normpath(runtime_path()):
            self.token = _FOLLOWED.set(found)

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self.token is not None:
            _FOLLOWED.reset(self.token)


def state_dir(create: bool = False) -> Path:
    """`$XDG_STATE_HOME/zgrep` (default ~/.local/state/zgrep): the daemon's log files."""
    from pathlib import Path

    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    path = Path(base) / "zgrep"
    return _private_dir(path) if create else path


def default_endpoint() -> str:
    """The ipc socket inside the runtime dir (through a short alias when its path is too long for a
    socket)."""
    rdir = runtime_dir()
    if len(os.fsencode(str(rdir / SOCKET_FILE))) > IPC_PATH_MAX:
        rdir = _short_alias(rdir)
    return f"ipc://{rdir / SOCKET_FILE}"


def _short_alias(target: Path) -> Path:
    """A symlink `/tmp/zgrep-UID/HASH` -> `target` in a private dir this user owns (sockaddr_un is
    short)."""
    import hashlib  # only for a runtime dir too deep for a socket path
    import tempfile
    from pathlib import Path

    base = Path(tempfile.gettempdir()) / f"zgrep-{os.getuid()}"
    try:
        base.mkdir(mode=0o700)
    except FileExistsError:
        pass
    st = os.lstat(base)
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid() or st.st_mode & 0o077:
        raise OSError(
            f"{base} is not a private directory of this user; remove it or set a shorter XDG_RUNTIME_DIR"
        )
    link = base / hashlib.sha256(os.fsencode(str(target))).hexdigest()[:16]
    if not (link.is_symlink() and os.readlink(link) == str(target)):
        tmp = link.with_name(f".{link.name}.{os.getpid()}")
        tmp.unlink(missing_ok=True)
        os.symlink(target, tmp)
        os.replace(tmp, link)
    return link


def new_token(name: str = TOKEN_FILE) -> str:
    """A fresh random token, written to the 0600 file `name` in the runtime dir (the daemon's by
    default)."""
    import secrets  # only when a token is made: the thin client imports this module

    from zgrep.fsutil import atomic_write

    token = secrets.token_urlsafe(32)
    atomic_write(runtime_dir(create=True) / name, token)
    return token


def read_token() -> str | None:
    """The token of the running daemon, or None."""
    try:
        with open(os.path.join(runtime_path(), TOKEN_FILE), encoding="utf-8") as file:
            return file.read().strip() or None
    except OSError:
        return None


def read_info(rdir: str | Path | None = None) -> DaemonInfo | None:
    """The endpoint file of the daemon (pid, endpoint, version, install, started) in `rdir`
    (default: runtime_path()), or None."""
    try:
        with open(os.path.join(rdir or runtime_path(), INFO_FILE), encoding="utf-8") as file:
            info = jsoncodec.loads(file.read())
    except (OSError, ValueError):
        return None
    if (
        not isinstance(info, dict)
        or not isinstance(info.get("pid"), int)
        or not isinstance(info.get("endpoint"), str)
    ):
        return None
    found: DaemonInfo = info  # type: ignore[assignment]  # its pid and endpoint checked above
    return found


def install() -> dict[str, str]:
    """What identifies this zg install: its version, and the interpreter and prefix (venv) it runs
    from."""
    return {"version": __version__, "executable": sys.executable, "prefix": sys.prefix}


def other_install(info: DaemonInfo) -> str | None:
    """How the install of the daemon described by `info` differs from this one ("zgrep 0.1 at
    /venv/bin/python"), or None when it is this one."""
    if info.get("version") == __version__ and info.get("prefix") == sys.prefix:
        return None
    return f"zgrep {info.get('version') or '?'} at {info.get('executable') or 'an unknown interpreter'}"


def pid_alive(pid: int) -> bool:
    """Whether a process with `pid` exists (zombies count as gone)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return process_state(pid) != b"Z"


def remove_files(endpoint: str | None) -> None:
    """Delete the pid, endpoint and token files and an ipc socket file."""
    from pathlib import Path

    rdir = runtime_dir()
    for name in (PID_FILE, INFO_FILE, TOKEN_FILE):
        (rdir / name).unlink(missing_ok=True)
    if endpoint and endpoint.startswith("ipc://"):
        Path(endpoint[len("ipc://") :]).unlink(missing_ok=True)
    (rdir / SOCKET_FILE).unlink(missing_ok=True)


def take_start_lock() -> int | None:
    """A descriptor holding the start lock (flock), to hand to the daemon being started (it drops
    the lock once it answers); None while another process is starting one."""
    from zgrep.locking import FileLock

    lock = FileLock(runtime_dir(create=True) / START_LOCK, 0o600)
    return lock.detach() if lock.acquire(blocking=False) else None


def spawn(
    endpoint: str,
    idle_timeout: float,
    started_by: str,
    allow_non_loopback: bool = False,
    warm: str | None = None,
    start_lock_fd: int | None = None,
    warm_config: dict[str, Setting] | None = None,
) -> subprocess.Popen[bytes]:
    """Start `zg server run` detached: its own session, cwd /, stdin and stdout null, stderr to the
    state dir's STDERR_FILE; it outlives the caller. `warm`: a workspace to open as soon as it
    listens, with the settings of the command that started it (`warm_config`: its
    --model/--milvus-uri, as sent to a daemon)."""
    import subprocess  # only when starting a daemon: the thin client pays nothing for it otherwise

    argv = [
        sys.executable,
        "-m",
        "zgrep.cli.main",
        "server",
        "run",
        "--quiet",
        "--endpoint",
        endpoint,
        "--idle-timeout",
        str(idle_timeout),
        "--started-by",
        started_by,
        *(["--allow-non-loopback"] if allow_non_loopback else []),
        *(["--warm", warm] if warm else []),
        *(["--warm-config", jsoncodec.dumps(warm_config)] if warm and warm_config else []),
        *(["--start-lock-fd", str(start_lock_fd)] if start_lock_fd is not None else []),
    ]
    with open(state_dir(create=True) / STDERR_FILE, "wb") as err:
        return subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=err,
            start_new_session=True,
            close_fds=True,
            cwd="/",
            pass_fds=() if start_lock_fd is None else (start_lock_fd,),
        )


def is_loopback(host: str) -> bool:
    """Whether `host` (a literal address, bracketed or not, or localhost) reaches only this machine."""
    if host == "localhost":
        return True
    import ipaddress  # only where a tcp endpoint is checked

    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False  # an interface name or `*`: may be any interface
