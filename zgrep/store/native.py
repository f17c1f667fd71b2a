"""The embedded Milvus: milvus-lite 2.5's native engine (C++ segcore + Knowhere) as a child process
that serves one data file over a Unix socket in a private directory.

Standard library only (status and doctor name the engine without importing pymilvus). The child
takes the data file's lock file as its last argument and waits on it: once this process lets go
(close, exit, `kill -9`), the engine gets the lock and exits, so it never outlives its owner and
never shares its file."""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import time
from importlib.util import find_spec
from pathlib import Path

from zgrep import procfs

PACKAGE = "milvus-lite"
ENGINE = "native"  # the manifest's milvus_engine for data this engine wrote (indexes before it name none)
# how long close waits for the engine to finish its writes and exit before killing it
_EXIT_WAIT_S = 10.0


class EngineError(Exception):
    """The engine could not be started or answered; `busy` names the process holding its data."""

    def __init__(self, message: str, busy: str | None = None) -> None:
        super().__init__(message)
        self.busy = busy


def is_lite(uri: str) -> bool:
    """Whether `uri` names a Milvus Lite data file (not a server)."""
    return "://" not in uri


def engine_of(uri: str) -> str:
    """The manifest's milvus_engine for data at `uri`: this engine for a Milvus Lite file, else the
    server's."""
    return ENGINE if is_lite(uri) else "server"


def describe(uri: str = "") -> str:
    """Which engine serves `uri` (the embedded one by default), e.g. "milvus-lite 2.5.1 (native)"."""
    if uri and not is_lite(uri):
        return "Milvus server"
    version = installed_version(PACKAGE)
    return f"{PACKAGE} {version} ({ENGINE})" if version else f"{PACKAGE} not installed"


def installed_version(package: str) -> str | None:
    """The version the first `.dist-info` of `package` on sys.path records (as
    importlib.metadata.version finds it, without that module's imports: ~120M instructions, a third
    of a `zg status` without a daemon), or None when it is not installed."""
    prefix = package.replace("-", "_").lower() + "-"
    for entry in sys.path:
        try:
            names = os.listdir(entry or ".")
        except OSError:
            continue
        for name in names:
            if name.lower().startswith(prefix) and name.endswith(".dist-info"):
                version = _metadata_version(Path(entry or ".", name, "METADATA"))
                if version is not None:
                    return version
    return None


def _metadata_version(metadata: Path) -> str | None:
    """The `Version:` header of a METADATA file, or None."""
    try:
        with metadata.open(encoding="utf-8") as lines:
            for line in lines:
                if line.startswith("Version:"):
                    return line.split(":", 1)[1].strip()
                if not line.strip():  # the headers end
                    break
    except OSError:
        pass
    return None


def lock_path(db: Path) -> Path:
    """The lock file the engine and milvus-lite's own launcher agree on, beside the data file."""
    return db.parent / f".{db.name}.lock"


def holder(db: Path) -> str | None:
    """ "pid N (command)" of the process holding `db`'s engine lock, from /proc/locks (None when free or unknown).
    Read, never probed: closing a probe's descriptor would drop this process's own POSIX lock."""
    try:
        st = os.stat(lock_path(db))
    except OSError:
        return None
    pid = procfs.lock_holder(
        f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}", "POSIX"
    )
    return None if pid is None else procfs.describe(pid, procfs.cmdline(pid))


def engine_pids(db: Path) -> list[int]:
    """The engine processes serving `db` (Linux; none once their owners let go and they exited)."""
    data = os.fsencode(str(db))
    pids = []
    for entry in os.listdir("/proc") if os.path.isdir("/proc") else ():
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as fh:
                argv = fh.read().split(b"\0")
        except OSError:
            continue
        if len(argv) > 1 and argv[0].endswith(b"/milvus") and argv[1] == data:
            pids.append(int(entry))
    return pids


def remove_data(db: Path) -> None:
    """Delete a data file and what any Milvus Lite release kept beside it (3.x wrote a directory)."""
    if db.is_dir() and not db.is_symlink():
        shutil.rmtree(db, ignore_errors=True)
    else:
        db.unlink(missing_ok=True)


def command(db: Path, address: str, lock: Path | None = None) -> tuple[list[str], dict[str, str]]:
    """The engine's argv and environment: serving `db` on `address` (`unix:PATH`, or `HOST:PORT` for
    gRPC over TCP: a Milvus server for tests and benches), until the owner of `lock` lets go when
    one is given."""
    # (importing it loads pkg_resources: ~0.2 s for a version string)
    spec = find_spec("milvus_lite")
    if spec is None or not spec.submodule_search_locations:
        raise EngineError(
            f"the embedded Milvus engine ({PACKAGE} 2.5) is not installed for this platform; "
            "install it (pip install 'milvus-lite>=2.5.1,<2.6'), or point zg at a Milvus server "
            "with --milvus-uri / ZG_MILVUS_URI"
        )
    binary = Path(next(iter(spec.submodule_search_locations))) / "lib" / "milvus"
    lib = str(binary.parent)
    env = {k: v for k, v in os.environ.items() if k not in ("LD_LIBRARY_PATH", "DYLD_LIBRARY_PATH")}
    env.update({"LD_LIBRARY_PATH": lib, "DYLD_LIBRARY_PATH": lib})
    return [str(binary), str(db), address, "ERROR", *([str(lock)] if lock else [])], env


class NativeEngine:
    """One engine child serving the data file `db`; `uri` is its socket for pymilvus."""

    def __init__(self, db: Path, timeout: float) -> None:
        """Take the data file's lock and start the engine; returns before it answers, and a failure
        to start is raised by wait() (so the start overlaps with importing pymilvus)."""
        self.db = db = db.absolute()  # (the engine runs in the data file's directory)
        self._deadline = time.monotonic() + timeout
        self._lock_fd: int | None = None
        self._error: EngineError | None = None
        self.proc: subprocess.Popen[bytes] | None = None
        # one socket and log per data file, in a private directory: the lock keeps them to one
        # engine at a time, and what a killed owner left is replaced by the next start
        name = hashlib.sha256(str(db.resolve()).encode()).hexdigest()[:16]
        self.socket = self._log = ""
        try:
            if db.is_dir():
                raise EngineError(f"{db} is a directory (written by Milvus Lite 3)")
            directory = _private_dir()
            self.socket = os.path.join(directory, f"{name}.sock")
            self._log = os.path.join(directory, f"{name}.log")
            self._start()
        except EngineError as exc:
            self._error = exc
        self.uri = f"unix:{self.socket}"

    def _start(self) -> None:
        argv, env = command(self.db, f"unix:{self.socket}", lock_path(self.db))
        self._lock_fd = self._take_lock()
        try:
            os.unlink(self.socket)  # a killed engine's: its presence must not pass for readiness
        except FileNotFoundError:
            pass
        try:
            with open(self._log, "wb") as log:
                self.proc = subprocess.Popen(
                    argv,
                    env=env,
                    cwd=str(self.db.parent),
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL,
                    stderr=log,
                    start_new_session=True,
                )
        except OSError as exc:
            os.close(self._lock_fd)
            self._lock_fd = None
            raise EngineError(f"cannot start the Milvus engine {argv[0]}: {exc.strerror}") from None

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc else None

    def _take_lock(self) -> int:
        """The engine lock, waiting out an engine whose owner died and that is still exiting."""
        fd = os.open(lock_path(self.db), os.O_RDWR | os.O_CREAT, 0o644)
        while True:
            try:
                fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return fd
            except OSError:
                who = holder(self.db)
            orphan = who is not None and who.split(" (", 1)[-1].startswith("milvus ")
            if (who is not None and not orphan) or time.monotonic() >= self._deadline:
                os.close(fd)
                who = who or "another process"
                raise EngineError(f"{self.db} is held by {who}", busy=who) from None
            # an engine whose owner is gone (it exits once it holds the lock), or a lock just let go
            time.sleep(0.02)

    def listening(self) -> bool:
        """Block until the engine listens on its socket (True: ~40 ms after its start), or it stopped,
        could not start or its time ran out (False); wait() says why."""
        if self._error is not None or self.proc is None:
            return False
        # bound is not yet listening: a loaded machine shows the gap
        while not _accepts(self.socket):
            if self.proc.poll() is not None or time.monotonic() >= self._deadline:
                return False
            time.sleep(0.005)
        return True

    def wait(self) -> None:
        """Block until the engine listens on its socket; EngineError when it could not start, with
        the engine's own words when it stopped."""
        if self._error is not None:
            raise self._error
        assert self.proc is not None
        if not self.listening():
            detail = self.last_error() or (
                f"exit status {self.proc.returncode}"
                if self.proc.returncode is not None
                else "it did not answer in time"
            )
            self.close()
            raise EngineError(detail)

    def last_error(self) -> str:
        """The engine's last error line, without its log prefix."""
        if not self._log:
            return ""
        try:
            lines = Path(self._log).read_text("utf-8", "replace").splitlines()
        except OSError:
            return ""
        errors = [line.rsplit("]", 1)[-1].strip() for line in lines if line.startswith(("E", "F"))]
        return next((e for e in reversed(errors) if e), "")

    def close(self) -> None:
        """Let the engine go: it finishes, sees the lock free and exits (killed if it has not after
        a while)."""
        if self._lock_fd is None:
            return
        os.close(self._lock_fd)  # closing releases the lockf lock the engine waits on
        self._lock_fd = None
        assert self.proc is not None
        try:
            self.proc.wait(_EXIT_WAIT_S)
        except subprocess.TimeoutExpired:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait()
        self._cleanup()

    def _cleanup(self) -> None:
        for path in (self.socket, self._log):
            try:
                os.unlink(path)
            except OSError:
                pass


def _accepts(path: str) -> bool:
    """Whether a server listens on the Unix socket `path` (a connect succeeds)."""
    if not os.path.exists(path):
        return False
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
        try:
            probe.connect(path)
        except OSError:
            return False
    return True


def _private_dir() -> str:
    """`<tmp>/zg-milvus-<uid>`, made 0700 and checked to be this user's own (never another user's
    planted dir)."""
    path = os.path.join(tempfile.gettempdir(), f"zg-milvus-{os.getuid()}")
    try:
        os.mkdir(path, 0o700)
    except FileExistsError:
        pass
    st = os.lstat(path)
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid() or st.st_mode & 0o077:
        raise EngineError(f"{path} is not a private directory of this user; remove it")
    return path
