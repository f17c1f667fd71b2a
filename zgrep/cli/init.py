"""`zg init`: write (or with --remove, take out) the project's agent configuration for `zg mcp`."""

from __future__ import annotations

import click

from zgrep.agentconfig import (
    CLIENTS,
    InitError,
    apply,
    load_record,
    plan_init,
    plan_remove,
    targets,
    zg_command,
)
from zgrep.cli.main import fail, resolve


@click.command()
@click.option(
    "--client",
    "clients",
    multiple=True,
    type=click.Choice(sorted(CLIENTS)),
    help="Only this agent's config (repeatable): claude (.mcp.json), vscode (.vscode/mcp.json), "
    "cursor (.cursor/mcp.json). Default: all three.",
)
@click.option("--no-instructions", is_flag=True, help="Leave AGENTS.md alone.")
@click.option("--dry-run", is_flag=True, help="Print the diff of what would change; write nothing.")
@click.option("--remove", is_flag=True, help="Take out exactly what zg init wrote.")
@click.option(
    "--root",
    "root_dir",
    default=None,
    help="Workspace root (default: the git top level of the cwd).",
)
def init(
    clients: tuple[str, ...],
    no_instructions: bool,
    dry_run: bool,
    remove: bool,
    root_dir: str | None,
) -> None:
    """Register `zg mcp` with coding agents (merging into existing configs, never clobbering) and
    add a zgrep section to AGENTS.md. Run it again: nothing changes. `--remove` undoes it."""
    root, _ = resolve(root_dir)
    files = targets(list(clients) or sorted(CLIENTS), not no_instructions)
    try:
        changes = plan_remove(root, files, load_record(root)) if remove else plan_init(root, files)
    except InitError as exc:
        fail(str(exc))
    for change in changes:
        if change.note:
            click.echo(f"zg: note: {change.note}", err=True)
    if dry_run:
        click.echo("".join(change.diff() for change in changes), nl=False)
        return
    apply(root, changes, remove)
    for change in changes:
        verb = (
            ("deleted" if change.after is None else "restored" if remove else "wrote")
            if change.changed
            else "unchanged"
        )
        click.echo(f"{verb:<9} {change.rel}")
    command = zg_command()
    if not remove and command != "zg":
        click.echo(
            f"zg: note: `zg` is not on PATH here, so the entries start {command}: a path of this machine "
            "(put zg on PATH and run zg init again before committing them)",
            err=True,
        )
