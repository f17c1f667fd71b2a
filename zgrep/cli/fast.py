"""The `zg` entry point: `zg server status`, which only the daemon answers, and a `zg search` a daemon
answers run here without click (about 30 ms of every command); anything else, including help, flags
this does not know, bad values and a search no daemon answers, goes to the click CLI
(`zgrep.cli.main`) unchanged, which gives its own output and exit codes.

Standard library, the client, the config and the output module only. The click command `zg server
status` runs the same `server_status`; `zg search` parses the same option table (`zgrep.cli.flags`)
and builds its request and output with the same `zgrep.cli.searching`, both imported by the search
alone: neither loads pathlib, typing, re or enum (tests/cli/test_thin_client.py)."""

from __future__ import annotations

import sys

from zgrep.cli.exits import fail, shell_exits
from zgrep.cli.output import echo, write_json, write_server_status
from zgrep.server import client

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (see zgrep.service)
if TYPE_CHECKING:
    from typing import Literal, TypedDict

    from zgrep.contracts import ServerStatus

    class StatusOptions(TypedDict):
        """`server_status`'s arguments, as `zg server status`'s flags give them (a type only: a
        TypedDict's creation costs ~1M instructions of every `zg` call)."""

        as_json: bool
        check_ready: bool
        timeout_ms: int


FLAGS: dict[str, Literal["as_json", "check_ready"]] = {
    "--json": "as_json",
    "--check-ready": "check_ready",
}
TIMEOUT_MS = 500  # `--timeout-ms` by default


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
    result: ServerStatus = {"running": True, "ready": True, **reply["result"]}  # type: ignore[typeddict-item]  # (the daemon's answer)
    if as_json:
        write_json(result, ascii_only=True)
    else:
        write_server_status(result)


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
            if name == "--mode":
                from zgrep.vocab import MODES

                if value not in MODES:
                    return None
            if name == "--timeout-ms":
                if not (value.isascii() and value.isdigit()):
                    return None
                options["timeout_ms"] = int(value)
        else:
            return None
    return options


def search_served(args: list[str]) -> int | None:
    """`zg search ARGS` when a daemon answers it: its output written, its exit code returned (an error
    the daemon answers with exits 2 here, as in the click command). None, having written nothing, for
    anything the click command would read or do otherwise: options `flags.parse` declines, --type-list,
    --model, two output formats, a root or config that fails or has a notice to show, a path outside
    the workspace, direct mode, or no daemon answering (the click CLI then runs the command)."""
    import os

    from zgrep.cli import flags, searching
    from zgrep.service import SEARCH

    parsed = flags.parse(flags.SEARCH + flags.COMMON, args)
    if parsed is None:
        return None
    values, words = parsed
    asked = searching.formats(values)
    if values["type_list"] or values["model"] is not None or len(asked) > 1:
        return None
    fmt = asked.pop() if asked else "text"
    forced = len(args) - args.index("--") - 1 if "--" in args else 0
    query, given = searching.split_words(words, forced, bool(values["extra"]))
    from zgrep.config import Config, ConfigError
    from zgrep.workspace import WorkspaceError, find_root

    root_dir: str | None = values["root_dir"]
    try:
        root = find_root(root_dir or None, explicit=root_dir is not None)
        cfg = Config.load(root)
    except (WorkspaceError, ConfigError, OSError):  # (a cwd that is gone: the click CLI's)
        return None
    mode: str = values["mode"] or cfg.mode
    if cfg.notice or mode == "direct":
        return None
    try:
        cwd = os.path.realpath(os.getcwd())
    except OSError:  # (a cwd that is gone: the click CLI's)
        return None
    try:
        paths = searching.scoped(values, root, cwd, given)
    except searching.OutsideWorkspace:
        return None
    config = flags.config_flags(None, values["milvus_uri"])
    request = searching.request(values, query, paths, fmt, config)
    try:
        # zgrep.telemetry only when it is on: its TypedDicts cost ~4M instructions
        if cfg.telemetry.enabled:
            from zgrep import telemetry

            answered = telemetry.recorded_served(cfg, SEARCH.name, root, request, mode)
        else:
            answered = client.call_served(
                SEARCH.name, root, request, mode, cfg.server.probe_timeout_ms
            )
    except client.ClientError as exc:
        fail(str(exc), exc.exit_code)
    if answered is None:
        return None
    return searching.show(*answered, fmt, root, cwd, values["color"])


def main() -> None:
    """`zg`: `zg server status [--json] [--check-ready] [--timeout-ms N] [--mode M]` and a daemon-served
    `zg search` here, else the click CLI."""
    if sys.argv[1:2] == ["search"]:
        exits: list[int | None] = []
        shell_exits(lambda: exits.append(search_served(sys.argv[2:])))
        if exits[0] is not None:
            sys.exit(exits[0])
    options = server_status_options(sys.argv[3:]) if sys.argv[1:3] == ["server", "status"] else None
    if options is None:
        from zgrep.cli.main import main as cli

        cli()
        return
    shell_exits(lambda: server_status(**options))
    sys.exit(0)
