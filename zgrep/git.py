"""Small git queries shared by the workspace, discovery, indexing and hooks (stdlib only).

Git runs with the hook-set GIT_DIR & co. removed, so a query from inside a git hook looks at
the repository of the directory it names, not at the one the hook belongs to.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

_GIT_REDIRECT_VARS = ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_COMMON_DIR")


def run_git(cwd: Path, *args: str) -> bytes | None:
    """stdout of `git -C cwd ARGS`, or None when git fails or is missing."""
    env = {k: v for k, v in os.environ.items() if k not in _GIT_REDIRECT_VARS}
    try:
        proc = subprocess.run(["git", "-C", str(cwd), *args], capture_output=True, env=env, check=False, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return proc.stdout if proc.returncode == 0 else None


def git_toplevel(path: Path) -> Path | None:
    """The work tree top level containing `path`, or None outside git (or without git)."""
    out = run_git(Path(path), "rev-parse", "--show-toplevel")
    return Path(os.fsdecode(out.rstrip(b"\n"))) if out else None


def is_git_repo(root: Path) -> bool:
    """True when `root` is inside a git work tree."""
    return run_git(Path(root), "rev-parse", "--is-inside-work-tree") == b"true\n"


def head_commit(root: Path) -> str | None:
    """The commit HEAD points at, or None outside git / before the first commit."""
    out = run_git(Path(root), "rev-parse", "-q", "--verify", "HEAD")
    return (out.decode().strip() or None) if out else None
