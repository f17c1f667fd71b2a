"""The `zg` entry point: `zg server status`, which only the daemon answers, runs here without click
(about 30 ms of every command); anything else, including help, flags this does not know and bad
values, goes to the click CLI (`zgrep.cli.main`) unchanged, which gives its own output and exit
codes.

Standard library, the client and the output module only. The click command `zg server status` runs
the same `server_status`."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Literal, TypedDict, cast

from zgrep.cli.exits import fail, shell_exits
from zgrep.cli.output import echo, write_json, write_server_status
from zgrep.server import client

if TYPE_CHECKING:
    from zgrep.contracts import JSONObject, ServerStatus

FLAGS: dict[str, Literal["as_json", "check_ready"]] = {
    "--json": "as_json",
    "--check-ready": "check_ready",
}
TIMEOUT_MS = 500  # `--timeout-ms` by default


class StatusOptions(TypedDict):
    """`server_status`'s arguments, as `zg server status`'s flags give them."""

    as_json: bool
    check_ready: bool
    timeout_ms: int


def server_status(as_json: bool, check_ready: bool, timeout_ms: int) -> None:
    """`zg server status`: the daemon's pid, endpoint, uptime, workspaces, models, jobs and memory;
    exit 1 when none answers (`check_ready`: print nothing, exit 0 when ready)."""
    if check_ready:
        sys.exit(0 if client.probe(timeout_ms) is not None else 1)
    # one exchange: the status request is the readiness probe
    reply = client.ask_server_status(timeout_ms)
    if reply is None:
        state = client.daemon_state(timeout_ms)
        if as_json:
            write_json(state, ascii_only=True)
        elif not state["running"]:
            echo("zg daemon: not running")
        else:
            why = " (its process is stopped)" if state["stopped"] else ""
            echo(
                f"zg daemon: running (pid {state['pid']}) but not answering{why}; {client.RESTART}"
            )
        sys.exit(1)
    if not reply["ok"]:
        fail(reply["error"]["message"])
    result: JSONObject = {"running": True, "ready": True, **reply["result"]}
    if as_json:
        write_json(result, ascii_only=True)
    else:
        write_server_status(cast("ServerStatus", result))


def server_status_options(args: list[str]) -> StatusOptions | None:
    """`zg server status`'s options as the click command would read them, or None for anything this
    does not parse exactly as click does (the click CLI then answers, errors and help included)."""
    options: StatusOptions = {"as_json": False, "check_ready": False, "timeout_ms": TIMEOUT_MS}
    rest = iter(args)
    for arg in rest:
        name, eq, value = arg.partition("=")
        if arg in FLAGS:
            options[FLAGS[arg]] = True
        elif name in ("--timeout-ms", "--mode"):
            value = value if eq else next(rest, "")
            if name == "--mode" and value not in client.MODES:
                return None
            if name == "--timeout-ms":
                if not (value.isascii() and value.isdigit()):
                    return None
                options["timeout_ms"] = int(value)
        else:
            return None
    return options


def main() -> None:
    """`zg`: `zg server status [--json] [--check-ready] [--timeout-ms N] [--mode M]` here, else the
    click CLI."""
    options = server_status_options(sys.argv[3:]) if sys.argv[1:3] == ["server", "status"] else None
    if options is None:
        from zgrep.cli.main import main as cli

        cli()
        return
    shell_exits(lambda: server_status(**options))
    sys.exit(0)
