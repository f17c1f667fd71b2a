"""`zg callers`, `zg trace` and `zg impact`: who references a definition, the call tree from one,
and what reaches changed definitions."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar, cast

import click

from zgrep.cli import output
from zgrep.cli.main import common_options, config_flags, fail, resolve, run
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


def _shared_options(edges_default: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """--edges (saying its default), --root, --json and the common options, as every relations
    command ends."""

    def decorate(fn: Callable[..., Any]) -> Callable[..., Any]:
        fn = common_options(fn)
        fn = click.option("--json", "as_json", is_flag=True, help="One JSON document.")(fn)
        fn = click.option("--root", "root_dir", default=None, help=ROOT_HELP)(fn)
        return click.option(
            "--edges", default=None, help=f"{EDGES_HELP} (default: {edges_default})."
        )(fn)

    return decorate


def _answer(
    op: Operation,
    root: Path,
    cfg: Config,
    args: Args,
    edges: str | None,
    as_json: bool,
    mode: str | None,
    model: str | None,
    milvus_uri: str | None,
    write: Callable[[Result], None],
) -> Result:
    """Run `op` with the shared flags added to `args`; print its result as JSON or with `write`
    (which reads it as the op's result type)."""
    args = {**args, "edges": _edges(edges), "config": config_flags(model, milvus_uri)}
    answer, used = run(op, root, cfg, args, mode)
    result = cast(Result, answer)
    if as_json:
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
def callers(
    symbol: str,
    source_file: str | None,
    limit: int | None,
    edges: str | None,
    root_dir: str | None,
    as_json: bool,
    mode: str | None,
    model: str | None,
    milvus_uri: str | None,
) -> None:
    """Definitions that use SYMBOL (name, Scope.name or PATH:name), each with how (`edge`: call,
    import, ...). Exit 0 found, 1 none, 2 error."""
    root, cfg = resolve(root_dir)

    def write(found: CallersResult) -> None:
        output.write_callers(found, symbol, source_file)

    result = _answer(
        CALLERS,
        root,
        cfg,
        {"symbol": symbol, "source_file": source_file, "limit": limit},
        edges,
        as_json,
        mode,
        model,
        milvus_uri,
        write,
    )
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
    edges: str | None,
    root_dir: str | None,
    as_json: bool,
    mode: str | None,
    model: str | None,
    milvus_uri: str | None,
) -> None:
    """Call tree from ENTRY (name, Scope.name or PATH:name), following calls unless --edges says
    otherwise. Exit 0 with edges, 1 without, 2 on error."""
    root, cfg = resolve(root_dir)
    args: Args = {
        "entry": entry,
        "direction": direction,
        "depth": depth,
        "source_file": source_file,
    }

    def write(tree: TraceResult) -> None:
        output.write_trace(tree, entry, source_file, direction == "forward")

    result = _answer(TRACE, root, cfg, args, edges, as_json, mode, model, milvus_uri, write)
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
    edges: str | None,
    root_dir: str | None,
    as_json: bool,
    mode: str | None,
    model: str | None,
    milvus_uri: str | None,
) -> None:
    """What reaches the changed definitions (TARGETS: PATH, PATH:SYMBOL or PATH:START-END, or
    --staged): the definitions and files to re-check, tests listed apart. Exit 0 something reaches
    them, 1 nothing, 2 error."""
    root, cfg = resolve(root_dir)
    wanted = list(targets)
    if staged:
        from zgrep.git import GitError
        from zgrep.relations.changes import staged_targets

        try:
            wanted += staged_targets(root)
        except GitError as exc:
            fail(f"--staged needs a git repository: {exc}", 2)
        if (
            not wanted and not as_json
        ):  # (--json asks anyway: an empty result has every field of a full one)
            click.echo("nothing staged", err=True)
            sys.exit(1)
    elif not wanted:
        fail(
            "give PATH, PATH:SYMBOL or PATH:START-END, or --staged (e.g. zg impact src/app.py:run)",
            2,
        )
    result = _answer(
        IMPACT,
        root,
        cfg,
        {"targets": wanted, "staged": staged, "depth": depth},
        edges,
        as_json,
        mode,
        model,
        milvus_uri,
        output.write_impact,
    )
    sys.exit(0 if result["total"] else 1)
