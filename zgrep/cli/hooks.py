"""`zg hooks install|uninstall|status` (and the hidden `run` the hook scripts call)."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from zgrep.cli import output
from zgrep.cli.main import fail
from zgrep.git import git_toplevel
from zgrep.hooks.install import HOOKS, HookError, Outcome, hooks_status, install, uninstall
from zgrep.hooks.run import main as run_hook


def _root(path: str | None) -> Path:
    """The git work-tree top level of PATH (default: the cwd); exit 2 outside git."""
    base = Path(path or ".").resolve()
    top = git_toplevel(base)
    if top is None:
        fail(f"{base} is not inside a git repository (git hooks need one)")
    return top


def _report(outcome: Outcome) -> None:
    """What was done on stdout, each refused hook on stderr; a refusal is an error (exit 2)."""
    click.echo(f"hooks directory: {outcome.hooks_dir}")
    for hook, what in outcome.done.items():
        click.echo(f"  {hook}: {what}")
    for hook, why in outcome.conflicts.items():
        click.echo(f"zg: {hook}: {why}", err=True)
    if outcome.conflicts:
        sys.exit(2)


@click.group()
def hooks() -> None:
    """Install, remove or inspect the git hooks that keep the index fresh."""


@hooks.command("install")
@click.argument("path", required=False)
@click.option(
    "--force",
    is_flag=True,
    help="Chain a hook even when an older chained hook is in the way (drops that one).",
)
def install_cmd(path: str | None, force: bool) -> None:
    """Install post-commit, post-merge, post-checkout, post-rewrite and pre-commit hooks."""
    try:
        _report(install(_root(path), force=force))
    except (HookError, OSError) as exc:
        fail(str(exc))


@hooks.command("uninstall")
@click.argument("path", required=False)
def uninstall_cmd(path: str | None) -> None:
    """Remove zgrep's hooks and restore the hooks they chained."""
    try:
        outcome = uninstall(_root(path))
        if not outcome.done and not outcome.conflicts:
            click.echo(f"no zgrep hooks installed in {outcome.hooks_dir}; nothing to do")
            return
        _report(outcome)
    except (HookError, OSError) as exc:
        fail(str(exc))


@hooks.command("status")
@click.argument("path", required=False)
@click.option("--json", "as_json", is_flag=True)
def status_cmd(path: str | None, as_json: bool) -> None:
    """Which hooks are installed, how fresh the index is vs HEAD, what waits to be indexed."""
    st = hooks_status(_root(path))
    if as_json:
        output.write_json(st, ascii_only=True)
    else:
        output.write_hooks_status(st, HOOKS)


@hooks.command("run", hidden=True, context_settings={"ignore_unknown_options": True})
@click.option(
    "--from-pre-commit", is_flag=True, help="Called by the pre-commit framework (zg-index)."
)
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
def run_cmd(from_pre_commit: bool, args: tuple[str, ...]) -> None:
    """Run one hook (the installed scripts and the pre-commit framework call this)."""
    sys.exit(run_hook(["--from-pre-commit"] if from_pre_commit else list(args)))
