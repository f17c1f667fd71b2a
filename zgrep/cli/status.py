"""`zg status` (index, daemon and hooks at a glance) and `zg doctor` (checks with their fixes)."""

from __future__ import annotations

import sys

import click

from zgrep.cli import output
from zgrep.cli.main import Common, common_options, resolve, run
from zgrep.service import STATUS
from zgrep.status import workspace_status


@click.command()
@click.argument("path", required=False)
@click.option("--root", "root_dir", default=None, help="Workspace root (same as PATH).")
@click.option("--json", "as_json", is_flag=True)
@common_options
def status(path: str | None, root_dir: str | None, as_json: bool, common: Common) -> None:
    """Show what is indexed, with which model, where, and how fresh."""
    root, cfg = resolve(path or root_dir)
    index_status, used = run(STATUS, root, cfg, {"config": common.config()}, common.mode)
    result = workspace_status(root, output.with_mode(index_status, used, lead=False))
    if as_json:
        output.write_json(result, ascii_only=True)
        sys.exit(1 if result.get("problem") else 0)
    output.write_status(result)
    sys.exit(1 if result.get("indexed") and result.get("problem") else 0)


@click.command()
@click.option("--root", "root_dir", default=None)
@click.option("--json", "as_json", is_flag=True)
def doctor(root_dir: str | None, as_json: bool) -> None:
    """Check Milvus, the model, grammars, daemon and hooks; print the fix for each failure."""
    from zgrep.doctor import run_checks  # (zg status does without it)

    root, cfg = resolve(root_dir)
    checks = run_checks(root, cfg)
    if as_json:
        output.write_json([c.__dict__ for c in checks], ascii_only=True)
    else:
        output.write_checks(checks)
    sys.exit(0 if all(c.ok for c in checks) else 1)
