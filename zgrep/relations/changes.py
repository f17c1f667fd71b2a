"""The staged change as impact targets: `PATH:START-END` per staged hunk (stdlib + zgrep.git: thin-client safe)."""

from __future__ import annotations

from pathlib import Path

from zgrep import git


def staged_targets(root: Path) -> list[str]:
    """One target per staged hunk, on the staged side's lines (a deletion names the line it happened at;
    a deleted file names the whole file)."""
    targets: list[str] = []
    for staged in git.staged_diff(root):
        if staged.path is None:
            targets += [staged.old] if staged.old else []
            continue
        for start, count in staged.hunks:
            targets.append(f"{staged.path}:{max(start, 1)}-{max(start + count - 1, start, 1)}")
    return targets
