"""The op table (`zgrep.service`) against what is built beside it: every `zg` command's click options agree
with its op's row and contract (a drift fails here), and the protocol validates arguments by the contracts."""

from __future__ import annotations

import inspect
import json
from typing import Any, get_args, get_origin, get_type_hints

import click
import pytest

from zgrep.cli.main import main as cli
from zgrep.frontends.api import Workspace, kinds
from zgrep.server import protocol
from zgrep.service import OPERATIONS, Operation, Param

# Row arguments a command takes otherwise than by `--NAME`: its query words and -q, its positional targets,
# index's paths (its PATH is the workspace; --paths-from and --changed list paths).
NOT_BY_FLAG = {
    ("search", "query"),
    ("search", "queries"),
    ("index", "paths"),
    ("callers", "symbol"),
    ("trace", "entry"),
    ("impact", "targets"),
}
CLI_DEFAULT_DIFFERS = {
    ("search", "preview")
}  # the CLI's default depends on --format (full for markdown)


def _command(op: Operation) -> click.Command:
    command = cli.get_command(click.Context(cli), op.name)
    assert command is not None, f"no zg {op.name} command"
    return command


def _option(command: click.Command, param: Param) -> click.Option | None:
    flag = "--" + param.name.replace("_", "-")
    return next((p for p in command.params if isinstance(p, click.Option) and flag in p.opts), None)


def _literal(hint: Any) -> tuple[str, ...] | None:
    """The strings a Literal (inside a union or a list) admits, or None."""
    for member in get_args(hint) if get_args(hint) and get_origin(hint) is not list else (hint,):
        member = get_args(member)[0] if get_origin(member) is list else member
        if get_args(member) and all(isinstance(v, str) for v in get_args(member)):
            return get_args(member)
    return None


SERVED = [(op, param) for op in OPERATIONS.values() if op.frontends for param in op.params]


@pytest.mark.parametrize(
    ("op", "param"), SERVED, ids=[f"{op.name}.{param.name}" for op, param in SERVED]
)
def test_every_row_argument_is_its_commands_option_of_the_same_type(
    op: Operation, param: Param
) -> None:
    """Each argument the table offers is the command's `--NAME` of the contract's type: its choices the
    contract's Literal, repeatable for a list, a number for a number, a flag for a boolean, the same default
    and bounds."""
    if (op.name, param.name) in NOT_BY_FLAG:
        return
    option = _option(_command(op), param)
    assert option is not None, f"zg {op.name} has no --{param.name.replace('_', '-')}"
    assert option.name == param.key, (option.name, param.key)
    kind = kinds(op)[param.key]
    hint = get_type_hints(op.args)[param.key]
    choices = _literal(hint)
    if choices is not None:
        assert isinstance(option.type, click.Choice) and tuple(option.type.choices) == choices
    assert option.multiple == (kind == {list}), f"--{param.name}: multiple"
    if kind == {bool}:
        assert option.is_flag
    if kind == {int}:
        assert isinstance(option.type, (click.types.IntParamType, click.IntRange))
    if kind == {float}:
        assert isinstance(option.type, click.types.FloatParamType)
    if isinstance(option.type, click.IntRange) and param.low is not None:
        assert (option.type.min, option.type.max) == (param.low, param.high)
    if param.default is not None and (op.name, param.name) not in CLI_DEFAULT_DIFFERS:
        default = option.get_default(click.Context(_command(op)))
        assert (default or False if option.is_flag else default) == param.default, (
            default,
            param.default,
        )


CLI_ONLY = {"refresh", "no_index", "yes", "dry_run"}  # what MCP and HTTP leave out


@pytest.mark.parametrize(
    "op", [op for op in OPERATIONS.values() if op.frontends], ids=lambda op: op.name
)
def test_every_option_setting_a_contract_argument_is_in_the_row_or_kept_to_the_cli(
    op: Operation,
) -> None:
    """A command's option that sets an argument of its op's contract is offered by the row (so MCP and HTTP
    have it too) or named here as the command line's alone."""
    keys = set(get_type_hints(op.args)) - CLI_ONLY
    offered = {p.key for p in op.params}
    missing = {
        p.name for p in _command(op).params if isinstance(p, click.Option) and p.name in keys
    } - offered
    assert not missing, f"zg {op.name} sets {sorted(missing)}, which the op's row does not offer"


def test_every_served_op_has_a_workspace_method_taking_its_contract_arguments() -> None:
    """`frontends.api.Workspace` offers each served op as a method of its row's arguments (by contract name)."""
    ws = Workspace.__new__(Workspace)
    for op in OPERATIONS.values():
        if op.frontends:
            method = getattr(ws, op.name)
            names = list(inspect.signature(method.func).parameters)[1:]
            assert [n for n in names if n != "on_progress"] == list(
                dict.fromkeys(p.key for p in op.params)
            )
            assert set(names) - {"on_progress"} <= set(get_type_hints(op.args))
    with pytest.raises(AttributeError):
        ws.ping  # noqa: B018 (the daemon's ops are not a workspace's)


def _request(op: str, args: dict[str, Any]) -> bytes:
    return json.dumps(
        {"v": protocol.PROTOCOL_VERSION, "op": op, "root": "/x", "args": args}
    ).encode()


@pytest.mark.parametrize(
    ("op", "args", "error"),
    [
        ("search", {"queries": "x"}, "args.queries must be a list of strings or null"),
        ("search", {"limit": "10"}, "args.limit must be a number or null"),
        ("search", {"preview": 3}, "args.preview must be a string or null"),
        ("index", {"full": "yes"}, "args.full must be true or false"),
        ("trace", {"depth": "3"}, "args.depth must be a number or null"),
        ("callers", {"edges": 1}, "args.edges must be a string, a list of strings or null"),
        ("status", {"config": []}, "args.config must be an object of settings"),
        (
            "index",
            {"refresh": 7},
            "args.refresh must be a string or null",
        ),  # a name is one kind, whatever the op
    ],
)
def test_the_protocol_checks_arguments_by_the_contracts(
    op: str, args: dict[str, Any], error: str
) -> None:
    with pytest.raises(protocol.ProtocolError) as caught:
        protocol.decode_request(_request(op, args))
    assert str(caught.value).startswith(error) and caught.value.code == "malformed"


def test_the_protocol_passes_what_the_contracts_admit() -> None:
    """Edges as one comma-separated string (as MCP agents send) or a list; values are the handler's to check."""
    for op, args in (
        ("callers", {"symbol": "f", "edges": "call,import"}),
        ("trace", {"entry": "f", "edges": ["call"]}),
        ("search", {"queries": ["q"], "preview": "bogus", "limit": 2.5}),
    ):
        assert protocol.decode_request(_request(op, args))["args"] == args


def test_an_argument_added_to_a_row_reaches_mcp_http_and_the_workspace() -> None:
    """-B/-A (`context_before`, `context_after`): two Params in the search row, and the MCP tool, the HTTP route
    and `Workspace.search` take them, as `zg search -B 2 -A 1` does."""
    from zgrep.frontends.http_api import op_args
    from zgrep.frontends.mcp_server import tool_signature
    from zgrep.service import SEARCH

    tool = tool_signature(SEARCH).parameters
    assert {"before_context", "after_context"} <= set(tool)
    assert op_args(SEARCH, {"q": ["retry"], "before_context": ["2"], "after_context": ["1"]}) == {
        **op_args(SEARCH, {"q": ["retry"]}),
        "context_before": 2,
        "context_after": 1,
    }
    assert {"context_before", "context_after"} <= set(
        inspect.signature(Workspace.__new__(Workspace).search.func).parameters
    )
