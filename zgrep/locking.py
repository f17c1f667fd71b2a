"""An advisory per-workspace lock naming its holder (Milvus Lite admits one process)."""

from __future__ import annotations

import fcntl
import os
import sys
import time
from pathlib import Path

ENGINE_LOCK = "engine.lock"  # per-workspace lock file inside the state dir


class LockBusy(RuntimeError):
    """Another process holds the workspace; the message names it and the way out."""


def lock_holder(path: Path) -> str | None:
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


class WorkspaceLock:
    """flock on a file that records the holder's pid and command."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd: int | None = None

    def holder(self) -> str:
        """The recorded holder, e.g. "pid 123 (zg server run)"."""
        try:
            return self.path.read_text("utf-8").strip() or "unknown process"
        except OSError:
            return "unknown process"

    def acquire(self, timeout: float = 10.0) -> None:
        """Take the lock, waiting up to `timeout` seconds; LockBusy when still held."""
        if self._fd is not None:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        deadline = time.monotonic() + timeout
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    os.close(fd)
                    raise LockBusy(
                        f"the index in {self.path.parent} is held by {self.holder()}; wait for it to finish "
                        "(if that is a zg daemon that does not answer, restart it: zg server off; zg server on)"
                    ) from None
                time.sleep(0.05)
        os.ftruncate(fd, 0)
        command = " ".join([os.path.basename(sys.argv[0] or "python"), *sys.argv[1:3]])
        os.write(fd, f"pid {os.getpid()} ({command})".encode())
        self._fd = fd

    def release(self) -> None:
        """Drop the lock (idempotent)."""
        if self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None
