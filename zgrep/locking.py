"""File locks (flock): the one exclusive lock, the workspace lock naming its holder, and who holds a
lock.

Standard library only: the git hooks take the queue lock on their fast path."""

from __future__ import annotations

import fcntl
import os
import sys
import time

from zgrep.procfs import describe
from zgrep.service import ErrorCode, FixedCodeError

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (see zgrep.service)
if TYPE_CHECKING:
    from pathlib import Path

# per-workspace lock file inside the state dir (Milvus Lite admits one process)
ENGINE_LOCK = "engine.lock"


class LockBusy(FixedCodeError):
    """Another process holds the workspace; the message names it and the way out."""

    CODE = ErrorCode.WORKSPACE_BUSY


def lock_holder(path: str | Path) -> str | None:
    """Who holds the flock on `path` (its recorded text), or None when it is free or absent."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return os.read(fd, 4096).decode("utf-8", "replace").strip() or "another process"
    finally:
        os.close(fd)
    return None


class FileLock:
    """An exclusive flock on `path` (created on demand); a context manager that waits for it."""

    def __init__(self, path: Path, mode: int = 0o644) -> None:
        self.path = path
        self.mode = mode
        self._fd: int | None = None

    @property
    def held(self) -> bool:
        """Whether this object holds the lock."""
        return self._fd is not None

    def acquire(self, blocking: bool = True) -> bool:
        """Take the lock; False when `blocking` is off and another process holds it. A lock taken on
        a file that was deleted or replaced meanwhile is dropped and taken again on the file `path`
        names."""
        while True:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, self.mode)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | (0 if blocking else fcntl.LOCK_NB))
            except BlockingIOError:
                os.close(fd)
                return False
            self._fd = fd
            if self.current():
                return True
            self.release()

    def current(self) -> bool:
        """Whether this object holds the lock on the file `path` names now (not a deleted or
        replaced one)."""
        if self._fd is None:
            return False
        try:
            now, locked = os.stat(self.path), os.fstat(self._fd)
        except OSError:
            return False
        return (now.st_dev, now.st_ino) == (locked.st_dev, locked.st_ino)

    def record(self, text: str) -> None:
        """Replace the lock file's content with `text` (who holds it), while holding it."""
        assert self._fd is not None
        os.ftruncate(self._fd, 0)
        os.pwrite(self._fd, text.encode(), 0)

    def detach(self) -> int:
        """The held lock's descriptor, handed over (to a child process) with the lock: this object
        no longer holds it."""
        assert self._fd is not None
        fd, self._fd = self._fd, None
        return fd

    def release(self) -> None:
        """Drop the lock (idempotent)."""
        if self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> FileLock:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


class WorkspaceLock:
    """The engine's lock on a workspace: waits a bounded time, records this process as the holder."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = FileLock(path)

    @property
    def held(self) -> bool:
        """Whether this process holds the lock through this object."""
        return self._lock.held

    def holder(self) -> str:
        """The recorded holder, e.g. "pid 123 (zg server run)"."""
        try:
            return self.path.read_text("utf-8").strip() or "unknown process"
        except OSError:
            return "unknown process"

    def acquire(self, timeout: float = 10.0) -> None:
        """Take the lock, waiting up to `timeout` seconds; LockBusy when still held. A lock held on
        a file deleted since (the state dir removed or re-created) is dropped and taken on the file
        there now."""
        if self._lock.current():
            return
        self._lock.release()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        deadline = time.monotonic() + timeout
        while not self._lock.acquire(blocking=False):
            if time.monotonic() >= deadline:
                raise LockBusy(
                    f"the index in {self.path.parent} is held by {self.holder()}; wait for it to finish "
                    "(if that is a zg daemon that does not answer, restart it: zg server off; zg server on)"
                )
            time.sleep(0.05)
        self._lock.record(describe(os.getpid(), [sys.argv[0] or "python", *sys.argv[1:]]))

    def release(self) -> None:
        """Drop the lock (idempotent)."""
        self._lock.release()
