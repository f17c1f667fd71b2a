"""`callers` and `trace` over the relations database, resolving references through imports.

A reference counts for a definition in file F when the referencing file defines the name
itself (or its package does), imports it from F's module (following re-exports), or, failing
both, when exactly one file defines the name. Anything else is reported with resolved=false.
"""

from __future__ import annotations

import sqlite3
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from zgrep.contracts import CallersArgs, CallersResult, TraceArgs, TraceResult
from zgrep.engine import Engine
from zgrep.progress import Progress
from zgrep.relations.resolve import FileSet, local_files, module_files, submodule
from zgrep.relations.store import RELATIONS_DB, connect, is_ready
from zgrep.service import ErrorCode, FixedCodeError, ZgError

SELF_NAMES = frozenset({"self", "this", "cls", "Self", "super"})
DEFAULT_DEPTH = 3
MAX_DEPTH = 10
MAX_TREE_NODES = 500
_REEXPORT_DEPTH = 3


class RelationsError(FixedCodeError):
    """The relations cannot be queried; the message names the fix."""

    CODE = ErrorCode.NOT_INDEXED


@dataclass(frozen=True)
class Definition:
    """A row of `defs`."""

    path: str
    name: str
    scope: str
    kind: str
    start: int
    end: int

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "start_line": self.start, "end_line": self.end, "symbol": self.name,
                "scope": self.scope, "kind": self.kind}


@dataclass(frozen=True)
class Target:
    """What a reference means: the symbol's name and the files it may live in (None = anywhere)."""

    symbol: str
    files: set[str] | None
    via: str


@dataclass(frozen=True)
class Match:
    """The definitions a reference resolves to."""

    defs: list[Definition]
    resolved: bool
    via: str


class Graph:
    """Read-only view of one workspace's relations with per-query caches."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db
        self.files = FileSet(dict(db.execute("SELECT path, language FROM files")))
        self._defs: dict[str, list[Definition]] = {}
        self._imports: dict[str, list[tuple[str, str, str]]] = {}

    def defs(self, name: str) -> list[Definition]:
        """Every definition named `name`."""
        if name not in self._defs:
            self._defs[name] = [Definition(*row) for row in self.db.execute(
                "SELECT path, name, scope, kind, start_line, end_line FROM defs WHERE name = ? "
                "ORDER BY path, start_line", (name,))]
        return self._defs[name]

    def imports(self, path: str) -> list[tuple[str, str, str]]:
        """(module, name, alias) of the imports of `path`."""
        if path not in self._imports:
            self._imports[path] = list(self.db.execute(
                "SELECT module, name, alias FROM imports WHERE path = ? ORDER BY line", (path,)))
        return self._imports[path]

    # ----- resolution --------------------------------------------------------------------
    def target(self, path: str, name: str, qualifier: str) -> Target | None:
        """Where the name used in `path` (as `qualifier.name` when qualified) is defined."""
        language = self.files.languages.get(path, "")
        if qualifier and qualifier != "?":
            if qualifier in SELF_NAMES:
                return Target(name, local_files(self.files, path), "local")
            for module, imported, alias in self.imports(path):
                if alias and (qualifier == alias or qualifier.startswith((alias + ".", alias + "::"))):
                    rest = qualifier[len(alias):]
                    whole = submodule(language, module, imported) if imported else module
                    found = module_files(self.files, path, whole + rest) if whole else set()
                    if imported and not rest:
                        found |= module_files(self.files, path, module)
                    return Target(name, found, "import")
            found = module_files(self.files, path, qualifier)
            return Target(name, found, "import") if found else Target(name, None, "member")
        for module, imported, alias in self.imports(path):
            if alias == name and imported not in ("", "*"):
                symbol = name if imported == "default" else imported
                return Target(symbol, module_files(self.files, path, module), "import")
            if alias == name:
                return None  # the module object itself
        local = local_files(self.files, path)
        if any(d.path in local for d in self.defs(name)):
            return Target(name, local, "local")
        starred: set[str] = set()
        for module, imported, _ in self.imports(path):
            if imported == "*":
                starred |= module_files(self.files, path, module)
        if starred and any(d.path in starred for d in self.defs(name)):
            return Target(name, starred, "import")
        return Target(name, None, "fallback")

    def match(self, path: str, name: str, qualifier: str) -> Match | None:
        """The definitions a reference resolves to; None when it means nothing defined here."""
        target = self.target(path, name, qualifier)
        if target is None:
            return None
        candidates = self.defs(target.symbol)
        if not candidates:
            return None
        if target.files:
            found = self._follow(target.symbol, target.files, _REEXPORT_DEPTH)
            return Match(found, True, target.via) if found else None
        if target.files is not None:  # an import we could not place: never guess silently
            return Match(candidates, False, "unresolved_import")
        resolved = len({d.path for d in candidates}) == 1
        return Match(candidates, resolved, "unique" if resolved else "ambiguous")

    def _follow(self, symbol: str, files: set[str], depth: int) -> list[Definition]:
        """Definitions of `symbol` in `files`, else where those files re-export it from."""
        found = [d for d in self.defs(symbol) if d.path in files]
        if found or depth == 0:
            return found
        onward: set[str] = set()
        for path in sorted(files):
            for module, imported, alias in self.imports(path):
                if (alias == symbol and imported) or imported == "*":
                    onward |= module_files(self.files, path, module)
        onward -= files
        return self._follow(symbol, onward, depth - 1) if onward else []

    # ----- queries -----------------------------------------------------------------------
    def callers(self, definitions: list[Definition]) -> list[dict[str, Any]]:
        """The definitions (or module code) whose bodies reference one of `definitions`."""
        wanted = set(definitions)
        names = {d.name for d in definitions}
        aliases = {alias for (alias,) in self.db.execute(
            f"SELECT DISTINCT alias FROM imports WHERE name IN ({','.join('?' * len(names))})", sorted(names))}
        used = sorted(names | aliases)
        rows = self.db.execute(
            "SELECT path, name, qualifier, line, caller_name, caller_scope, caller_kind, caller_start, caller_end "
            f"FROM refs WHERE name IN ({','.join('?' * len(used))}) ORDER BY path, line", used)
        found: dict[tuple[str, int, str], dict[str, Any]] = {}
        for path, name, qualifier, line, c_name, c_scope, c_kind, c_start, c_end in rows:
            match = self.match(path, name, qualifier)
            if match is None:
                continue
            hits = [d for d in match.defs if d in wanted]
            if not hits:
                continue
            key = (path, c_start, c_name)
            entry = found.get(key)
            if entry is None:
                found[key] = {"path": path, "start_line": c_start, "end_line": c_end, "symbol": c_name,
                              "scope": c_scope, "kind": c_kind, "line": line, "resolved": match.resolved,
                              "via": match.via, "targets": sorted({d.path for d in hits})}
            elif match.resolved and not entry["resolved"]:
                entry.update(line=line, resolved=True, via=match.via)
        return sorted(found.values(), key=lambda c: (c["path"], c["start_line"], c["line"]))

    def callees(self, definition: Definition) -> list[tuple[Definition, int, Match]]:
        """The definitions `definition`'s body references, with the line and how each was resolved."""
        out: list[tuple[Definition, int, Match]] = []
        seen: set[Definition] = set()
        rows = self.db.execute("SELECT name, qualifier, line FROM refs WHERE path = ? AND caller_start = ? AND "
                               "caller_name = ? ORDER BY line", (definition.path, definition.start, definition.name))
        for name, qualifier, line in rows:
            match = self.match(definition.path, name, qualifier)
            if match is None:
                continue
            for callee in match.defs:
                if callee not in seen:
                    seen.add(callee)
                    out.append((callee, line, match))
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
        found = [d for d in found if d.path == source_file.strip("/").removeprefix("./")]
    return found


def open_graph(root: Path) -> tuple[Graph, sqlite3.Connection]:
    """The workspace's relations, or RelationsError naming what to run."""
    path = root / ".zgrep" / RELATIONS_DB
    if not is_ready(path):
        raise RelationsError("code relations are not built for this workspace yet; run: zg index")
    db = connect(path, readonly=True)
    return Graph(db), db


def callers(root: Path, symbol: str, source_file: str | None = None, limit: int | None = None) -> CallersResult:
    """The `callers` result: SYMBOL's definitions and who references them."""
    graph, db = open_graph(root)
    try:
        definitions = find_definitions(graph, symbol, source_file)
        found = graph.callers(definitions) if definitions else []
    finally:
        db.close()
    result: CallersResult = {"root": str(root), "symbol": symbol, "source_file": source_file,
                              "definitions": [d.to_json() for d in definitions], "callers": found,
                              "total": len(found)}
    if limit is not None:
        result["callers"] = found[:limit]
    return result


def trace(root: Path, entry: str, direction: str = "backward", depth: int = DEFAULT_DEPTH,
          source_file: str | None = None) -> TraceResult:
    """The `trace` result: a call tree from ENTRY, breadth-first to `depth`, cycles cut."""
    if direction not in ("backward", "forward"):
        raise ZgError(ErrorCode.BAD_REQUEST, f"direction must be backward or forward, not {direction!r}")
    graph, db = open_graph(root)
    try:
        roots = find_definitions(graph, entry, source_file)
        branches = _tree(graph, roots, direction, depth) if roots else None
    finally:
        db.close()
    tree: dict[str, Any] | None = None
    if branches is not None and len(roots) > 1:
        tree = {"symbol": entry, "ambiguous": True, "children": branches}
    elif branches is not None:
        tree = branches[0]
    return {"root": str(root), "entry": entry, "direction": direction, "depth": depth, "tree": tree}


def _tree(graph: Graph, roots: list[Definition], direction: str, depth: int) -> list[dict[str, Any]]:
    """Breadth-first expansion; a definition is expanded once, later meetings are marked."""
    nodes = [{**d.to_json(), "children": []} for d in roots]
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
        for child_def, line, resolved, via in _neighbours(graph, definition, direction):
            if count >= MAX_TREE_NODES:
                node["truncated"] = True
                break
            count += 1
            child = {**child_def.to_json(), "line": line, "resolved": resolved, "via": via, "children": []}
            node["children"].append(child)
            if child_def in ancestors:
                child["cycle"] = True
            elif child_def.name:
                queue.append((child, child_def, level + 1, ancestors | {child_def}))
    return nodes


def _neighbours(graph: Graph, definition: Definition, direction: str) -> list[tuple[Definition, int, bool, str]]:
    """Callers (backward) or callees (forward) of one definition."""
    if direction == "forward":
        return [(d, line, m.resolved, m.via) for d, line, m in graph.callees(definition)]
    return [(Definition(c["path"], c["symbol"], c["scope"], c["kind"], c["start_line"], c["end_line"]),
             c["line"], c["resolved"], c["via"]) for c in graph.callers([definition])]


def _symbol(value: str | None) -> str:
    """The SYMBOL / ENTRY argument; ZgError(BAD_REQUEST) when it is empty."""
    if not isinstance(value, str) or not value.strip():
        raise ZgError(ErrorCode.BAD_REQUEST, "empty symbol: give a name, e.g. zg callers retry_with_backoff")
    return value


def _count(flag: str, value: int | None, low: int, high: int | None = None) -> int | None:
    """An integer argument in [low, high], None when absent; ZgError(BAD_REQUEST) naming the flag otherwise."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < low or (high is not None and value > high):
        raise ZgError(ErrorCode.BAD_REQUEST,
                      f"--{flag} must be at least {low}" if high is None else f"--{flag} must be {low} to {high}")
    return value


def _indexed(engine: Engine) -> Path:
    """The workspace root, once it has been indexed (the relations are written with the index)."""
    if engine.manifest() is None:
        raise ZgError(ErrorCode.NOT_INDEXED, "not indexed; run zg index")
    return engine.ws.root


def run_callers(engine: Engine, args: CallersArgs, progress: Progress | None = None) -> CallersResult:
    """The `callers` op: needs only the relations database."""
    root = _indexed(engine)
    return callers(root, _symbol(args.get("symbol")), args.get("source_file"), _count("limit", args.get("limit"), 1))


def run_trace(engine: Engine, args: TraceArgs, progress: Progress | None = None) -> TraceResult:
    """The `trace` op: needs only the relations database."""
    root = _indexed(engine)
    return trace(root, _symbol(args.get("entry")), args.get("direction") or "backward",
                 _count("depth", args.get("depth"), 1, MAX_DEPTH) or DEFAULT_DEPTH, args.get("source_file"))
