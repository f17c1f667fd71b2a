"""`zg serve`: the workspace's search, read, status, relations and ADR constraints as a local HTTP
JSON API."""

from __future__ import annotations

import os

import click

from zgrep.cli.main import fail, resolve
from zgrep.server.runtime import is_loopback
from zgrep.server import runtime

TOKEN_ENV = "ZG_SERVE_TOKEN"
TOKEN_FILE = "serve.token"


def _token() -> str:
    """$ZG_SERVE_TOKEN, else a fresh one written to a 0600 file in the runtime dir (never argv,
    never logged)."""
    return os.environ.get(TOKEN_ENV) or runtime.new_token(TOKEN_FILE)


@click.command()
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=7700,
    show_default=True,
    help="0 picks a free port.",
)
@click.option(
    "--allow-non-loopback",
    is_flag=True,
    help="Listen on a non-loopback address. RISK: other machines can reach it; each request must then "
    f"carry Authorization: Bearer TOKEN (${TOKEN_ENV}, or the file named at start-up).",
)
@click.option(
    "--root",
    "root_dir",
    default=None,
    help="Workspace root (default: the git top level of the cwd).",
)
def serve(host: str, port: int, allow_non_loopback: bool, root_dir: str | None) -> None:
    """A local HTTP JSON API of the workspace: GET /search?q=..., /read?path=&start=&end=, /status,
    /callers?symbol=, /trace?entry=, /impact?targets=, /adr/constraints?path=, /adr/search?q=,
    /adr/check answer what `--json` prints, through the daemon when it runs. Ctrl-C stops it."""
    root, cfg = resolve(root_dir)
    loopback = is_loopback(host)
    if not loopback and not allow_non_loopback:
        fail(
            f"{host} is not a loopback address: other machines could reach this API and read your code; "
            "use --host 127.0.0.1, or pass --allow-non-loopback (requests then need a token)"
        )
    from zgrep.frontends.api import Workspace
    from zgrep.frontends.http_api import make_server

    token = None if loopback else _token()
    try:
        httpd = make_server(Workspace(root, cfg, "http"), host, port, token)
    except OSError as exc:
        fail(f"cannot listen on {host}:{port}: {exc.strerror}")
    bound = httpd.server_address[1]
    where = f"[{host}]" if ":" in host else host
    note = (
        ""
        if token is None
        else (
            f"; token from ${TOKEN_ENV}"
            if os.environ.get(TOKEN_ENV)
            else f"; token in {runtime.runtime_dir() / TOKEN_FILE}"
        )
    )
    click.echo(f"zg serve: http://{where}:{bound}/ for {root}{note}", err=True)
    try:
        httpd.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        httpd.server_close()
