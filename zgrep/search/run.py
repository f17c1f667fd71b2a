"""Answer search requests: refresh, filter, run the routes, fuse, rerank, shape hits."""

from __future__ import annotations

import os
import re
import time
from pathlib import Path
from collections.abc import Callable
from typing import Any

from zgrep.engine import Engine, EngineError, Progress
from zgrep.search.filters import SearchFilter
from zgrep.search.rank import RankSettings, fuse, path_matches, rerank
from zgrep.search.text import STOPWORDS, lexical_query
from zgrep.store.expr import in_list
from zgrep.types import RouteHit

SEARCH_MODES = ("hybrid", "semantic", "lexical")
PREVIEWS = ("none", "short", "full")
MAX_QUERY_CHARS = 2000
SHORT_PREVIEW_LINES = 4
MAX_SYMBOL_NAMES = 16
PATH_ROUTE_FILES = 20
POST_FILTER_POOL_FACTOR = 5  # wider candidate pools when path filters are applied after retrieval
_CODE_LIKE = re.compile(r"[_.]|[a-z0-9][A-Z]|[A-Z]{2,}[a-z]")
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*")


def run_search(engine: Engine, args: dict[str, Any], progress: Progress | None) -> dict[str, Any]:
    """Search the workspace for one or several queries (SPEC JSON contract, minus `mode`)."""
    started = time.monotonic()
    queries = [q for q in (args.get("queries") or [])]
    if not queries or any(not isinstance(q, str) or not q.strip() for q in queries):
        raise EngineError("empty query: give search text, e.g. zg search \"retry with backoff\"", code="bad_request")
    search_mode = args.get("search_mode") or "hybrid"
    if search_mode not in SEARCH_MODES:
        raise EngineError(f"unknown search mode {search_mode!r}; choose from {', '.join(SEARCH_MODES)}", code="bad_request")
    preview = args.get("preview") or "short"
    if preview not in PREVIEWS:
        raise EngineError(f"unknown preview {preview!r}; choose from {', '.join(PREVIEWS)}", code="bad_request")
    limit = int(engine.config["search.limit"] if args.get("limit") is None else args["limit"])
    if limit < 1:
        raise EngineError("--limit must be at least 1", code="bad_request")
    filters = SearchFilter.from_args(args)
    filters.paths = _check_scope(engine, filters.paths, args)
    _ensure_index(engine, args, progress)
    expr, possible, post_filter = filters.expression(engine.files().keys())
    admits = filters.admits_path if post_filter else None
    groups = []
    for query in queries:
        hits = (_search_one(engine, query[:MAX_QUERY_CHARS], search_mode, expr, limit, args, preview, admits)
                if possible else [])
        groups.append({"query": query, "hits": hits})
    took_ms = round((time.monotonic() - started) * 1000, 1)
    root = str(engine.ws.root)
    if len(groups) == 1:
        return {"query": groups[0]["query"], "root": root, "took_ms": took_ms, "hits": groups[0]["hits"]}
    locations = {(h["path"], h["start_line"], h["end_line"]) for g in groups for h in g["hits"]}
    return {"root": root, "took_ms": took_ms, "groups": groups, "distinct_locations": len(locations)}


def _check_scope(engine: Engine, paths: list[str], args: dict[str, Any]) -> list[str]:
    """Workspace-relative --path values; refuses ones outside the workspace or naming nothing
    there, and scores outside 0-1."""
    root = engine.ws.root
    scoped = []
    for rel in paths:
        target = Path(os.path.normpath(root / rel))
        if not target.is_relative_to(root):
            raise EngineError(f"--path {rel} is outside the workspace {root}", code="bad_request")
        if not target.exists():
            raise EngineError(f"--path {rel}: no such file or directory in {root}", code="bad_request")
        if target != root:
            scoped.append(target.relative_to(root).as_posix())
    for name in ("min_score", "min_score_diff"):
        value = args.get(name)
        if value is not None and not 0.0 <= float(value) <= 1.0:
            raise EngineError(f"--{name.replace('_', '-')} must lie between 0 and 1 (got {value})", code="bad_request")
    return scoped


def _ensure_index(engine: Engine, args: dict[str, Any], progress: Progress | None) -> None:
    from zgrep.index.run import run_index

    refresh = args.get("refresh") or "wait"
    if engine.manifest() is None:
        if args.get("no_index"):
            raise EngineError(f"{engine.ws.root} is not indexed yet; run: zg index", code="not_indexed")
        run_index(engine, {}, progress)
    elif refresh == "wait":
        run_index(engine, {}, progress)
    else:
        engine.check_manifest()


def _search_one(engine: Engine, query: str, search_mode: str, expr: str, limit: int, args: dict[str, Any],
                preview: str, admits: Callable[[str], bool] | None) -> list[dict[str, Any]]:
    cfg = engine.config
    pool = max(cfg["search.candidates"], limit * 3) * (POST_FILTER_POOL_FACTOR if admits else 1)
    routes = _routes(engine, query, search_mode, expr, pool, admits)
    if admits is not None:
        routes = {name: [h for h in hits if admits(h.fields["path"])] for name, hits in routes.items()}
    settings = RankSettings(fusion=cfg["search.fusion"], rrf_k=cfg["search.rrf_k"], weights={
        "lexical": cfg["search.lexical_weight"], "semantic": cfg["search.dense_weight"],
        "symbol": cfg["search.symbol_weight"], "path": cfg["search.path_weight"]})
    ranked = rerank(query, fuse(routes, settings))
    min_score = args.get("min_score")
    min_diff = args.get("min_score_diff")
    best = ranked[0].score if ranked else 0.0
    wanted = set(_IDENT.findall(query)) | {part for token in _IDENT.findall(query) for part in token.split(".")}
    hits = []
    for cand in ranked:
        if min_score is not None and cand.score < float(min_score):
            continue
        if min_diff is not None and best - cand.score > float(min_diff):
            continue
        hits.append(_hit(cand, preview, wanted))
        if len(hits) >= limit:
            break
    return hits


def _routes(engine: Engine, query: str, search_mode: str, expr: str, pool: int,
            admits: Callable[[str], bool] | None) -> dict[str, list[RouteHit]]:
    """Run the retrieval routes the search mode selects; each returns hits in rank order."""
    store = engine.open_store(create=False)
    routes: dict[str, list[RouteHit]] = {}
    if search_mode in ("hybrid", "lexical"):
        text = lexical_query(query)
        routes["lexical"] = store.search_lexical(text, pool, expr)
        routes["symbol"] = store.search_symbols(symbol_candidates(query), pool, expr)
        named = path_matches(query, [p for p in engine.files() if admits is None or admits(p)], PATH_ROUTE_FILES)
        if named:
            clause = in_list("path", named)
            routes["path"] = store.search_lexical(text, pool, f"({expr}) and {clause}" if expr else clause)
    if search_mode in ("hybrid", "semantic"):
        vector = engine.embedder.embed_query(query)
        routes["semantic"] = store.search_dense([float(x) for x in vector], pool, expr)
    return routes


def symbol_candidates(query: str) -> list[str]:
    """Identifiers in a query that look like code names (`parse_url`, `getUser`, `Flask.run`),
    or the query itself when it is a single word."""
    tokens = _IDENT.findall(query)
    single = len(query.split()) == 1
    names: list[str] = []
    for token in tokens:
        if not (single or _CODE_LIKE.search(token)):
            continue
        for part in [token, *token.split(".")]:
            if len(part) >= 3 and part.lower() not in STOPWORDS and part not in names:
                names.append(part)
    return names[:MAX_SYMBOL_NAMES]


def _hit(cand: Any, preview: str, wanted: set[str]) -> dict[str, Any]:
    f = cand.fields
    symbol = f.get("symbol") or None
    if symbol not in wanted:
        symbol = next((n for n in f.get("names") or [] if n in wanted), symbol)
    content = f.get("content", "")
    if preview == "none":
        text = ""
    elif preview == "short":
        text = "\n".join(content.splitlines()[:SHORT_PREVIEW_LINES])
    else:
        text = content
    return {
        "path": f["path"], "start_line": int(f["start_line"]), "end_line": int(f["end_line"]),
        "score": round(cand.score, 4), "symbol": symbol, "symbol_kind": f.get("symbol_kind"),
        "scope": f.get("scope") or None, "language": f.get("language"), "matched_by": sorted(set(cand.routes)),
        "preview": text,
    }
