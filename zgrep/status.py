"""A workspace's status: the index's own report (the `status` op) with the daemon's and the git
hooks' state."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, TypedDict, cast

from zgrep.contracts import Status
from zgrep.git import git_toplevel
from zgrep.hooks.install import hooks_status
from zgrep.server.client import daemon_state
from zgrep.server.runtime import following

if TYPE_CHECKING:
    from zgrep.server.client import DaemonState


class HooksSummary(TypedDict):
    """What `zg status` says of the git hooks."""

    installed: bool
    pending: int
    worker_running: bool


class WorkspaceStatus(Status, total=False):
    """`zg status --json`: the index's status, the mode that answered, the daemon's and the hooks'
    state."""

    mode: str
    daemon: DaemonState
    hooks: HooksSummary | None  # None outside a git work tree


def workspace_status(root: Path, index_status: Mapping[str, object]) -> WorkspaceStatus:
    """`index_status` with `daemon` (running, pid, ...: the one holding `root`, whatever runtime dir
    this environment names) and `hooks` (None outside a git work tree) added."""
    with following(root):
        daemon = daemon_state()
    hooks = hooks_status(root) if git_toplevel(root) else None
    summary: HooksSummary | None = (
        None
        if not hooks
        else {
            "installed": hooks["installed"],
            "pending": hooks["pending"],
            "worker_running": hooks["worker_running"],
        }
    )
    return cast(WorkspaceStatus, {**index_status, "daemon": daemon, "hooks": summary})
