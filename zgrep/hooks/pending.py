"""The pending-path queue under `.zgrep/` that hooks append to and one worker drains.

Standard library only: git hooks import this on their fast path.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from zgrep.locking import FileLock
from zgrep.workspace import STATE_DIR

QUEUE = "hooks-pending"
WORK = "hooks-pending.work"
QUEUE_LOCK = "hooks-pending.lock"
WORKER_LOCK = "hooks-worker.lock"
LOG = "hooks.log"
LOG_MAX_BYTES = 256 * 1024


def state_path(root: Path, name: str) -> Path:
    """A file in the workspace's state directory."""
    return root / STATE_DIR / name


def _read_lines(path: Path) -> list[str]:
    try:
        return [line for line in path.read_text("utf-8", "surrogateescape").split("\n") if line]
    except FileNotFoundError:
        return []


def append(root: Path, paths: list[str]) -> None:
    """Add `paths` to the queue (O_APPEND under the queue lock)."""
    if not paths:
        return
    data = "".join(f"{p}\n" for p in paths if "\n" not in p).encode("utf-8", "surrogateescape")
    with FileLock(state_path(root, QUEUE_LOCK)):
        fd = os.open(state_path(root, QUEUE), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, data)
        finally:
            os.close(fd)


def take(root: Path) -> list[str]:
    """Move the queue into the work file and return every path in it (sorted, unique).

    The work file survives a worker that dies; `done` removes it after a successful pass.
    """
    with FileLock(state_path(root, QUEUE_LOCK)):
        queued = state_path(root, QUEUE)
        if queued.exists():
            work = state_path(root, WORK)
            fd = os.open(work, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                os.write(fd, queued.read_bytes())
            finally:
                os.close(fd)
            queued.unlink()
    return sorted(set(_read_lines(state_path(root, WORK))))


def done(root: Path) -> None:
    """Forget the paths of the last `take` (they are indexed)."""
    state_path(root, WORK).unlink(missing_ok=True)


def has_queued(root: Path) -> bool:
    """Whether paths arrived since the last `take`."""
    return state_path(root, QUEUE).exists()


def pending_count(root: Path) -> int:
    """How many distinct paths wait to be indexed (queued or in an unfinished pass)."""
    return len(set(_read_lines(state_path(root, QUEUE))) | set(_read_lines(state_path(root, WORK))))


def worker_running(root: Path) -> bool:
    """Whether a background indexer holds the worker lock."""
    if not state_path(root, WORKER_LOCK).exists():
        return False
    lock = FileLock(state_path(root, WORKER_LOCK))
    if lock.acquire(blocking=False):
        lock.release()
        return False
    return True


def log(root: Path, message: str) -> None:
    """Append a timestamped line to `.zgrep/hooks.log`, keeping it short."""
    path = state_path(root, LOG)
    try:
        if path.stat().st_size > LOG_MAX_BYTES:
            tail = path.read_bytes()[-LOG_MAX_BYTES // 2 :]
            path.write_bytes(tail[tail.find(b"\n") + 1 :])
    except FileNotFoundError:
        pass
    with path.open("a", encoding="utf-8") as fh:
        fh.write(f"{time.strftime('%Y-%m-%dT%H:%M:%S')} {message}\n")
