"""`zg mcp`: a stdio MCP server (the official SDK) whose tools are the workspace's operations.

The table's ops (`zgrep.service`) each give a tool: its arguments, their types, descriptions and bounds from
the op's row and contract. Each tool is one call of `frontends.api.Workspace`; a failure is an MCP tool error carrying the line
`zg` prints. Hits carry a short `id` (the clip store) that `read_hit` turns back into the code.
"""

from __future__ import annotations

import functools
import inspect
import json
import operator
from collections.abc import Callable
from types import UnionType
from typing import Annotated, Any, Union, get_args, get_origin, get_type_hints

import anyio
import anyio.from_thread
import anyio.to_thread
from mcp.server import MCPServer
from mcp.server.mcpserver import Context
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from pydantic import Field

from zgrep import __version__
from zgrep.contracts import JSONObject
from zgrep.frontends.api import FileText, FrontendError, Workspace, arguments, as_list
from zgrep.frontends.clips import ClipStore
from zgrep.progress import ProgressEvent
from zgrep.service import MCP, OPERATIONS, ErrorCode, Operation, Param

INSTRUCTIONS = """\
zgrep searches this workspace's code by meaning and by keyword (hybrid dense + BM25, reranked).
Start with `search` (a plain-language description or an identifier; several `queries` at once are cheaper
than several calls), then `read_hit` with the hit ids to see the code, or `read` for any other lines.
Use `callers`/`trace` to see who uses a definition, and `impact` for what to re-check after changing it. Before editing a file, call
`adr_constraints` with its path: the decision records that govern it list rules the change must keep;
`adr_check` verifies the records still match the code after an edit."""

READ_ONLY = ToolAnnotations(
    read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False
)
WRITES_INDEX = ToolAnnotations(
    read_only_hint=False, destructive_hint=False, idempotent_hint=True, open_world_hint=False
)


Many = str | list[str] | None  # one value or several: agents send either


def failure(line: str) -> CallToolResult:
    """An MCP tool error whose text is exactly `line` (the SDK's ToolError would prefix it)."""
    return CallToolResult(content=[TextContent(type="text", text=line)], is_error=True)


def answer(result: JSONObject) -> CallToolResult:
    """`result` as one compact JSON text block: agents read `content`, so it is sent once, not also as a
    pretty-printed copy beside `structuredContent` (the tools declare no output schema)."""
    return CallToolResult(
        content=[
            TextContent(
                type="text", text=json.dumps(result, ensure_ascii=False, separators=(",", ":"))
            )
        ]
    )


def _encoded(fn: Callable[..., Any]) -> Callable[..., Any]:
    """The tool's dict becomes `answer(...)`; a FrontendError an MCP tool error with the line `zg` prints."""
    if inspect.iscoroutinefunction(fn):

        @functools.wraps(fn)
        async def async_wrapper(*args: Any, **kwargs: Any) -> CallToolResult:
            try:
                return answer(await fn(*args, **kwargs))
            except FrontendError as exc:
                return failure(str(exc))

        return async_wrapper

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> CallToolResult:
        try:
            return answer(fn(*args, **kwargs))
        except FrontendError as exc:
            return failure(str(exc))

    return wrapper


def _refused(line: str) -> FrontendError:
    return FrontendError(ErrorCode.BAD_REQUEST, line)


def _annotation(op: Operation, param: Param) -> Any:
    """The MCP argument's type: the contract's, a list argument taking one value or several (`Param.one`: one,
    `listed`: a list), None admitted unless it has a default, with the row's description and bounds."""
    hint = get_type_hints(op.args)[param.key]
    members = [
        m
        for m in (get_args(hint) if get_origin(hint) in (Union, UnionType) else (hint,))
        if m is not type(None)
    ]
    item: Any = next((get_args(m)[0] for m in members if get_origin(m) is list), None)
    if item is None:
        kind = functools.reduce(operator.or_, members)
    else:
        listed = list.__class_getitem__(item)  # list[item], of a type known at run time
        kind = item if param.one else listed if param.listed else item | listed
    if not param.required and param.default is None:
        kind = kind | None
    bounds: dict[str, Any] = {
        name: value for name, value in (("ge", param.low), ("le", param.high)) if value is not None
    }
    return Annotated[kind, Field(description=param.help, **bounds)]


def tool_signature(op: Operation) -> inspect.Signature:
    """The MCP tool of `op`: its row's MCP arguments (and the request's Context for a write op, which reports
    progress)."""
    params = (
        [inspect.Parameter("ctx", inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=Context)]
        if not op.read_only
        else []
    )
    for param in op.params:
        if param.mcp:
            default = inspect.Parameter.empty if param.required else param.default
            params.append(
                inspect.Parameter(
                    param.name,
                    inspect.Parameter.POSITIONAL_OR_KEYWORD,
                    default=default,
                    annotation=_annotation(op, param),
                )
            )
    return inspect.Signature(params, return_annotation=dict[str, Any])


def build_server(ws: Workspace, clips: ClipStore | None = None) -> MCPServer:
    """The MCP server for workspace `ws`, its hit ids kept in `clips`: a tool per op the table serves on MCP,
    then `read`, `read_hit` and the ADR tools."""
    clips = clips if clips is not None else ClipStore()
    server = MCPServer("zgrep", instructions=INSTRUCTIONS, version=__version__, log_level="WARNING")

    def tool(annotations: ToolAnnotations) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        """Register a tool: its docstring, dedented, is the description; its answer compact JSON."""

        def register(fn: Callable[..., Any]) -> Callable[..., Any]:
            server.tool(
                annotations=annotations,
                description=inspect.cleandoc(fn.__doc__ or ""),
                structured_output=False,
            )(_encoded(fn))
            return fn

        return register

    def tag(hits: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [{"id": clips.add(h["path"], h["start_line"], h["end_line"]), **h} for h in hits]

    def tagged(result: dict[str, Any]) -> dict[str, Any]:
        """Search hits each with an `id` for `read_hit`."""
        if "groups" in result:
            result["groups"] = [{**g, "hits": tag(g["hits"])} for g in result["groups"]]
        elif "hits" in result:
            result["hits"] = tag(result["hits"])
        return result

    def op_tool(op: Operation) -> Callable[..., Any]:
        """`op` as a tool: a read answers at once; a write runs on a worker thread and sends its progress (files
        done of files to index) as MCP progress notifications."""
        if op.read_only:

            def read(**given: Any) -> dict[str, Any]:
                return tagged(ws.run(op, arguments(op, given)))

            fn: Callable[..., Any] = read
        else:

            async def write(ctx: Context, **given: Any) -> dict[str, Any]:
                def report(event: ProgressEvent) -> None:
                    message = (
                        f"{event.get('files_done', 0)}/{event.get('files_total', 0)} files, "
                        f"{event.get('chunks_done', 0)} chunks"
                    )
                    anyio.from_thread.run(
                        ctx.report_progress,
                        event.get("files_done", 0),
                        event.get("files_total"),
                        message,
                    )

                return await anyio.to_thread.run_sync(
                    functools.partial(ws.run, op, arguments(op, given), report)
                )

            fn = write
        shape = tool_signature(op)
        fn.__name__ = fn.__qualname__ = op.name
        fn.__doc__ = op.about
        fn.__signature__ = shape  # type: ignore[attr-defined]
        fn.__annotations__ = {
            **{p.name: p.annotation for p in shape.parameters.values()},
            "return": dict[str, Any],
        }
        return fn

    for op in OPERATIONS.values():
        if MCP in op.frontends:
            tool(READ_ONLY if op.read_only else WRITES_INDEX)(op_tool(op))

    @tool(READ_ONLY)
    def read(
        path: Annotated[
            str, Field(description="Workspace-relative file path, as search hits give it.")
        ],
        start: Annotated[
            int | None, Field(ge=1, description="First line (1-based; default 1).")
        ] = None,
        end: Annotated[
            int | None, Field(ge=1, description="Last line, inclusive (default: end of file).")
        ] = None,
    ) -> FileText:
        """Read lines of a file in the workspace (confined to it: no absolute paths, no `..`, no symlinks
        out). Returns `path`, `start_line`, `end_line`, `total_lines` and `text`. Prefer `read_hit` for a
        search hit; use this to widen the view around one."""
        return ws.read(path, start, end)

    @tool(READ_ONLY)
    def read_hit(
        id: Annotated[str | None, Field(description="A hit id from search, e.g. h3.")] = None,
        ids: Annotated[list[str] | None, Field(description="Several hit ids.")] = None,
    ) -> dict[str, Any]:
        """The full code of search hits by their `id` (read fresh from the file). Ids last for this server's
        lifetime (the newest 10,000 locations); an unknown id says so: search again. Returns `clips`, one per
        id, each with `path`, `start_line`, `end_line`, `text`, or an `error`."""
        wanted = ([id] if id else []) + list(ids or [])
        if not wanted:
            raise _refused("zg: give a hit id (id) or several (ids) from search")
        out: list[dict[str, Any]] = []
        for clip_id in wanted:
            location = clips.get(clip_id)
            if location is None:
                out.append(
                    {
                        "id": clip_id,
                        "error": f"zg: unknown hit id {clip_id!r}: ids last for this server's "
                        "lifetime; search again",
                    }
                )
                continue
            try:
                out.append({"id": clip_id, **ws.read(location)})
            except FrontendError as exc:
                out.append({"id": clip_id, "error": str(exc)})
        if all("error" in clip for clip in out):
            raise _refused("; ".join(clip["error"] for clip in out))
        return {"clips": out}

    @tool(READ_ONLY)
    def adr_constraints(
        paths: Annotated[
            Many, Field(description="Workspace-relative file(s) about to be edited.")
        ] = None,
    ) -> dict[str, Any]:
        """The architecture decision records (ADRs) that govern these files, each with its `constraints` (rules a
        change must keep), the `files` and `symbols` it anchors. Call before editing. Without paths: every live
        ADR that states constraints."""
        return ws.adr_constraints(as_list(paths))

    @tool(READ_ONLY)
    def adr_search(
        query: Annotated[str, Field(description="What the decision is about.")],
        limit: Annotated[int, Field(ge=1, le=100, description="Hits (default 10).")] = 10,
    ) -> dict[str, Any]:
        """Search decision records and spec/plan documents; each hit says its `doc_kind` (adr, spec, plan) and,
        for an ADR, its `id`, `title` and `status`."""
        return ws.adr_search(query, limit)

    @tool(READ_ONLY)
    def adr_check(
        paths: Annotated[
            Many, Field(description="Only anchors in these files (default: all).")
        ] = None,
    ) -> dict[str, Any]:
        """Check that the decision records are valid and their code anchors still resolve (files exist, symbols
        still defined): `ok`, `problems` (each with a message and what to do), and the ADRs `governing` the
        paths. Run after an edit that moved or renamed anchored code. Changes nothing."""
        return ws.adr_check(as_list(paths) or None)

    return server
