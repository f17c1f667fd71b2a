"""Install, remove and inspect zgrep's git hooks; an existing hook is chained, never clobbered."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypedDict

from zgrep.adr.settings import CONVENTIONAL_DIRS
from zgrep.config import WORKSPACE_FILE, AdrSection
from zgrep.fsutil import atomic_write
from zgrep.git import head_commit, try_run
from zgrep.hooks import anchorcache, pending
from zgrep.server.runtime import HOLDER_FILE, INFO_FILE
from zgrep.workspace import MANIFEST, STATE_DIR, StateDir, WorkspaceError

HOOKS = ("post-commit", "post-merge", "post-checkout", "post-rewrite", "pre-commit")
RUNNER = "zgrep-hook"
CHAINED = ".zgrep-chained"
MARKER = b"# zgrep-hook"
SCRIPTS = Path(__file__).parent / "scripts"
RUN_PY = Path(__file__).parent / "run.py"


class HookError(RuntimeError):
    """The hooks cannot be installed or removed as asked; the message names the way out."""


@dataclass
class Outcome:
    """What install or uninstall did, hook by hook, and what it refused to do."""

    hooks_dir: Path
    done: dict[str, str] = field(default_factory=dict)
    conflicts: dict[str, str] = field(default_factory=dict)


def hooks_dir(root: Path) -> Path:
    """The effective hooks directory (core.hooksPath, worktrees and the common dir respected)."""
    out = try_run(root, "rev-parse", "--path-format=absolute", "--git-path", "hooks")
    if not out or not out.strip():
        raise HookError(f"{root} is not inside a git repository (git hooks need one)")
    return Path(os.fsdecode(out.strip()))


def is_ours(path: Path) -> bool:
    """Whether `path` is a hook script zgrep installed."""
    try:
        with path.open("rb") as fh:
            return MARKER in fh.read(512)
    except (OSError, IsADirectoryError):
        return False


def runner_text() -> str:
    """The shared runner with this interpreter, this zgrep and its state-file names baked in."""
    state = {
        name: f"{STATE_DIR}/{file}"
        for name, file in (
            ("ZG_MANIFEST", MANIFEST),
            ("ZG_QUEUE", pending.QUEUE),
            ("ZG_QUEUE_LOCK", pending.QUEUE_LOCK),
            ("ZG_WORKER_LOCK", pending.WORKER_LOCK),
            ("ZG_LOG", pending.LOG),
        )
    }
    values = {
        "ZG_PYTHON": sys.executable,
        "ZG_RUN": str(RUN_PY),
        "ZG_ADR_DIR": AdrSection.dir,
        "ZG_CONVENTIONAL_DIRS": " ".join(CONVENTIONAL_DIRS),
        "ZG_ANCHOR_KEY": anchorcache.KEY_FILE,
        "ZG_ANCHOR_LIST": anchorcache.LIST_FILE,
        "ZG_ANCHOR_VERSION": anchorcache.KEY_VERSION,
        "ZG_DAEMON_INFO": INFO_FILE,
        "ZG_DAEMON_HOLDER": f"{STATE_DIR}/{HOLDER_FILE}",
        "ZG_WORKSPACE_FILE": WORKSPACE_FILE,
        **state,
    }
    text = (SCRIPTS / RUNNER).read_text("utf-8")
    for name, value in values.items():
        text = text.replace(f"@{name}@", value)
    return text


def install(root: Path, force: bool = False) -> Outcome:
    """Install every hook; a foreign hook moves to HOOK.zgrep-chained and runs first.

    A foreign hook while a chained one already exists is a conflict: skipped unless `force`,
    which chains the current hook and drops the older chained one.
    """
    out = Outcome(hooks_dir(root))
    out.hooks_dir.mkdir(parents=True, exist_ok=True)
    for hook in HOOKS:
        target, chained = out.hooks_dir / hook, out.hooks_dir / (hook + CHAINED)
        present = target.exists() or target.is_symlink()
        if present and not is_ours(target):
            if (chained.exists() or chained.is_symlink()) and not force:
                out.conflicts[hook] = (
                    f"{target} is not zgrep's and {chained.name} already exists; "
                    "re-run with --force to chain the current hook and drop the older one"
                )
                continue
            os.replace(target, chained)
            out.done[hook] = f"installed, chaining the existing hook ({chained.name})"
        else:
            out.done[hook] = "updated" if present else "installed"
        atomic_write(target, (SCRIPTS / hook).read_text("utf-8"), mode=0o755)
    atomic_write(out.hooks_dir / RUNNER, runner_text(), mode=0o755)
    return out


def uninstall(root: Path) -> Outcome:
    """Remove zgrep's hooks and put chained hooks back exactly (same file, bytes and mode)."""
    out = Outcome(hooks_dir(root))
    for hook in HOOKS:
        target, chained = out.hooks_dir / hook, out.hooks_dir / (hook + CHAINED)
        present = target.exists() or target.is_symlink()
        has_chained = chained.exists() or chained.is_symlink()
        if present and not is_ours(target):
            if has_chained:  # someone replaced our hook while we still hold the one it chained
                out.conflicts[hook] = f"{target} is not zgrep's; left alone ({chained.name} kept)"
            continue  # a foreign hook with nothing of ours behind it (e.g. the one we restored): not ours to touch
        if present:
            target.unlink()
            out.done[hook] = "removed"
        if has_chained:
            os.replace(chained, target)
            out.done[hook] = "removed, earlier hook restored"
    runner = out.hooks_dir / RUNNER
    if is_ours(runner) and not any(is_ours(out.hooks_dir / h) for h in HOOKS):
        runner.unlink()
        out.done.setdefault(RUNNER, "removed")
    return out


def _read_manifest_commit(root: Path) -> tuple[bool, str | None]:
    try:
        manifest = StateDir(root).read_manifest()
    except WorkspaceError:
        return False, None
    return manifest is not None, (manifest or {}).get("commit")


def _last_log_line(root: Path) -> str | None:
    try:
        lines = pending.state_path(root, pending.LOG).read_text("utf-8", "replace").splitlines()
    except OSError:
        return None
    return lines[-1] if lines else None


class HookState(TypedDict):
    state: str  # installed | foreign | missing
    chained: bool  # an earlier hook of that name runs after ours


class HooksStatus(TypedDict):
    """`zg hooks status --json`."""

    root: str
    hooks_dir: str | None
    hooks: dict[str, HookState]
    installed: bool
    pre_commit_framework: bool
    indexed: bool
    indexed_commit: str | None
    head_commit: str | None
    fresh: bool
    pending: int
    worker_running: bool
    last_worker_log: str | None


def hooks_status(root: Path) -> HooksStatus:
    """Hooks installed or not, index freshness vs HEAD, pending paths, the last worker log line."""
    try:
        directory: Path | None = hooks_dir(root)
    except HookError:
        directory = None
    hooks: dict[str, HookState] = {}
    for hook in HOOKS:
        target = directory / hook if directory else None
        state = "missing"
        if target is not None and (target.exists() or target.is_symlink()):
            state = "installed" if is_ours(target) else "foreign"
        chained = bool(directory and (directory / (hook + CHAINED)).exists())
        hooks[hook] = {"state": state, "chained": chained}
    runner_ok = bool(directory and is_ours(directory / RUNNER))
    indexed, indexed_commit = _read_manifest_commit(root)
    head = head_commit(root) if directory else None
    config = root / ".pre-commit-config.yaml"
    return {
        "root": str(root),
        "hooks_dir": str(directory) if directory else None,
        "hooks": hooks,
        "installed": runner_ok and all(h["state"] == "installed" for h in hooks.values()),
        "pre_commit_framework": config.is_file()
        and "zg-index" in config.read_text("utf-8", "replace"),
        "indexed": indexed,
        "indexed_commit": indexed_commit,
        "head_commit": head,
        "fresh": indexed
        and head is not None
        and indexed_commit == head
        and pending.pending_count(root) == 0,
        "pending": pending.pending_count(root),
        "worker_running": pending.worker_running(root),
        "last_worker_log": _last_log_line(root),
    }
