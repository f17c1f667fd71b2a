"""`zg impact`: the definitions and files that reach changed definitions (depth-bounded), tests
listed apart.

Targets are `PATH` (every definition of the file), `PATH:SYMBOL`, or `PATH:START-END` (the
definitions overlapping those lines; `zg impact --staged` sends the staged hunks this way)."""

from __future__ import annotations

import re
from pathlib import Path

from zgrep.contracts import ImpactArgs, Impacted, ImpactResult
from zgrep.engine import Engine
from zgrep.filetypes import is_test
from zgrep.progress import Progress
from zgrep.relations.graph import Graph
from zgrep.relations.model import EDGE_KINDS
from zgrep.relations.query import (
    DEFAULT_DEPTH,
    MAX_DEPTH,
    MAX_TREE_NODES,
    callers_of,
    count_arg,
    find_definitions,
    indexed_root,
    open_graph,
    parse_edges,
    stored_path,
)
from zgrep.service import ErrorCode, ZgError
from zgrep.types import Definition

IMPACT_EDGES = tuple(k for k in EDGE_KINDS if k != "annotation")
_RANGE = re.compile(r"(\d+)-(\d+)")


def changed_definitions(graph: Graph, target: str) -> list[Definition]:
    """The definitions one target names; ZgError(BAD_REQUEST) for a file the relations do not know."""
    path, rest = _path(target), target.partition(":")[2]
    if path not in graph.files.languages:
        raise ZgError(
            ErrorCode.BAD_REQUEST,
            f"{path} is not an indexed file; give a workspace-relative path "
            "(run zg index if it is new)",
        )
    span = _RANGE.fullmatch(rest)
    if rest and not span:
        return find_definitions(graph, rest, path)
    defs = graph.defs_in(path)
    if span is None:
        return defs
    low, high = int(span.group(1)), int(span.group(2))
    overlapping = [d for d in defs if d.start <= high and low <= d.end]
    innermost = [
        d
        for d in overlapping
        if not any(o != d and d.start <= o.start and o.end <= d.end for o in overlapping)
    ]
    return innermost


def _path(target: str) -> str:
    return stored_path(target.partition(":")[0])


def impact(
    root: Path,
    targets: list[str],
    depth: int = DEFAULT_DEPTH,
    edges: tuple[str, ...] = IMPACT_EDGES,
    staged: bool = False,
) -> ImpactResult:
    """Breadth-first over callers from the changed definitions; each definition once, at its nearest
    distance; at most MAX_TREE_NODES of them (`truncated` says when more reach them). `staged`:
    targets in files the relations do not know (not indexed yet, or not code) are skipped, not an
    error."""
    graph, db = open_graph(root)
    try:
        known = [t for t in targets if not staged or _path(t) in graph.files.languages]
        changed = list(dict.fromkeys(d for t in known for d in changed_definitions(graph, t)))
        reached: dict[tuple[str, int, str], Impacted] = {}
        seen = set(changed)
        frontier = changed
        truncated = False
        for distance in range(1, depth + 1):
            following: list[Definition] = []
            for definition in frontier:
                if truncated:
                    break
                for c in callers_of(graph, [definition], edges):
                    key = (c["path"], c["start_line"], c["symbol"])
                    truncated = truncated or (len(reached) >= MAX_TREE_NODES and key not in reached)
                    if key in reached or truncated:
                        continue
                    caller = Definition.from_json(c)
                    if caller in seen:
                        continue
                    reached[key] = {
                        **caller.to_json(),
                        "line": c["line"],
                        "edge": c["edge"],
                        "distance": distance,
                        "reaches": definition.qualname,
                        "resolved": c["resolved"],
                        "test": is_test(c["path"]),
                    }
                    seen.add(caller)
                    if caller.name:
                        following.append(caller)
            frontier = following
    finally:
        db.close()
    found = sorted(reached.values(), key=lambda e: (e["distance"], e["path"], e["start_line"]))
    tests = [e for e in found if e["test"]]
    return {
        "root": str(root),
        "targets": targets,
        "depth": depth,
        "edges": list(edges),
        "changed": [d.to_json() for d in changed],
        "impacted": [e for e in found if not e["test"]],
        "tests": tests,
        "files": sorted({e["path"] for e in found if not e["test"]}),
        "test_files": sorted({e["path"] for e in tests}),
        "total": len(found),
        "truncated": truncated,
        "skipped": sorted({_path(t) for t in targets} - {_path(t) for t in known}),
    }


def run_impact(engine: Engine, args: ImpactArgs, progress: Progress | None = None) -> ImpactResult:
    """The `impact` op: needs only the relations database. A staged change may be empty (nothing
    staged): the result then has every field, its lists empty."""
    root = indexed_root(engine)
    targets, staged = args.get("targets") or [], args.get("staged") is True
    if (
        not isinstance(targets, list)
        or not all(isinstance(t, str) and t.strip() for t in targets)
        or not (targets or staged)
    ):
        raise ZgError(
            ErrorCode.BAD_REQUEST,
            "nothing to assess: give PATH, PATH:SYMBOL or PATH:START-END, or --staged",
        )
    return impact(
        root,
        targets,
        count_arg("depth", args.get("depth"), 1, MAX_DEPTH) or DEFAULT_DEPTH,
        parse_edges(args.get("edges"), IMPACT_EDGES),
        staged,
    )
