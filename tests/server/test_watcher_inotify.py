"""The daemon's watcher on kernel notifications: edits reported by workspace-relative path; the state
dir, ignored trees and anything reached through a symlink never; new directories watched at once."""

from __future__ import annotations

import os
import queue
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from zgrep.server.watcher import Watcher

DEADLINE_S = 30


@pytest.fixture
def watched(tmp_path: Path) -> Iterator[tuple[Path, Path, queue.Queue]]:
    """A workspace with a file, a package, a link to a directory outside, and a running Watcher."""
    root, outside = tmp_path / "ws", tmp_path / "outside"
    (root / "pkg").mkdir(parents=True)
    (root / ".git").mkdir()
    outside.mkdir()
    (outside / "secret.py").write_text("token = 1\n")
    (root / "a.py").write_text("a = 1\n")
    (root / "pkg" / "b.py").write_text("b = 1\n")
    os.symlink(outside, root / "outlink")
    reports: queue.Queue = queue.Queue()
    watcher = Watcher(root, False, reports.put)
    watcher.start()
    try:
        deadline = time.monotonic() + DEADLINE_S
        while (
            watcher.backend == "" and time.monotonic() < deadline
        ):  # the walk is done once a backend is chosen
            time.sleep(0.02)
        assert watcher.backend == "inotify"
        yield root, outside, reports
    finally:
        watcher.stop()
        watcher.join(DEADLINE_S)


def reports_until(reports: queue.Queue, wanted: list[str] | None) -> list[list[str] | None]:
    """Every report up to and including `wanted` (a sorted path list, or None)."""
    seen: list[list[str] | None] = []
    deadline = time.monotonic() + DEADLINE_S
    while not seen or seen[-1] != wanted:
        seen.append(reports.get(timeout=max(deadline - time.monotonic(), 0.01)))
    return seen


def test_edits_are_reported_but_never_the_state_dir_git_or_paths_through_a_link(watched) -> None:
    root, outside, reports = watched
    (root / ".zgrep").mkdir()
    (root / ".zgrep" / "files.json").write_text("{}")
    (root / ".git" / "index").write_text("x")
    (root / "outlink" / "secret.py").write_text(
        "token = 2\n"
    )  # writes the file outside, through the link
    (outside / "new.py").write_text("x = 1\n")
    (root / "a.py").write_text("a = 2\n")
    seen = reports_until(reports, ["a.py"])
    assert all(r is not None for r in seen), seen
    assert not [p for r in seen for p in r or [] if p.startswith((".zgrep", ".git", "outlink/"))], (
        seen
    )
    (root / "pkg" / "b.py").unlink()
    assert reports_until(reports, ["pkg/b.py"]) == [["pkg/b.py"]]


def test_a_new_directory_or_ignore_file_reports_everything_and_is_followed(watched) -> None:
    root, _, reports = watched
    (root / "newpkg").mkdir()
    (root / "newpkg" / "c.py").write_text("c = 1\n")
    reports_until(reports, None)
    (root / "newpkg" / "c.py").write_text("c = 2\n")  # the new directory is watched now
    assert reports_until(reports, ["newpkg/c.py"]) == [["newpkg/c.py"]]
    (root / ".gitignore").write_text("*.log\n")
    reports_until(reports, None)
    (root / "debug.log").write_text("noise\n")
    (root / "pkg" / "b.py").write_text("b = 2\n")
    assert reports_until(reports, ["pkg/b.py"]) == [["pkg/b.py"]]
    os.rename(root / "pkg", root / "pkg2")  # a watched directory moves: its files are listed again
    reports_until(reports, None)
    (root / "pkg2" / "b.py").write_text("b = 3\n")
    assert reports_until(reports, ["pkg2/b.py"]) == [["pkg2/b.py"]]
