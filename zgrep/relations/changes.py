"""The staged change as impact targets: `PATH:START-END` per staged hunk (stdlib + zgrep.git:
thin-client safe)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from zgrep import git
from zgrep.service import ErrorCode, ZgError


def staged_targets(root: Path) -> list[str]:
    """One target per staged hunk, on the staged side's lines (a deletion names the line it happened
    at; a deleted file names the whole file)."""
    targets: list[str] = []
    for staged in git.staged_diff(root):
        if staged.path is None:
            targets += [staged.old] if staged.old else []
            continue
        for start, count in staged.hunks:
            targets.append(f"{staged.path}:{max(start, 1)}-{max(start + count - 1, start, 1)}")
    return targets


def with_staged_targets(root: Path, args: dict[str, Any]) -> dict[str, Any]:
    """`impact`'s arguments from a front end: with `staged`, the staged hunks' targets added to
    `targets` (`frontends.api` runs it, as `zg impact --staged` does); ZgError(BAD_REQUEST) outside
    a git repository."""
    if not args.get("staged"):
        return args
    try:
        return {**args, "targets": list(args.get("targets") or []) + staged_targets(root)}
    except git.GitError as exc:
        raise ZgError(ErrorCode.BAD_REQUEST, f"--staged needs a git repository: {exc}") from None
