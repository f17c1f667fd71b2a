"""The watcher's stat-polling fallback (used where inotify fails: no kernel support, ENOSPC, EMFILE): the same
reports as the kernel backend. The failure itself is not provoked here: exhausting the user's inotify instances
would starve every other test and daemon running beside this one, so the test starts the watcher the way
`Watcher._notify` leaves it after a failure (backend "polling") and drives a real polling watch."""

from __future__ import annotations

import queue
import time
from pathlib import Path

from test_watcher_inotify import DEADLINE_S, reports_until
from zgrep.server.watcher import Watcher


def test_the_polling_fallback_reports_edits_deletions_and_new_directories(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    (root / "pkg").mkdir(parents=True)
    (root / ".git").mkdir()
    (root / "a.py").write_text("a = 1\n")
    (root / "pkg" / "b.py").write_text("b = 1\n")
    reports: queue.Queue = queue.Queue()
    watcher = Watcher(root, False, reports.put)
    watcher.backend = "polling"
    watcher.start()
    try:
        deadline, edit = time.monotonic() + DEADLINE_S, 2
        while True:  # the first poll only takes stock: edit until an edit is seen
            (root / "a.py").write_text(f"a = {edit}\n")
            edit += 1
            try:
                first = reports.get(timeout=2)
                break
            except queue.Empty:
                assert time.monotonic() < deadline, "no edit reported while polling"
        assert first == ["a.py"]
        (root / ".git" / "index").write_text("x")
        (root / "pkg" / "b.py").unlink()
        seen = reports_until(reports, ["pkg/b.py"])
        assert not [p for r in seen for p in r or [] if p.startswith(".git")], seen
        (root / "newpkg").mkdir()
        (root / "newpkg" / "c.py").write_text("c = 1\n")
        reports_until(reports, None)
        # the new directory is polled now; its new watch, too, first takes stock (after the rescan
        # report, on the watcher's thread): edit until an edit is seen
        deadline, seen = time.monotonic() + DEADLINE_S, []
        while ["newpkg/c.py"] not in seen:
            (root / "newpkg" / "c.py").write_text(f"c = {edit}\n")
            edit += 1
            try:
                seen.append(reports.get(timeout=2))
            except queue.Empty:
                assert time.monotonic() < deadline, "no edit in the new directory reported"
        assert all(r in (None, ["newpkg/c.py"]) for r in seen), seen
        assert watcher.backend == "polling"
    finally:
        watcher.stop()
        watcher.join(DEADLINE_S)
    assert not watcher.is_alive()
