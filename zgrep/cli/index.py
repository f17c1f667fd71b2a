"""`zg index`: build or refresh the workspace's index (all of it, listed paths, or a revision
range)."""

from __future__ import annotations

from typing import Any, cast

import click

from zgrep.cli import output
from zgrep.cli.main import Common, common_options, fail, resolve, run
from zgrep.git import GitError, range_paths
from zgrep.contracts import Args, IndexReport
from zgrep.service import INDEX


@click.command()
@click.argument("path", required=False)
@click.option("--full", is_flag=True, help="Rebuild from scratch (cached vectors are reused).")
@click.option("--dry-run", is_flag=True, help="List what would change; write nothing.")
@click.option(
    "--paths-from",
    type=click.File("r"),
    default=None,
    help="Index only the paths listed in this file ('-' = stdin).",
)
@click.option(
    "--changed",
    "changed",
    default=None,
    metavar="A..B",
    help="Index only paths changed between two revisions.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@common_options
def index(
    path: str | None,
    full: bool,
    dry_run: bool,
    paths_from: Any,
    changed: str | None,
    as_json: bool,
    common: Common,
) -> None:
    """Build or refresh the index of the workspace (git top level, or PATH)."""
    root, cfg = resolve(path)
    args: Args = {"full": full, "dry_run": dry_run, "config": common.config()}
    if paths_from is not None and changed:
        fail("--paths-from and --changed cannot be combined")
    if full and (paths_from is not None or changed):
        fail("--full rebuilds everything; it cannot be combined with --paths-from or --changed")
    if paths_from is not None:
        args["paths"] = [line.rstrip("\n") for line in paths_from if line.strip()]
    elif changed:
        check_range(changed)
        try:
            args["paths"] = range_paths(root, changed)
        except GitError as exc:
            fail(f"--changed {changed}: {exc}")
    report, used = run(INDEX, root, cfg, args, common.mode)
    if as_json:
        output.write_json(report, used, lead=False, ascii_only=True)
    else:
        output.write_index_report(cast(IndexReport, report), dry_run)


def check_range(spec: str) -> None:
    """--changed takes A..B, A.., A...B or A...; a bare revision (A..A, nothing) or a missing A
    (everything) is refused."""
    left = spec.partition("...")[0] if "..." in spec else spec.partition("..")[0]
    if ".." not in spec or not left.strip():
        fail(f"--changed {spec}: give a revision range A..B, e.g. --changed HEAD~1..HEAD")
