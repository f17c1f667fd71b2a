"""What an installed hook does: compute the changed paths, queue them, hand them to a worker.

Run as `python -m zgrep.hooks.run HOOK [ARGS...]` (or `zg hooks run`). Light on purpose:
standard library plus zgrep.git and the pending queue (pre-commit: the ADR check, no CLI);
never raises to git, and only a real ADR violation blocks (exit BLOCKED).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from zgrep import git
from zgrep.config import ConfigError
from zgrep.hooks import pending
from zgrep.workspace import MANIFEST, STATE_DIR

# exit code when the ADR check blocks the commit (the zgrep-hook runner turns it into 1)
BLOCKED = 3
REFRESH_HOOKS = ("post-commit", "post-merge", "post-checkout", "post-rewrite")


def changed_for(root: Path, hook: str, args: list[str], stdin: str) -> list[str]:
    """The paths a hook run changed (README: "Git hooks"); empty when there is nothing to do."""
    if hook == "post-commit":
        return git.commit_paths(root, "HEAD")
    if hook == "post-merge":
        return git.changed_paths(root, "ORIG_HEAD", "HEAD")
    if hook == "post-checkout":
        if len(args) < 3 or args[2] != "1":
            return []
        return git.changed_paths(root, args[0], args[1])
    if hook == "post-rewrite":
        pairs = [(f[0], f[1]) for f in (line.split() for line in stdin.splitlines()) if len(f) >= 2]
        if pairs:
            return git.pair_paths(root, pairs)
        before = "ORIG_HEAD" if args[:1] == ["rebase"] else "HEAD@{1}"
        return git.changed_paths(root, before, "HEAD")
    raise ValueError(f"unknown hook {hook!r}")


def from_pre_commit() -> tuple[str, list[str]]:
    """The hook and its arguments, reconstructed from the pre-commit framework's environment."""
    env = os.environ
    if "PRE_COMMIT_CHECKOUT_TYPE" in env:
        return "post-checkout", [
            env.get("PRE_COMMIT_FROM_REF", ""),
            env.get("PRE_COMMIT_TO_REF", ""),
            env["PRE_COMMIT_CHECKOUT_TYPE"],
        ]
    if "PRE_COMMIT_IS_SQUASH_MERGE" in env:
        return "post-merge", [env["PRE_COMMIT_IS_SQUASH_MERGE"]]
    if "PRE_COMMIT_REWRITE_COMMAND" in env:
        return "post-rewrite", [env["PRE_COMMIT_REWRITE_COMMAND"]]
    return "post-commit", []


def spawn_worker(root: Path) -> None:
    """Start one detached background indexer (without the hook's git variables); its output goes to
    `.zgrep/hooks.log`."""
    with open(pending.state_path(root, pending.LOG), "ab") as log:
        subprocess.Popen(
            [sys.executable, "-P", "-m", "zgrep.hooks.worker", str(root)],
            cwd=root,
            env=git.environment(),
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            start_new_session=True,
        )


def refresh(root: Path, paths: list[str]) -> None:
    """Queue `paths` and make sure one background indexer runs (it uses the daemon when ready)."""
    pending.append(root, paths)
    if not pending.worker_running(root):
        spawn_worker(root)


def adr_check() -> int:
    """The pre-commit hook: the staged ADR check, without the CLI; its report shows only when it
    blocks. With a daemon running it also names the live ADRs close to the change (advisory, never
    blocking)."""
    from zgrep.adr.report import render, run_check, suggestion_lines
    from zgrep.adr.settings import load_settings
    from zgrep.hooks import anchorcache
    from zgrep.server.runtime import read_info

    # no daemon: no search, the commit stays fast
    mode = "server" if read_info() is not None else None
    settings = load_settings()
    report = run_check(settings, staged=True, paths=None, fix=False, suggest_mode=mode)
    if report.exit_code == 0:
        sys.stderr.write("".join(f"zgrep: {line}\n" for line in suggestion_lines(report)))
        try:
            # the next commit that touches no anchored path needs no Python
            anchorcache.save(settings)
        except Exception:  # a speed-up only: without it the next commit runs this check again
            pass
        return 0
    sys.stdout.write(render(report))
    return BLOCKED


def failure_line(hook: str, exc: Exception) -> str:
    """The one line a failing hook prints; it says that git goes on and what to fix."""
    why = " ".join(str(exc).split()) or type(exc).__name__
    if isinstance(exc, ImportError):
        why += f" (install zgrep with its dependencies into {sys.executable})"
    elif isinstance(exc, ConfigError):
        why += " (fix that setting; `zg config show` lists them)"
    if hook == "pre-commit":
        return f"zgrep: pre-commit hook: ADRs not checked, commit not blocked: {why}"
    return f"zgrep: {hook} hook skipped: {why}"


def run_hook(hook: str, args: list[str], stdin: str) -> int:
    """Serve one hook invocation from the worktree top level (the cwd git gives hooks)."""
    if hook == "pre-commit":
        return adr_check()
    if hook not in REFRESH_HOOKS:
        raise ValueError(f"unknown hook {hook!r}")
    root = Path.cwd()
    if not (root / STATE_DIR / MANIFEST).is_file():
        return 0  # not indexed: nothing to keep fresh (`zg hooks status` says so)
    paths = changed_for(root, hook, args, stdin)
    if paths:
        refresh(root, paths)
    return 0


def main(argv: list[str] | None = None) -> int:
    """Entry point; one short line on stderr on failure and exit 0 (only the ADR check blocks:
    BLOCKED)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    framework = argv[:1] == ["--from-pre-commit"]
    hook, args = from_pre_commit() if framework else (argv[0] if argv else "?", argv[1:])
    stdin = (
        sys.stdin.read()
        if hook == "post-rewrite" and not framework and not sys.stdin.isatty()
        else ""
    )
    try:
        return run_hook(hook, args, stdin)
    except Exception as exc:  # a hook must never break git
        print(failure_line(hook, exc), file=sys.stderr)
        return 0


if __name__ == "__main__":
    sys.exit(main())
