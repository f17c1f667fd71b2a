"""`zg callers`, `zg trace` and `zg impact`: who references a definition, the call tree from one,
and what reaches changed definitions."""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar, cast

import click

from zgrep.cli import output
from zgrep.cli.main import Common, common_options, fail, resolve, run
from zgrep.config import Config
from zgrep.contracts import Args, CallersResult, TraceResult
from zgrep.service import CALLERS, IMPACT, TRACE, Operation
from zgrep.vocab import DIRECTIONS, Direction

Result = TypeVar("Result")

ROOT_HELP = "Workspace root (default: the git top level of the cwd)."
EDGES_HELP = (
    "Edge kinds, comma-separated: call, reference, import, annotation, decorator, inherit, or all"
)


def _edges(value: str | None) -> list[str] | None:
    return [part.strip() for part in value.split(",") if part.strip()] if value else None


@dataclass(frozen=True)
class Shared:
    """The values of the options every relations command ends with."""

    edges: str | None
    root_dir: str | None
    as_json: bool
    common: Common


def _shared_options(edges_default: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """--edges (saying its default), --root, --json and the common options, as every relations
    command ends, given to it as one `shared`."""

    def decorate(fn: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(fn)
        def command(
            *args: Any,
            edges: str | None,
            root_dir: str | None,
            as_json: bool,
            common: Common,
            **kwargs: Any,
        ) -> Any:
            return fn(*args, shared=Shared(edges, root_dir, as_json, common), **kwargs)

        cmd = common_options(command)
        cmd = click.option("--json", "as_json", is_flag=True, help="One JSON document.")(cmd)
        cmd = click.option("--root", "root_dir", default=None, help=ROOT_HELP)(cmd)
        return click.option(
            "--edges", default=None, help=f"{EDGES_HELP} (default: {edges_default})."
        )(cmd)

    return decorate


def _answer(
    op: Operation,
    root: Path,
    cfg: Config,
    args: Args,
    shared: Shared,
    write: Callable[[Result], None],
) -> Result:
    """Run `op` with the shared flags added to `args`; print its result as JSON or with `write`
    (which reads it as the op's result type)."""
    args = {**args, "edges": _edges(shared.edges), "config": shared.common.config()}
    answer, used = run(op, root, cfg, args, shared.common.mode)
    result = cast(Result, answer)
    if shared.as_json:
        output.write_json(result, used)
    else:
        write(result)
    return result


@click.command()
@click.argument("symbol")
@click.option(
    "--source-file", default=None, help="Only the definition in this workspace-relative file."
)
@click.option("-n", "--limit", type=int, default=None, help="At most this many callers.")
@_shared_options("all")
def callers(symbol: str, source_file: str | None, limit: int | None, shared: Shared) -> None:
    """Definitions that use SYMBOL (name, Scope.name or PATH:name), each with how (`edge`: call,
    import, ...). Exit 0 found, 1 none, 2 error."""
    root, cfg = resolve(shared.root_dir)

    def write(found: CallersResult) -> None:
        output.write_callers(found, symbol, source_file)

    args: Args = {"symbol": symbol, "source_file": source_file, "limit": limit}
    result = _answer(CALLERS, root, cfg, args, shared, write)
    sys.exit(0 if result["callers"] else 1)


@click.command()
@click.argument("entry")
@click.option(
    "--direction",
    type=click.Choice(DIRECTIONS),
    default="backward",
    show_default=True,
    help="backward: who calls ENTRY; forward: what ENTRY calls.",
)
@click.option(
    "--depth", type=click.IntRange(1, 10), default=3, show_default=True, help="Levels to follow."
)
@click.option(
    "--source-file", default=None, help="Only the definition in this workspace-relative file."
)
@_shared_options("call")
def trace(
    entry: str,
    direction: Direction,
    depth: int,
    source_file: str | None,
    shared: Shared,
) -> None:
    """Call tree from ENTRY (name, Scope.name or PATH:name), following calls unless --edges says
    otherwise. Exit 0 with edges, 1 without, 2 on error."""
    root, cfg = resolve(shared.root_dir)
    args: Args = {
        "entry": entry,
        "direction": direction,
        "depth": depth,
        "source_file": source_file,
    }

    def write(tree: TraceResult) -> None:
        output.write_trace(tree, entry, source_file, direction == "forward")

    result = _answer(TRACE, root, cfg, args, shared, write)
    sys.exit(0 if any(top["children"] for top in output.trace_tops(result)) else 1)


@click.command()
@click.argument("targets", nargs=-1)
@click.option(
    "--staged", is_flag=True, help="Assess the staged change (each staged hunk's definitions)."
)
@click.option(
    "--depth",
    type=click.IntRange(1, 10),
    default=3,
    show_default=True,
    help="Levels of callers to follow.",
)
@_shared_options("all but annotation")
def impact(
    targets: tuple[str, ...],
    staged: bool,
    depth: int,
    shared: Shared,
) -> None:
    """What reaches the changed definitions (TARGETS: PATH, PATH:SYMBOL or PATH:START-END, or
    --staged): the definitions and files to re-check, tests listed apart. Exit 0 something reaches
    them, 1 nothing, 2 error."""
    root, cfg = resolve(shared.root_dir)
    wanted = list(targets)
    if staged:
        from zgrep.git import GitError
        from zgrep.relations.changes import staged_targets

        try:
            wanted += staged_targets(root)
        except GitError as exc:
            fail(f"--staged needs a git repository: {exc}", 2)
        # (--json asks anyway: an empty result has every field of a full one)
        if not wanted and not shared.as_json:
            click.echo("nothing staged", err=True)
            sys.exit(1)
    elif not wanted:
        fail(
            "give PATH, PATH:SYMBOL or PATH:START-END, or --staged (e.g. zg impact src/app.py:run)",
            2,
        )
    args: Args = {"targets": wanted, "staged": staged, "depth": depth}
    result = _answer(IMPACT, root, cfg, args, shared, output.write_impact)
    sys.exit(0 if result["total"] else 1)
