"""`callers` and `trace` over the relations database (what a use means is `graph`'s job).

Every use has an edge kind (call, reference, import, annotation, decorator, inherit): callers lists
all kinds by default, trace follows calls; `edges` selects others.
"""

from __future__ import annotations

import sqlite3
from collections import deque
from pathlib import Path
from typing import Any

from zgrep.contracts import Caller, CallersArgs, CallersResult, TraceArgs, TraceNode, TraceResult
from zgrep.engine import Engine
from zgrep.progress import Progress
from zgrep.relations.graph import Graph, Match, Use, strongest
from zgrep.relations.model import EDGE_KINDS
from zgrep.relations.pyresolve import UNKNOWN_RECEIVER, resolve
from zgrep.relations.resolve import resolver
from zgrep.relations.store import RELATIONS_DB, is_ready
from zgrep.sqlitedb import connect
from zgrep.service import ErrorCode, FixedCodeError, ZgError
from zgrep.types import Definition

DEFAULT_DEPTH = 3
MAX_DEPTH = 10
MAX_TREE_NODES = 500
TRACE_EDGES = ("call",)


class RelationsError(FixedCodeError):
    """The relations cannot be queried; the message names the fix."""

    CODE = ErrorCode.NOT_INDEXED


def meaning(graph: Graph, use: Use) -> Match | None:
    """The definitions a use resolves to (Python by its scopes and types, others by imports); None =
    nothing here."""
    key = (use.path, use.name, use.qualifier, use.home, use.caller_qualname)
    if key not in graph.matches:
        by_scopes = resolver(graph.files.languages.get(use.path, "")).by_scopes
        graph.matches[key] = resolve(graph, use) if by_scopes else graph.generic(use)
    return graph.matches[key]


def callers_of(
    graph: Graph,
    definitions: list[Definition],
    edges: tuple[str, ...] = EDGE_KINDS,
    unknown_receivers: bool = False,
) -> list[Caller]:
    """The definitions (or module code) whose code uses one of `definitions` by an edge of `edges`;
    with `unknown_receivers`, also `obj.name` uses of a method's name on an object of unknown type
    (resolved: false)."""
    wanted = set(definitions)
    methods = [d for d in definitions if d.scope and d.kind == "function"]
    names = {d.name for d in definitions}
    aliases = {
        alias
        for (alias,) in graph.db.execute(
            f"SELECT DISTINCT alias FROM imports WHERE name IN ({','.join('?' * len(names))})",
            sorted(names),
        )
    }
    used = sorted(names | aliases)
    where = f"name IN ({','.join('?' * len(used))}) AND kind IN ({','.join('?' * len(edges))})"
    found: dict[tuple[str, int, str], Caller] = {}
    for use in graph.uses(where, (*used, *edges)):
        match = meaning(graph, use)
        hits = [d for d in match.defs if d in wanted] if match is not None else []
        if match is not None and match.via == UNKNOWN_RECEIVER and unknown_receivers:
            hits = [d for d in methods if d.name == use.name]
        if match is None or not hits:
            continue
        key = (use.path, use.caller_start, use.caller_name)
        entry = found.get(key)
        if entry is None:
            found[key] = {
                "path": use.path,
                "start_line": use.caller_start,
                "end_line": use.caller_end,
                "symbol": use.caller_name,
                "scope": use.caller_scope or None,
                "kind": use.caller_kind,
                "line": use.line,
                "resolved": match.resolved,
                "via": match.via,
                "targets": sorted({d.path for d in hits}),
                "edge": use.kind,
                "edges": [use.kind],
            }
            continue
        if use.kind not in entry["edges"]:
            entry["edges"] = sorted({*entry["edges"], use.kind}, key=EDGE_KINDS.index)
            entry["edge"] = strongest(set(entry["edges"]))
        entry["targets"] = sorted({*entry["targets"], *(d.path for d in hits)})
        if match.resolved and not entry["resolved"]:
            entry.update({"line": use.line, "resolved": True, "via": match.via})
    return sorted(found.values(), key=lambda c: (c["path"], c["start_line"], c["line"]))


def callees_of(
    graph: Graph, definition: Definition, edges: tuple[str, ...] = TRACE_EDGES
) -> list[tuple[Definition, Use, Match]]:
    """The definitions `definition`'s own code uses by an edge of `edges` (calls reach no plain
    values)."""
    out: list[tuple[Definition, Use, Match]] = []
    seen: set[Definition] = set()
    where = f"path = ? AND caller_start = ? AND caller_name = ? AND kind IN ({','.join('?' * len(edges))})"
    for use in graph.uses(where, (definition.path, definition.start, definition.name, *edges)):
        match = meaning(graph, use)
        if match is None:
            continue
        for callee in match.defs:
            if callee not in seen and not (use.kind == "call" and callee.kind == "value"):
                seen.add(callee)
                out.append((callee, use, match))
    return out


def find_definitions(graph: Graph, symbol: str, source_file: str | None) -> list[Definition]:
    """Definitions of SYMBOL (`name`, `Scope.name`, or `PATH:name`), in `source_file` when given."""
    if ":" in symbol and "::" not in symbol:
        source_file, symbol = symbol.rsplit(":", 1)
    name, scope = symbol, ""
    for sep in ("::", "."):
        if sep in symbol:
            scope, _, name = symbol.rpartition(sep)
            scope = scope.replace("::", ".")
            break
    found = graph.defs(name)
    if scope:
        found = [d for d in found if d.scope == scope or d.scope.endswith("." + scope)]
    if source_file:
        found = [d for d in found if d.path == stored_path(source_file)]
    return found


def stored_path(path: str) -> str:
    """A workspace-relative path as typed (`./a.py`, `/a.py`) in the form the relations store it
    (`a.py`)."""
    return path.strip("/").removeprefix("./")


def open_graph(root: Path) -> tuple[Graph, sqlite3.Connection]:
    """The workspace's relations, or RelationsError naming what to run."""
    path = root / ".zgrep" / RELATIONS_DB
    if not is_ready(path):
        raise RelationsError("code relations are missing or from an older zgrep; run: zg index")
    db = connect(path, readonly=True)
    return Graph(db), db


def callers(
    root: Path,
    symbol: str,
    source_file: str | None = None,
    limit: int | None = None,
    edges: tuple[str, ...] = EDGE_KINDS,
) -> CallersResult:
    """The `callers` result: SYMBOL's definitions and who uses them (by an edge of `edges`)."""
    graph, db = open_graph(root)
    try:
        definitions = find_definitions(graph, symbol, source_file)
        found = callers_of(graph, definitions, edges, unknown_receivers=True) if definitions else []
    finally:
        db.close()
    result: CallersResult = {
        "root": str(root),
        "symbol": symbol,
        "source_file": source_file,
        "definitions": [d.to_json() for d in definitions],
        "callers": found,
        "total": len(found),
    }
    if limit is not None:
        result["callers"] = found[:limit]
    return result


def trace(
    root: Path,
    entry: str,
    direction: str = "backward",
    depth: int = DEFAULT_DEPTH,
    source_file: str | None = None,
    edges: tuple[str, ...] = TRACE_EDGES,
) -> TraceResult:
    """The `trace` result: a call tree from ENTRY (edges of `edges`), breadth-first to `depth`,
    cycles cut."""
    if direction not in ("backward", "forward"):
        raise ZgError(
            ErrorCode.BAD_REQUEST, f"direction must be backward or forward, not {direction!r}"
        )
    graph, db = open_graph(root)
    try:
        roots = find_definitions(graph, entry, source_file)
        branches = _tree(graph, roots, direction, depth, edges) if roots else None
    finally:
        db.close()
    tree: TraceNode | None = None
    if branches is not None and len(roots) > 1:
        tree = {"symbol": entry, "ambiguous": True, "children": branches}
    elif branches is not None:
        tree = branches[0]
    return {
        "root": str(root),
        "entry": entry,
        "direction": direction,
        "depth": depth,
        "edges": list(edges),
        "tree": tree,
    }


def _tree(
    graph: Graph, roots: list[Definition], direction: str, depth: int, edges: tuple[str, ...]
) -> list[TraceNode]:
    """Breadth-first expansion; a definition is expanded once, later meetings are marked."""
    nodes: list[TraceNode] = [{**d.to_json(), "children": []} for d in roots]
    queue = deque((node, d, 0, frozenset({d})) for node, d in zip(nodes, roots))
    expanded: set[Definition] = set()
    count = len(nodes)
    while queue:
        node, definition, level, ancestors = queue.popleft()
        if definition in expanded:
            node["seen"] = True
            continue
        expanded.add(definition)
        if level >= depth:
            continue
        for child_def, line, resolved, via, edge in _neighbours(
            graph, definition, direction, edges
        ):
            if count >= MAX_TREE_NODES:
                node["truncated"] = True
                break
            count += 1
            child: TraceNode = {
                **child_def.to_json(),
                "line": line,
                "resolved": resolved,
                "via": via,
                "edge": edge,
                "children": [],
            }
            node["children"].append(child)
            if child_def in ancestors:
                child["cycle"] = True
            elif child_def.name:
                queue.append((child, child_def, level + 1, ancestors | {child_def}))
    return nodes


def _neighbours(
    graph: Graph, definition: Definition, direction: str, edges: tuple[str, ...]
) -> list[tuple[Definition, int, bool, str, str]]:
    """Callers (backward) or callees (forward) of one definition, with the line, resolution and edge
    kind."""
    if direction == "forward":
        return [
            (d, use.line, m.resolved, m.via, use.kind)
            for d, use, m in callees_of(graph, definition, edges)
        ]
    return [
        (Definition.from_json(c), c["line"], c["resolved"], c["via"], c["edge"])
        for c in callers_of(graph, [definition], edges)
    ]


def parse_edges(value: list[str] | str | None, default: tuple[str, ...]) -> tuple[str, ...]:
    """The `edges` argument (a list, or a comma-separated string; "all" = every kind); BAD_REQUEST
    naming kinds."""
    if value is None or value == [] or value == "":
        return default
    items = value.split(",") if isinstance(value, str) else list(value)
    kinds: list[str] = []
    for item in (str(i).strip() for i in items):
        if item == "all":
            kinds += EDGE_KINDS
        elif item in EDGE_KINDS:
            kinds.append(item)
        else:
            raise ZgError(
                ErrorCode.BAD_REQUEST,
                f"--edges: unknown kind {item!r}; use {','.join(EDGE_KINDS)} or all",
            )
    return tuple(k for k in EDGE_KINDS if k in kinds)


def _symbol(value: str | None) -> str:
    """The SYMBOL / ENTRY argument; ZgError(BAD_REQUEST) when it is empty."""
    if not isinstance(value, str) or not value.strip():
        raise ZgError(
            ErrorCode.BAD_REQUEST, "empty symbol: give a name, e.g. zg callers retry_with_backoff"
        )
    return value


def _source_file(value: Any) -> str | None:
    """The --source-file argument (a path, or null); ZgError(BAD_REQUEST) for anything else."""
    if value is not None and not isinstance(value, str):
        raise ZgError(ErrorCode.BAD_REQUEST, "--source-file must be a workspace-relative path")
    return value


def count_arg(flag: str, value: int | None, low: int, high: int | None = None) -> int | None:
    """An integer argument in [low, high], None when absent; ZgError(BAD_REQUEST) naming the flag
    otherwise."""
    if value is None:
        return None
    if (
        isinstance(value, bool)
        or not isinstance(value, int)
        or value < low
        or (high is not None and value > high)
    ):
        raise ZgError(
            ErrorCode.BAD_REQUEST,
            f"--{flag} must be at least {low}"
            if high is None
            else f"--{flag} must be {low} to {high}",
        )
    return value


def indexed_root(engine: Engine) -> Path:
    """The workspace root, once it has been indexed (the relations are written with the index)."""
    if engine.manifest() is None:
        raise ZgError(ErrorCode.NOT_INDEXED, "not indexed; run zg index")
    return engine.ws.root


def run_callers(
    engine: Engine, args: CallersArgs, progress: Progress | None = None
) -> CallersResult:
    """The `callers` op: needs only the relations database."""
    root = indexed_root(engine)
    return callers(
        root,
        _symbol(args.get("symbol")),
        _source_file(args.get("source_file")),
        count_arg("limit", args.get("limit"), 1),
        parse_edges(args.get("edges"), EDGE_KINDS),
    )


def run_trace(engine: Engine, args: TraceArgs, progress: Progress | None = None) -> TraceResult:
    """The `trace` op: needs only the relations database."""
    root = indexed_root(engine)
    return trace(
        root,
        _symbol(args.get("entry")),
        args.get("direction") or "backward",
        count_arg("depth", args.get("depth"), 1, MAX_DEPTH) or DEFAULT_DEPTH,
        _source_file(args.get("source_file")),
        parse_edges(args.get("edges"), TRACE_EDGES),
    )
