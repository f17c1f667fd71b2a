"""`zg mcp`: serve the workspace's tools to an agent over stdio (Model Context Protocol)."""

from __future__ import annotations

import click

from zgrep.cli.main import resolve


@click.command()
@click.option(
    "--root",
    "root_dir",
    default=None,
    help="Workspace root (default: the git top level of the cwd).",
)
def mcp(root_dir: str | None) -> None:
    """Run an MCP server on stdin/stdout (agents start it; see `zg init`). Tools: search, read,
    read_hit, status, index, callers, trace, impact, adr_constraints, adr_search, adr_check."""
    root, cfg = resolve(root_dir)
    from zgrep.frontends.api import Workspace
    from zgrep.frontends.mcp_server import build_server

    build_server(Workspace(root, cfg, "mcp")).run("stdio")
