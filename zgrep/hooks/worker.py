"""The background indexer a hook spawns: drains the pending queue until it is empty.

Run as `python -m zgrep.hooks.worker ROOT`; one at a time per workspace (the worker lock).
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

from zgrep.hooks import pending
from zgrep.locking import FileLock
from zgrep.workspace import MANIFEST, STATE_DIR

BUSY_RETRIES = 5
QUIET_S = 0.75  # a pass starts once no hook has queued anything for this long ...
SETTLE_MAX_S = 4.0  # ... or after this long, so a steady stream of commits still gets indexed
LINGER_S = 1.0  # after a pass, wait this long for more work before exiting


def settle(root: Path, linger: float) -> None:
    """Wait up to `linger` for queued paths, then until the queue is quiet (bounded)."""
    queue = pending.state_path(root, pending.QUEUE)
    start = time.monotonic()
    while True:
        waited = time.monotonic() - start
        try:
            age = time.time() - os.stat(queue).st_mtime
        except FileNotFoundError:
            if waited >= linger:
                return
            time.sleep(0.05)
            continue
        if age >= QUIET_S or waited >= SETTLE_MAX_S:
            return
        time.sleep(min(QUIET_S - age, 0.1) + 0.01)


def index_pass(root: Path, paths: list[str]) -> bool:
    """Index `paths` once (daemon when ready, else in-process); log the pass; False on failure."""
    from zgrep.server.client import ClientError, call
    from zgrep.service import INDEX, ErrorCode

    for attempt in range(BUSY_RETRIES):
        start = time.monotonic()
        try:
            report, used = call(INDEX.name, str(root), {"paths": paths}, "auto")
        except ClientError as exc:
            if exc.code == ErrorCode.WORKSPACE_BUSY and attempt + 1 < BUSY_RETRIES:
                time.sleep(1.0 + attempt)
                continue
            pending.log(root, f"index pass failed ({len(paths)} paths kept pending): {exc}")
            return False
        pending.log(
            root,
            f"index pass: {len(paths)} paths, {report.get('changed', 0)} changed, "
            f"{report.get('deleted', 0)} removed, {time.monotonic() - start:.2f}s via {used}",
        )
        return True
    return False


def drain(root: Path) -> bool:
    """Index queued paths pass after pass until the queue is empty; False if a pass failed."""
    linger = 0.0
    while True:
        settle(root, linger)
        paths = pending.take(root)
        if not paths:
            return True
        if not (root / STATE_DIR / MANIFEST).is_file():
            pending.log(root, "not indexed: queued paths wait for `zg index`")
            return False
        if not index_pass(root, paths):
            return False
        pending.done(root)
        linger = LINGER_S


def run(root: Path) -> int:
    """Hold the worker lock while draining; re-check the queue after letting go of it."""
    lock = FileLock(pending.state_path(root, pending.WORKER_LOCK))
    while lock.acquire(blocking=False):
        try:
            ok = drain(root)
        finally:
            lock.release()
        if not ok or not pending.has_queued(root):
            break
    return 0


if __name__ == "__main__":
    sys.exit(run(Path(sys.argv[1])))
