"""Answer search requests: refresh, filter, run the routes, fuse, rerank, shape hits."""

from __future__ import annotations

import math
import os
import re
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from collections.abc import Callable
from typing import Any

from zgrep.config import MAXIMUMS
from zgrep.contracts import SearchArgs, SearchGroup, SearchHit, SearchResult
from zgrep.engine import Engine
from zgrep.index.discovery import LoadedFile, read_file
from zgrep.index.run import run_index
from zgrep.progress import Progress
from zgrep.search.filters import SearchFilter
from zgrep.search.rank import QUALIFIER, RankSettings, fuse, path_matches, rerank, unsupported
from zgrep.search.spans import GapCheck, Span, add, span_of
from zgrep.search.text import STOPWORDS, lexical_query, split_identifier
from zgrep.service import ErrorCode, ZgError
from zgrep.types import RouteHit

SEARCH_MODES = ("hybrid", "semantic", "lexical")
PREVIEWS = ("none", "short", "full")
MAX_QUERY_CHARS = 2000
MAX_LIMIT = int(MAXIMUMS["search.limit"])  # hits per query: the widest pool (x3, x5 with path filters) stays under Milvus's top-k
MAX_EPOCH_S = 1e12  # --modified-after/-before beyond ~33,000 years overflow Milvus's int64 mtime expressions
SHORT_PREVIEW_LINES = 4
MAX_SYMBOL_NAMES = 16
PATH_ROUTE_FILES = 20
POST_FILTER_POOL_FACTOR = 5  # wider candidate pools when path filters are applied after retrieval
_CONTAINER_KINDS = ("class", "interface")  # a chunk of one of these holds its members
_CODE_LIKE = re.compile(r"[_.]|[a-z0-9][A-Z]|[A-Z]{2,}[a-z]")
_COMPOUND = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")  # one identifier, unqualified
_SEPARATORS = re.compile(r"[_\-]")
_CALLS: ThreadPoolExecutor | None = None
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:(?:\.|::)[A-Za-z_][A-Za-z0-9_]*)*")


def run_search(engine: Engine, args: SearchArgs, progress: Progress | None = None) -> SearchResult:
    """Search the workspace for one or several queries (SPEC JSON contract, minus `mode`)."""
    started = time.monotonic()
    if (args.get("refresh") or "wait") != "wait":  # (a refreshing search verifies the index as it runs)
        engine.verify_store()
    queries = [q for q in (args.get("queries") or [])]
    if not queries or any(not isinstance(q, str) or not q.strip() for q in queries):
        raise ZgError(ErrorCode.BAD_REQUEST, "empty query: give search text, e.g. zg search \"retry with backoff\"")
    search_mode = args.get("search_mode") or "hybrid"
    if search_mode not in SEARCH_MODES:
        raise ZgError(ErrorCode.BAD_REQUEST,
                      f"unknown search mode {search_mode!r}; choose from {', '.join(SEARCH_MODES)}")
    preview = args.get("preview") or "short"
    if preview not in PREVIEWS:
        raise ZgError(ErrorCode.BAD_REQUEST, f"unknown preview {preview!r}; choose from {', '.join(PREVIEWS)}")
    limit_arg = args.get("limit")
    limit = engine.config["search.limit"] if limit_arg is None else limit_arg
    if not limit >= 1:  # (NaN too)
        raise ZgError(ErrorCode.BAD_REQUEST, "--limit must be at least 1")
    if limit > MAX_LIMIT:
        raise ZgError(ErrorCode.BAD_REQUEST, f"--limit must be at most {MAX_LIMIT} (got {limit})")
    limit = int(limit)
    after, before = args.get("modified_after"), args.get("modified_before")
    if after is not None and before is not None and after >= before:
        raise ZgError(ErrorCode.BAD_REQUEST,
                      "--modified-after must be earlier than --modified-before (no file can match both)")
    filters = SearchFilter.from_args(args)
    filters.paths = _check_scope(engine, filters.paths, args)
    _ensure_index(engine, args, progress)
    expr, possible, post_filter = filters.expression(engine.files().keys())
    admits = filters.admits_path if post_filter else None
    groups: list[SearchGroup] = []
    gap_blank = _blank_gaps(engine)  # one read of each hit file for all the queries
    generated = frozenset(path for path, record in engine.files().items() if record.generated)
    for query in queries:
        hits = (_search_one(engine, query[:MAX_QUERY_CHARS], search_mode, expr, limit, args, preview, admits,
                            gap_blank, generated) if possible else [])
        groups.append({"query": query, "hits": hits})
    took_ms = round((time.monotonic() - started) * 1000, 1)
    root = str(engine.ws.root)
    if len(groups) == 1:
        return {"query": groups[0]["query"], "root": root, "took_ms": took_ms, "hits": groups[0]["hits"]}
    locations = {(h["path"], h["start_line"], h["end_line"]) for g in groups for h in g["hits"]}
    return {"root": root, "took_ms": took_ms, "groups": groups, "distinct_locations": len(locations)}


def _check_scope(engine: Engine, paths: list[str], args: SearchArgs) -> list[str]:
    """Workspace-relative --path values; refuses ones outside the workspace or naming nothing
    there, and scores outside 0-1."""
    root = engine.ws.root
    scoped = []
    for rel in paths:
        target = Path(os.path.normpath(root / rel))
        if not target.is_relative_to(root):
            raise ZgError(ErrorCode.BAD_REQUEST, f"--path {rel} is outside the workspace {root}")
        if not target.exists():
            raise ZgError(ErrorCode.BAD_REQUEST, f"--path {rel}: no such file or directory in {root}")
        if target != root:
            scoped.append(target.relative_to(root).as_posix())
    for flag, value in (("min-score", args.get("min_score")), ("min-score-diff", args.get("min_score_diff"))):
        if value is not None and not 0.0 <= float(value) <= 1.0:
            raise ZgError(ErrorCode.BAD_REQUEST, f"--{flag} must lie between 0 and 1 (got {value})")
    for flag, value in (("modified-after", args.get("modified_after")), ("modified-before", args.get("modified_before"))):
        if value is not None and not (math.isfinite(value) and abs(value) <= MAX_EPOCH_S):
            raise ZgError(ErrorCode.BAD_REQUEST, f"--{flag} must be a time in seconds (got {value})")
    return scoped


def _ensure_index(engine: Engine, args: SearchArgs, progress: Progress | None) -> None:
    refresh = args.get("refresh") or "wait"
    if engine.manifest() is None:
        if args.get("no_index"):
            raise ZgError(ErrorCode.NOT_INDEXED, f"{engine.ws.root} is not indexed yet; run: zg index")
        run_index(engine, {}, progress)
    elif refresh == "wait":
        run_index(engine, {}, progress)
    else:
        engine.check_manifest()


def _search_one(engine: Engine, query: str, search_mode: str, expr: str, limit: int, args: SearchArgs,
                preview: str, admits: Callable[[str], bool] | None, gap_blank: GapCheck,
                generated: frozenset[str]) -> list[SearchHit]:
    cfg = engine.config
    pool = max(cfg["search.candidates"], limit * 3) * (POST_FILTER_POOL_FACTOR if admits else 1)
    routes = _routes(engine, query, search_mode, expr, pool, admits)
    if admits is not None:
        routes = {name: [h for h in hits if admits(h.fields["path"])] for name, hits in routes.items()}
    # noise gets no hits; not a query of stop words only (no lexical terms to look for), nor one whose
    # words a filter merely hides (they are spelled in files outside it)
    if (unsupported(routes) and lexical_query(query)
            and not ((expr or admits) and _spelled_anywhere(engine, query))):
        return []
    if search_mode != "semantic" and _invented(engine, query, routes, bool(expr or admits)):
        return []
    settings = RankSettings(fusion=cfg["search.fusion"], rrf_k=cfg["search.rrf_k"], weights={
        "lexical": cfg["search.lexical_weight"], "semantic": cfg["search.dense_weight"],
        "symbol": cfg["search.symbol_weight"], "path": cfg["search.path_weight"]})
    ranked = rerank(query, fuse(routes, settings), generated=generated)
    wanted = set(_IDENT.findall(query)) | {part for token in _IDENT.findall(query) for part in QUALIFIER.split(token)}
    min_score = args.get("min_score")
    min_diff = args.get("min_score_diff")
    best = ranked[0].score if ranked else 0.0
    spans: list[Span] = []
    for cand in ranked:
        if min_score is not None and cand.score < float(min_score):
            continue
        if min_diff is not None and best - cand.score > float(min_diff):
            continue
        add(spans, span_of(cand.fields, cand.score, cand.routes), gap_blank)
        if len(spans) >= limit:
            break
    return [_hit(span, preview, wanted) for span in spans]


def _blank_gaps(engine: Engine) -> GapCheck:
    """Whether lines of an indexed file are all blank, read from disk only while the file is as indexed."""
    blank: dict[str, list[bool] | None] = {}

    def gap_blank(path: str, first: int, last: int) -> bool:
        if path not in blank:
            blank[path] = None
            record = engine.files().get(path)
            loaded = read_file(engine.ws.root, path, max_bytes=engine.config["index.max_file_bytes"])
            if record is not None and isinstance(loaded, LoadedFile) and loaded.sha256 == record.sha256:
                blank[path] = [not line.strip() for line in loaded.text.split("\n")]
        flags = blank[path]
        return flags is not None and last <= len(flags) and all(flags[first - 1:last])

    return gap_blank


def _routes(engine: Engine, query: str, search_mode: str, expr: str, pool: int,
            admits: Callable[[str], bool] | None) -> dict[str, list[RouteHit]]:
    """Run the retrieval routes the search mode selects; each returns hits in rank order."""
    store = engine.open_store(create=False)
    routes: dict[str, list[RouteHit]] = {}
    dense = None
    if search_mode in ("hybrid", "semantic"):  # the engine answers it while this thread runs the BM25 routes
        vector = [float(x) for x in engine.embedder.embed_query(query)]
        dense = _calls().submit(store.search_dense, vector, pool, expr)
    if search_mode in ("hybrid", "lexical"):
        text = lexical_query(query)
        names = symbol_candidates(query)
        named_text = lexical_query(" ".join(names))  # the query itself when it is only names
        routes["lexical"], named_hits = store.search_lexical_many([text, named_text], pool, expr)  # one call
        routes["symbol"] = store.search_symbols(names, pool, expr, named_text, named_hits)
        named = set(path_matches(query, [p for p in engine.files() if admits is None or admits(p)], PATH_ROUTE_FILES))
        # always present, so every query of a mode is normalised by the same route weights: the lexical hits
        # in the files the query names, ranked among themselves (a BM25 call filtered to those files cost a
        # Milvus call per search and ranked no better on the semble dev half)
        kept = [hit for hit in routes["lexical"] if hit.fields["path"] in named]
        routes["path"] = [RouteHit(hit.id, rank, hit.distance, hit.fields) for rank, hit in enumerate(kept)]
    if dense is not None:
        routes["semantic"] = dense.result()
    return routes


def _calls() -> ThreadPoolExecutor:
    """The threads that run one search's Milvus calls side by side (shared by every search of the process)."""
    global _CALLS
    if _CALLS is None:
        _CALLS = ThreadPoolExecutor(max_workers=4, thread_name_prefix="zg-route")
    return _CALLS


def _spelled_anywhere(engine: Engine, query: str) -> bool:
    """Whether any route but the dense one matches the query in the whole workspace, unfiltered."""
    store = engine.open_store(create=False)
    return bool(store.search_lexical(lexical_query(query), 1) or _symbol_hits(store, symbol_candidates(query))
                or path_matches(query, list(engine.files()), 1))


def _invented(engine: Engine, query: str, routes: dict[str, list[RouteHit]], filtered: bool) -> bool:
    """Whether the query is one compound identifier (`main_side_gamma`, `getUserName`) that no chunk BM25 finds
    for its parts spells, as grep would find it (inside a longer name too), in any case or separator style:
    each part may match (`main`), but the name is made up."""
    token = query.strip().lstrip("$@")
    if not _COMPOUND.fullmatch(token) or len(split_identifier(token)) < 2:
        return False
    joined = "".join(split_identifier(token))
    hits = routes.get("lexical") or []
    if filtered and not any(_spells(hit, joined) for hit in hits):  # the filter may hide where it is spelt
        hits = engine.open_store(create=False).search_lexical(lexical_query(query), len(hits) or 1)
    return not any(_spells(hit, joined) for hit in hits)


def _spells(hit: RouteHit, joined: str) -> bool:
    return joined in _SEPARATORS.sub("", str(hit.fields.get("content") or "").lower())


def _symbol_hits(store: Any, names: list[str]) -> bool:
    """Whether some chunk defines one of `names`."""
    return bool(store.search_symbols(names, 1, "", lexical_query(" ".join(names))))


def symbol_candidates(query: str) -> list[str]:
    """Identifiers in a query that look like code names (`parse_url`, `getUser`, `Flask.run`),
    or the query itself when it is a single word. A qualified name's last part comes first: it names
    the definition (`Rack::Response` is the class Response, not every `module Rack`)."""
    tokens = _IDENT.findall(query)
    single = len(query.split()) == 1
    names: list[str] = []
    for token in tokens:
        if not (single or _CODE_LIKE.search(token)):
            continue
        *qualifiers, last = QUALIFIER.split(token)
        for part in [last, token, *qualifiers]:
            if len(part) >= 3 and part.lower() not in STOPWORDS and part not in names:
                names.append(part)
    return names[:MAX_SYMBOL_NAMES]


def _hit(span: Span, preview: str, wanted: set[str]) -> SearchHit:
    """A search hit labelled with the definition its best chunk holds: a class's chunk is the class's even
    when the query named one of its members; of sibling definitions merged into one chunk, the one named."""
    f = span.fields
    symbol = f.get("symbol") or None
    if f.get("symbol_kind") not in _CONTAINER_KINDS and symbol not in wanted:
        symbol = next((n for n in f.get("names") or [] if n in wanted), symbol)
    content = span.content
    if preview == "none":
        text = ""
    elif preview == "short":
        text = "\n".join(content.splitlines()[:SHORT_PREVIEW_LINES])
    else:
        text = content
    return {
        "path": f["path"], "start_line": span.start, "end_line": span.end,
        "score": round(span.score, 4), "symbol": symbol, "symbol_kind": f.get("symbol_kind"),
        "scope": f.get("scope") or None, "language": f.get("language"), "matched_by": sorted(span.routes),
        "preview": text,
    }
