"""`zg mcp`: a stdio MCP server (the official SDK) whose tools are the workspace's operations.

Each tool is one call of `frontends.api.Workspace`; a failure is an MCP tool error carrying the line
`zg` prints. Hits carry a short `id` (the clip store) that `read_hit` turns back into the code.
"""

from __future__ import annotations

import functools
import inspect
import json
from collections.abc import Callable
from typing import Annotated, Any, Literal

import anyio
import anyio.from_thread
import anyio.to_thread
from mcp.server import MCPServer
from mcp.server.mcpserver import Context
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from pydantic import Field

from zgrep import __version__
from zgrep.frontends.api import FrontendError, Workspace, as_list
from zgrep.frontends.clips import ClipStore
from zgrep.service import CALLERS, IMPACT, TRACE, ErrorCode

INSTRUCTIONS = """\
zgrep searches this workspace's code by meaning and by keyword (hybrid dense + BM25, reranked).
Start with `search` (a plain-language description or an identifier; several `queries` at once are cheaper
than several calls), then `read_hit` with the hit ids to see the code, or `read` for any other lines.
Use `callers`/`trace` to see who uses a definition, and `impact` for what to re-check after changing it. Before editing a file, call
`adr_constraints` with its path: the decision records that govern it list rules the change must keep;
`adr_check` verifies the records still match the code after an edit."""

READ_ONLY = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False)
WRITES_INDEX = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=True,
                               open_world_hint=False)


Many = str | list[str] | None  # one value or several: agents send either


def failure(line: str) -> CallToolResult:
    """An MCP tool error whose text is exactly `line` (the SDK's ToolError would prefix it)."""
    return CallToolResult(content=[TextContent(type="text", text=line)], is_error=True)


def answer(result: dict[str, Any]) -> CallToolResult:
    """`result` as one compact JSON text block: agents read `content`, so it is sent once, not also as a
    pretty-printed copy beside `structuredContent` (the tools declare no output schema)."""
    return CallToolResult(content=[TextContent(type="text", text=json.dumps(result, ensure_ascii=False,
                                                                            separators=(",", ":")))])


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


SymbolKind = Literal["module", "class", "interface", "function", "value", "alias"]
EdgeKinds = Annotated[Many, Field(description="Edge kinds: call, reference, import, annotation, decorator, inherit, "
                                              "or all (a list, or one comma-separated string).")]


def build_server(ws: Workspace, clips: ClipStore | None = None) -> MCPServer:
    """The MCP server for workspace `ws`, its hit ids kept in `clips`."""
    clips = clips if clips is not None else ClipStore()
    server = MCPServer("zgrep", instructions=INSTRUCTIONS, version=__version__, log_level="WARNING")

    def tool(annotations: ToolAnnotations) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        """Register a tool: its docstring, dedented, is the description; its answer compact JSON."""
        def register(fn: Callable[..., Any]) -> Callable[..., Any]:
            server.tool(annotations=annotations, description=inspect.cleandoc(fn.__doc__ or ""),
                        structured_output=False)(_encoded(fn))
            return fn

        return register

    def tag(hits: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [{"id": clips.add(h["path"], h["start_line"], h["end_line"]), **h} for h in hits]

    @tool(READ_ONLY)
    def search(
        query: Annotated[str | None, Field(description="What the code does, in plain words, or an identifier.")] = None,
        queries: Annotated[list[str] | None, Field(description="Several queries at once; results come grouped.")] = None,
        limit: Annotated[int | None, Field(ge=1, le=100, description="Hits per query (default 10).")] = None,
        glob: Annotated[Many, Field(description="Path glob(s) to include; '!GLOB' excludes.")] = None,
        type: Annotated[Many, Field(description="ripgrep file type(s): py, js, ts, go, rust, ...")] = None,
        symbol_type: Annotated[SymbolKind | list[SymbolKind] | None,
                               Field(description="Only chunks defining this kind of symbol (one or several).")] = None,
        path: Annotated[str | None, Field(description="Only under this workspace-relative directory or file.")] = None,
        mode_search: Annotated[Literal["hybrid", "semantic", "lexical"],
                               Field(description="hybrid (default), semantic (meaning only) or lexical (words).")] = "hybrid",
        min_score: Annotated[float | None, Field(ge=0, le=1, description="Drop hits scoring below this.")] = None,
        preview: Annotated[Literal["none", "short", "full"], Field(description="Code shown per hit.")] = "short",
    ) -> dict[str, Any]:
        """Search the workspace's code by meaning and keyword. Give `query` (one description such as "where
        are failed requests retried with backoff", or an identifier such as `SessionStore`) or `queries` (several
        at once). Each hit has `path`, `start_line`, `end_line` (1-based, inclusive), `score`, `symbol`,
        `symbol_kind`, `language`, `matched_by`, a `preview`, and an `id` for `read_hit`. Narrow with `glob`,
        `type`, `symbol_type` or `path` rather than by reading more hits. No hits is not an error."""
        result = ws.search(([query] if query else []) + list(queries or []), limit, glob, type, symbol_type, path,
                           mode_search, min_score, preview)
        if "groups" in result:
            result["groups"] = [{**g, "hits": tag(g["hits"])} for g in result["groups"]]
        else:
            result["hits"] = tag(result["hits"])
        return result

    @tool(READ_ONLY)
    def read(
        path: Annotated[str, Field(description="Workspace-relative file path, as search hits give it.")],
        start: Annotated[int | None, Field(ge=1, description="First line (1-based; default 1).")] = None,
        end: Annotated[int | None, Field(ge=1, description="Last line, inclusive (default: end of file).")] = None,
    ) -> dict[str, Any]:
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
                out.append({"id": clip_id, "error": f"zg: unknown hit id {clip_id!r}: ids last for this server's "
                                                    "lifetime; search again"})
                continue
            try:
                out.append({"id": clip_id, **ws.read(location)})
            except FrontendError as exc:
                out.append({"id": clip_id, "error": str(exc)})
        if all("error" in clip for clip in out):
            raise _refused("; ".join(clip["error"] for clip in out))
        return {"clips": out}

    @tool(READ_ONLY)
    def status() -> dict[str, Any]:
        """What is indexed (files, chunks, languages, model, Milvus URI, last index time), whether it is fresh
        against the working tree and HEAD, and the daemon's and git hooks' state: `zg status --json`."""
        return ws.status()

    @tool(WRITES_INDEX)
    async def index(
        ctx: Context,
        paths: Annotated[Many, Field(description="Workspace-relative path(s) to refresh (default: all).")] = None,
        full: Annotated[bool, Field(description="Rebuild everything from scratch (slow; rarely needed).")] = False,
    ) -> dict[str, Any]:
        """Bring the index up to date with the working tree (only changed files are re-read), or just `paths`.
        Search refreshes by itself, so call this after large edits or when `status` reports a problem.
        Sends progress notifications (files done of files to index). Returns the `zg index --json` report."""
        def report(event: dict[str, Any]) -> None:
            message = f"{event.get('files_done', 0)}/{event.get('files_total', 0)} files, {event.get('chunks_done', 0)} chunks"
            anyio.from_thread.run(ctx.report_progress, event.get("files_done", 0), event.get("files_total"), message)

        return await anyio.to_thread.run_sync(functools.partial(ws.index, as_list(paths) or None, full, report))

    @tool(READ_ONLY)
    def callers(
        symbol: Annotated[str, Field(description="A definition: name, Scope.name, or PATH:name.")],
        source_file: Annotated[str | None, Field(description="Only the definition in this file.")] = None,
        limit: Annotated[int | None, Field(ge=1, description="At most this many callers.")] = None,
        edges: EdgeKinds = None,
    ) -> dict[str, Any]:
        """Who references a definition: its `definitions` and the `callers` (path, line, enclosing symbol, edge
        kinds, whether the reference resolved through imports). Use before changing a function's signature.
        `edges` narrows the kinds of use (default: all)."""
        return ws.relations(CALLERS, {"symbol": symbol, "source_file": source_file, "limit": limit, "edges": edges})

    @tool(READ_ONLY)
    def trace(
        entry: Annotated[str, Field(description="A definition: name, Scope.name, or PATH:name.")],
        direction: Annotated[Literal["backward", "forward"],
                             Field(description="backward: who calls it; forward: what it calls.")] = "backward",
        depth: Annotated[int, Field(ge=1, le=10, description="Levels to follow.")] = 3,
        source_file: Annotated[str | None, Field(description="Only the definition in this file.")] = None,
        edges: EdgeKinds = None,
    ) -> dict[str, Any]:
        """The call tree from a definition, `depth` levels backward (callers) or forward (callees); nodes say
        when a reference is unresolved, a cycle, or expanded elsewhere. `edges` follows other kinds of use than
        calls."""
        return ws.relations(TRACE, {"entry": entry, "direction": direction, "depth": depth,
                                    "source_file": source_file, "edges": edges})

    @tool(READ_ONLY)
    def impact(
        targets: Annotated[Many, Field(description="What changes: PATH, PATH:SYMBOL or PATH:START-END "
                                                   "(one or several).")] = None,
        staged: Annotated[bool, Field(description="Also every definition the staged change touches.")] = False,
        depth: Annotated[int, Field(ge=1, le=10, description="Levels of callers to follow.")] = 3,
        edges: EdgeKinds = None,
    ) -> dict[str, Any]:
        """What reaches changed definitions: the definitions and files to re-check after changing `targets` (or
        the staged change), tests listed apart, `total` counting them. Call before a refactor to know what to
        re-read and which tests to run. `edges` defaults to every kind but annotation."""
        return ws.relations(IMPACT, {"targets": as_list(targets), "staged": staged, "depth": depth, "edges": edges})

    @tool(READ_ONLY)
    def adr_constraints(
        paths: Annotated[Many, Field(description="Workspace-relative file(s) about to be edited.")] = None,
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
        paths: Annotated[Many, Field(description="Only anchors in these files (default: all).")] = None,
    ) -> dict[str, Any]:
        """Check that the decision records are valid and their code anchors still resolve (files exist, symbols
        still defined): `ok`, `problems` (each with a message and what to do), and the ADRs `governing` the
        paths. Run after an edit that moved or renamed anchored code. Changes nothing."""
        return ws.adr_check(as_list(paths) or None)

    return server
