"""The daemon's file watcher: kernel notifications (inotify, through watchfiles) on a workspace's
admitted directories, debounced; stat polling only where the kernel offers no inotify.

Every admitted directory reached without following a symlink gets its own non-recursive watch, so
ignored trees (.git, node_modules, the .zgrep state dir) cost nothing and nothing outside the
workspace is watched or reported. When a directory appears, goes or is replaced, the tree is walked
again (the new watches are in place before the report) and the report is None.
"""

from __future__ import annotations

import logging
import os
import stat
import threading
from collections.abc import Callable
from pathlib import Path

from watchfiles._rust_notify import RustNotify  # watchfiles' documented "Rust backend direct usage"

from zgrep.index.discovery import walk_dirs
from zgrep.index.ignore import IGNORE_FILE_NAMES, IgnoreRules
from zgrep.workspace import STATE_DIR

log = logging.getLogger("zgrep.server.watcher")

DEBOUNCE_MS = 400  # report once no new change arrived for this long
MAX_DELAY_MS = 5_000  # ... or this long after the first change, under a steady stream of them
POLL_MS = 1_000  # the polling fallback's interval
OPEN_ATTEMPTS = 3  # a directory may vanish between the walk and its watch: walk again
MODIFIED = 2  # watchfiles.Change.modified


class Watcher(threading.Thread):
    """Calls `on_change(paths)` with changed workspace-relative paths, or None when an ignore file
    or the directory tree changed (then everything may be in or out)."""

    def __init__(
        self, root: Path, include_hidden: bool, on_change: Callable[[list[str] | None], None]
    ) -> None:
        super().__init__(name=f"watch {root.name}", daemon=True)
        self.root = root
        self.include_hidden = include_hidden
        self.on_change = on_change
        self.backend = ""  # "inotify" or "polling" once watching
        self._stopping = threading.Event()
        self._rules = self._load_rules()
        self._dirs: set[str] = set()

    def _load_rules(self) -> IgnoreRules:
        return IgnoreRules.for_root(self.root, include_hidden=self.include_hidden)

    def stop(self) -> None:
        self._stopping.set()

    def directories(self) -> set[str]:
        """Every admitted directory ("" is the root) the index's walk enters
        (`discovery.walk_dirs`)."""
        return {rel_dir for rel_dir, _ in walk_dirs(self.root, self._rules)}

    def _open(self) -> RustNotify:
        """Walk the tree and watch each admitted directory."""
        attempt = 1
        while True:
            self._dirs = self.directories()
            try:
                return self._notify([str(self.root / rel) for rel in sorted(self._dirs)])
            except (FileNotFoundError, PermissionError):
                if attempt == OPEN_ATTEMPTS:
                    raise
                attempt += 1

    def _notify(self, paths: list[str]) -> RustNotify:
        """Non-recursive watches on `paths`: inotify, else (saying so in the log) polling."""
        if self.backend != "polling":
            notify: RustNotify | None = None
            try:
                notify = RustNotify(paths, False, False, POLL_MS, False, False)
                # watchfiles polls by itself when the kernel lacks inotify
                if "PollWatcher" not in repr(notify):
                    self.backend = "inotify"
                    return notify
                reason = "the kernel offers no inotify"
            except (FileNotFoundError, PermissionError):
                raise
            except (
                OSError,
                RuntimeError,
            ) as exc:  # ENOSPC: raise fs.inotify.max_user_watches; EMFILE: max_user_instances
                reason = f"inotify failed ({exc})"
            log.warning(
                "watcher: %s; polling %s every %gs instead", reason, self.root, POLL_MS / 1000
            )
            self.backend = "polling"
            if notify is not None:
                return notify
        return RustNotify(paths, False, True, POLL_MS, False, False)

    def changes(self, raw: set[tuple[int, str]]) -> set[str] | None:
        """The admitted file paths among watchfiles' `raw` changes; None when an ignore file or a
        directory changed."""
        prefix = f"{self.root}{os.sep}"
        paths = set()
        for change, path in raw:
            rel = path[len(prefix) :] if path.startswith(prefix) else ""
            parent, _, name = rel.rpartition("/")
            if not rel or parent not in self._dirs or rel == STATE_DIR:
                continue  # the root itself, or nothing this walk put a watch on
            try:
                mode = os.lstat(path).st_mode
            except OSError:
                mode = 0
            if stat.S_ISDIR(mode):
                if change != MODIFIED and (
                    rel in self._dirs or self._rules.admits(rel, is_dir=True)
                ):
                    return (
                        None  # a directory came (or went and came back): its files need a listing
                    )
            elif name in IGNORE_FILE_NAMES or rel in self._dirs:
                return None  # the rules changed, or a watched directory went away or became a file or link
            elif self._rules.admits(rel):
                paths.add(rel)
        return paths

    def run(self) -> None:
        try:
            notify = self._open()
        except Exception:  # a bug or a vanishing root must not take the daemon down
            log.exception(
                "cannot watch %s; searches there refresh the index before answering", self.root
            )
            return
        log.info("watching %s with %s (%d directories)", self.root, self.backend, len(self._dirs))
        try:
            while True:
                raw = notify.watch(MAX_DELAY_MS, DEBOUNCE_MS, 0, self._stopping)
                if not isinstance(raw, set) or self._stopping.is_set():
                    return
                changed = self.changes(raw)
                if changed is None:
                    self._rules = self._load_rules()
                    # the new watches first, so nothing changed meanwhile escapes both
                    fresh = self._open()
                    notify.close()
                    notify = fresh
                    self.on_change(None)
                elif changed:
                    self.on_change(sorted(changed))
        except Exception:
            log.exception(
                "the watcher of %s stopped; searches there refresh the index before answering",
                self.root,
            )
        finally:
            notify.close()
