"""Where the per-user daemon keeps its socket, pid, endpoint, token and log files, and how it is started.

Imported on the thin client path: the standard library and light zgrep modules only (fsutil, procfs, locking).
"""

from __future__ import annotations

import hashlib
import ipaddress
import json
import os
import stat
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from zgrep.fsutil import atomic_write
from zgrep.locking import FileLock
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
STARTED_BY = ("command", "autostart")  # `zg server on` / run, or an auto-mode search that found no daemon

if TYPE_CHECKING:
    import subprocess


def _private_dir(path: Path) -> Path:
    """Create `path` (and parents) and make the leaf 0700."""
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    os.chmod(path, 0o700)
    return path


def runtime_dir(create: bool = False) -> Path:
    """`$XDG_RUNTIME_DIR/zgrep`, else a 0700 `run` dir under the zgrep cache dir."""
    xdg = os.environ.get("XDG_RUNTIME_DIR")
    if xdg and os.path.isdir(xdg) and os.access(xdg, os.W_OK):
        path = Path(xdg) / "zgrep"
    else:
        cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
        path = Path(cache) / "zgrep" / "run"
    return _private_dir(path) if create else path


def state_dir(create: bool = False) -> Path:
    """`$XDG_STATE_HOME/zgrep` (default ~/.local/state/zgrep): the daemon's log files."""
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    path = Path(base) / "zgrep"
    return _private_dir(path) if create else path


def default_endpoint() -> str:
    """The ipc socket inside the runtime dir (through a short alias when its path is too long for a socket)."""
    rdir = runtime_dir()
    if len(os.fsencode(str(rdir / SOCKET_FILE))) > IPC_PATH_MAX:
        rdir = _short_alias(rdir)
    return f"ipc://{rdir / SOCKET_FILE}"


def _short_alias(target: Path) -> Path:
    """A symlink `/tmp/zgrep-UID/HASH` -> `target` in a private dir this user owns (sockaddr_un is short)."""
    base = Path(tempfile.gettempdir()) / f"zgrep-{os.getuid()}"
    try:
        base.mkdir(mode=0o700)
    except FileExistsError:
        pass
    st = os.lstat(base)
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid() or st.st_mode & 0o077:
        raise OSError(f"{base} is not a private directory of this user; remove it or set a shorter XDG_RUNTIME_DIR")
    link = base / hashlib.sha256(os.fsencode(str(target))).hexdigest()[:16]
    if not (link.is_symlink() and os.readlink(link) == str(target)):
        tmp = link.with_name(f".{link.name}.{os.getpid()}")
        tmp.unlink(missing_ok=True)
        os.symlink(target, tmp)
        os.replace(tmp, link)
    return link


def new_token(name: str = TOKEN_FILE) -> str:
    """A fresh random token, written to the 0600 file `name` in the runtime dir (the daemon's by default)."""
    import secrets  # only when a token is made: the thin client imports this module

    token = secrets.token_urlsafe(32)
    atomic_write(runtime_dir(create=True) / name, token)
    return token


def read_token() -> str | None:
    """The token of the running daemon, or None."""
    try:
        return (runtime_dir() / TOKEN_FILE).read_text("utf-8").strip() or None
    except OSError:
        return None


def read_info() -> dict[str, Any] | None:
    """The endpoint file of the daemon (pid, endpoint, version, started), or None."""
    try:
        info = json.loads((runtime_dir() / INFO_FILE).read_text("utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(info, dict) or not isinstance(info.get("pid"), int) or not isinstance(info.get("endpoint"), str):
        return None
    return info


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
    rdir = runtime_dir()
    for name in (PID_FILE, INFO_FILE, TOKEN_FILE):
        (rdir / name).unlink(missing_ok=True)
    if endpoint and endpoint.startswith("ipc://"):
        Path(endpoint[len("ipc://"):]).unlink(missing_ok=True)
    (rdir / SOCKET_FILE).unlink(missing_ok=True)


def take_start_lock() -> int | None:
    """A descriptor holding the start lock (flock), to hand to the daemon being started (it drops the lock
    once it answers); None while another process is starting one."""
    lock = FileLock(runtime_dir(create=True) / START_LOCK, 0o600)
    return lock.detach() if lock.acquire(blocking=False) else None


def spawn(endpoint: str, idle_timeout: float, started_by: str, allow_non_loopback: bool = False,
          warm: str | None = None, start_lock_fd: int | None = None,
          warm_config: dict[str, Any] | None = None) -> subprocess.Popen[bytes]:
    """Start `zg server run` detached: its own session, cwd /, stdin and stdout null, stderr to the state
    dir's STDERR_FILE; it outlives the caller. `warm`: a workspace to open as soon as it listens, with the
    settings of the command that started it (`warm_config`: its --model/--milvus-uri, as sent to a daemon)."""
    import subprocess  # only when starting a daemon: the thin client pays nothing for it otherwise

    argv = [sys.executable, "-m", "zgrep.cli.main", "server", "run", "--quiet", "--endpoint", endpoint,
            "--idle-timeout", str(idle_timeout), "--started-by", started_by,
            *(["--allow-non-loopback"] if allow_non_loopback else []), *(["--warm", warm] if warm else []),
            *(["--warm-config", json.dumps(warm_config)] if warm and warm_config else []),
            *(["--start-lock-fd", str(start_lock_fd)] if start_lock_fd is not None else [])]
    with open(state_dir(create=True) / STDERR_FILE, "wb") as err:
        return subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err,
                                start_new_session=True, close_fds=True, cwd="/",
                                pass_fds=() if start_lock_fd is None else (start_lock_fd,))


def is_loopback(host: str) -> bool:
    """Whether `host` (a literal address, bracketed or not, or localhost) reaches only this machine."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False  # an interface name or `*`: may be any interface
