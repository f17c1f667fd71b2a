"""A polling file watcher: stat-walks a workspace (ignore rules applied) and reports
changed paths once they have been quiet for a short debounce interval."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path
from collections.abc import Callable

from zgrep.fsutil import stat_signature
from zgrep.index.ignore import IGNORE_FILE_NAMES, IgnoreRules

POLL_S = 0.5
DEBOUNCE_S = 0.4
SCAN_COST_FACTOR = 10  # poll no more often than 10x the time a scan takes

Snapshot = dict[str, tuple[int, int]]


def diff(old: Snapshot, new: Snapshot) -> set[str]:
    """Paths added, removed or changed (mtime or size) between two snapshots."""
    changed = {p for p, sig in new.items() if old.get(p) != sig}
    return changed | (old.keys() - new.keys())


class Watcher(threading.Thread):
    """Calls `on_change(paths)` with changed workspace-relative paths, or None when an
    ignore file changed (then everything may be in or out)."""

    def __init__(self, root: Path, include_hidden: bool, on_change: Callable[[list[str] | None], None]) -> None:
        super().__init__(name=f"watch {root.name}", daemon=True)
        self.root = root
        self.include_hidden = include_hidden
        self.on_change = on_change
        self._stop = threading.Event()
        self._rules = self._load_rules()

    def _load_rules(self) -> IgnoreRules:
        return IgnoreRules.for_root(self.root, include_hidden=self.include_hidden)

    def stop(self) -> None:
        self._stop.set()

    def scan(self) -> Snapshot:
        """The stat signature of every admitted file and of every ignore file."""
        out: Snapshot = {}
        stack = [""]
        while stack:
            rel_dir = stack.pop()
            try:
                entries = list(os.scandir(self.root / rel_dir if rel_dir else self.root))
            except OSError:
                continue
            for entry in entries:
                rel = f"{rel_dir}/{entry.name}" if rel_dir else entry.name
                try:
                    if entry.is_dir(follow_symlinks=False):
                        if self._rules.admits(rel, is_dir=True):
                            stack.append(rel)
                        continue
                    if entry.name in IGNORE_FILE_NAMES or self._rules.admits(rel):
                        st = entry.stat(follow_symlinks=False)
                        out[rel] = stat_signature(st)
                except OSError:
                    continue
        return out

    def run(self) -> None:
        snapshot = self.scan()
        interval = POLL_S
        while not self._stop.wait(interval):
            started = time.monotonic()
            current = self.scan()
            interval = max(POLL_S, (time.monotonic() - started) * SCAN_COST_FACTOR)
            changed = diff(snapshot, current)
            while changed and not self._stop.wait(DEBOUNCE_S):
                newer = self.scan()
                more = diff(current, newer)
                current = newer
                if not more:
                    break
                changed |= more
            snapshot = current
            if not changed or self._stop.is_set():
                continue
            if any(p.rsplit("/", 1)[-1] in IGNORE_FILE_NAMES for p in changed):
                self._rules = self._load_rules()
                snapshot = self.scan()
                self.on_change(None)
            else:
                self.on_change(sorted(changed))
