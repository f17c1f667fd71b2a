"""The `zg` root group: the command table, global options, and the exit plumbing every command
shares.

Thin path: click, the client and the protocol; what only some commands need (config, telemetry, the
model spec parser) is imported where used. Each command lives in its own module under `zgrep.cli`,
imported by name only when invoked (those modules import their helpers from here)."""

from __future__ import annotations

import functools
import importlib
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from zgrep import __version__
from zgrep.cli.exits import fail, interrupted, shell_exits
from zgrep.cli.flags import COMMON, Common, Flag
from zgrep.server.client import ClientError
from zgrep.vocab import MODES

if TYPE_CHECKING:
    from zgrep.config import Config
    from zgrep.contracts import Args, JSONObject
    from zgrep.service import Operation

COMMANDS = {  # name -> "module:attribute": one module per command group, imported when its command runs
    "adr": "zgrep.cli.adr:adr",
    "callers": "zgrep.cli.relations:callers",
    "config": "zgrep.cli.config:config",
    "doctor": "zgrep.cli.status:doctor",
    "eval": "zgrep.cli.eval:eval_cmd",
    "hooks": "zgrep.cli.hooks:hooks",
    "index": "zgrep.cli.index:index",
    "read": "zgrep.cli.read:read",
    "search": "zgrep.cli.search:search",
    "server": "zgrep.cli.server:server",
    "status": "zgrep.cli.status:status",
    "trace": "zgrep.cli.relations:trace",
    "trust": "zgrep.cli.trust:trust",
    "mcp": "zgrep.cli.mcp:mcp",
    "init": "zgrep.cli.init:init",
    "serve": "zgrep.cli.serve:serve",
    "stats": "zgrep.cli.stats:stats",
    "impact": "zgrep.cli.relations:impact",
}


class LazyGroup(click.Group):
    """The root group: a command's module is imported only when that command is invoked."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        """click's, but a mistyped command names the one meant (`zg serch`: did you mean search?)."""
        if args and args[0] not in COMMANDS and not args[0].startswith("-"):
            import difflib

            near = difflib.get_close_matches(args[0], COMMANDS, n=1)
            if near:
                raise click.UsageError(
                    f"no such command {args[0]!r} (did you mean {near[0]}?)", ctx
                )
        return super().resolve_command(ctx, args)

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name not in COMMANDS:
            return None
        module, _, attr = COMMANDS[name].partition(":")
        try:
            command: click.Command = getattr(importlib.import_module(module), attr)
        except ImportError as exc:
            raise click.ClickException(f"`zg {name}` is unavailable: {exc}") from None
        accept_mode_everywhere(command)
        return command

    def main(self, *args: Any, **kwargs: Any) -> Any:
        """click's main, but a usage error is one `zg: ...` line naming the help to read, exit 2."""
        if kwargs.get("standalone_mode") is False:
            return super().main(*args, **kwargs)
        try:
            result = super().main(*args, **{**kwargs, "standalone_mode": False})
        except click.exceptions.NoArgsIsHelpError as exc:
            exc.show()
            sys.exit(exc.exit_code)
        except click.UsageError as exc:
            where = f"; see {exc.ctx.command_path} -h" if exc.ctx else ""
            fail(exc.format_message().rstrip(".") + where)
        except click.ClickException as exc:
            fail(exc.format_message())
        except click.Abort:
            interrupted()
        sys.exit(result or 0)  # an int only when a command called ctx.exit(code)

    def invoke(self, ctx: click.Context) -> None:
        """Run the command (its return value is no exit code), ending on Ctrl-C or a closed stdout as
        shells expect (`shell_exits`), not with click's 1, which scripts would read as 'no hits'."""
        shell_exits(functools.partial(super().invoke, ctx))


def _export_mode(ctx: click.Context, param: click.Parameter, value: str | None) -> None:
    if value is not None:
        os.environ["ZG_MODE"] = value


def accept_mode_everywhere(command: click.Command) -> None:
    """Give every (sub)command a --mode option, so scripts may pass it to any command; where the
    command does not route through the client it only sets ZG_MODE for what it runs."""
    if isinstance(command, click.Group):
        for sub in command.commands.values():
            accept_mode_everywhere(sub)
    elif not any(p.name == "mode" for p in command.params):
        command.params.append(
            click.Option(
                ["--mode"],
                type=click.Choice(MODES),
                default=None,
                expose_value=False,
                callback=_export_mode,
                help="auto, server or direct (ZG_MODE).",
            )
        )


def click_option(flag: Flag) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """The click option of a `zgrep.cli.flags` definition (its help, parsing and value)."""
    kwargs: dict[str, Any] = {"help": flag.help, "expose_value": flag.expose}
    if flag.kind == "flag":
        kwargs["is_flag"] = True
    elif flag.multiple:
        kwargs["multiple"] = True
    else:
        kwargs["default"] = flag.default
    if flag.kind == "choice":
        kwargs["type"] = click.Choice(flag.choices)
    elif flag.kind in ("int", "uint", "float"):
        kwargs["type"] = {"int": int, "uint": click.IntRange(0), "float": float}[flag.kind]
    if flag.show_default:
        kwargs["show_default"] = True
    return click.option(*flag.names, flag.dest, **kwargs)


def click_options(table: tuple[Flag, ...]) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Every option of `table`, listed (in help) and processed in the table's order."""

    def add(fn: Callable[..., Any]) -> Callable[..., Any]:
        for flag in reversed(table):
            fn = click_option(flag)(fn)
        return fn

    return add


def common_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    """--mode, --model, --milvus-uri (`flags.COMMON`) on every workspace command, given to it as one
    `common`."""

    @functools.wraps(fn)
    def command(
        *args: Any, mode: str | None, model: str | None, milvus_uri: str | None, **kwargs: Any
    ) -> Any:
        return fn(*args, common=Common(mode, model, milvus_uri), **kwargs)

    return click_options(COMMON)(command)


def resolve(path: str | None) -> tuple[Path, Config]:
    """Workspace root and its config, or exit 2 with the reason."""
    from zgrep.config import Config, ConfigError
    from zgrep.workspace import WorkspaceError, find_root

    try:
        root = Path(find_root(path or None, explicit=path is not None))
        cfg = Config.load(root)
    except (WorkspaceError, ConfigError) as exc:
        fail(str(exc))
    if cfg.notice:
        click.echo(f"zg: {cfg.notice}", err=True)
    return root, cfg


def run(
    op: Operation, root: Path, cfg: Config, args: Args, mode: str | None
) -> tuple[JSONObject, str]:
    """Send a request through the client; errors become one line and exit 2. Telemetry (off by
    default) records search, index and status here, for every command that runs them."""
    from zgrep import telemetry

    try:
        return telemetry.recorded_call(cfg, op.name, str(root), args, mode or cfg.mode)
    except ClientError as exc:
        fail(str(exc), exc.exit_code)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="zg")
@click.option(
    "--mode",
    type=click.Choice(MODES),
    default=None,
    expose_value=False,
    callback=_export_mode,
    is_eager=True,
    help="auto, server or direct for the command that follows (ZG_MODE).",
)
def main() -> None:
    """Search a codebase by meaning and by keyword."""


if __name__ == "__main__":
    main()
