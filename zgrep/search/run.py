"""Answer search requests: refresh, filter, run the routes, fuse, rerank, shape hits."""

from __future__ import annotations

import math
import os
import re
import shlex
import threading
import time
import weakref
from collections import OrderedDict
from concurrent.futures import ThreadPoolExecutor
from functools import lru_cache
from pathlib import Path
from collections.abc import Callable
from typing import Any

from zgrep.config import MAXIMUMS
from zgrep.contracts import SearchArgs, SearchGroup, SearchHit, SearchResult
from zgrep.embedding.base import Embedder
from zgrep.engine import Engine
from zgrep import git
from zgrep.index import discovery
from zgrep.index.discovery import LoadedFile, read_file
from zgrep.index.ignore import IgnoreRules
from zgrep.progress import Progress
from zgrep.search.filters import SearchFilter
from zgrep.search.rank import QUALIFIER, RankSettings, fuse, path_matches, rerank, unsupported
from zgrep.search.spans import GapCheck, Span, add, add_apart, span_of
from zgrep.search.text import STOPWORDS, lexical_query, split_identifier
from zgrep.service import ErrorCode, ZgError
from zgrep.types import RouteHit
from zgrep.vocab import PREVIEWS, SEARCH_MODES
from zgrep.workspace import WorkspaceError

MAX_QUERY_CHARS = 2000
# hits per query: the widest pool (x3, x5 with path filters) stays under Milvus's top-k
MAX_LIMIT = int(MAXIMUMS["search.limit"])
# --modified-after/-before beyond ~33,000 years overflow Milvus's int64 mtime expressions
MAX_EPOCH_S = 1e12
SHORT_PREVIEW_LINES = 4
MAX_CONTEXT_LINES = 100  # -A/-B/-C
# a first search outside git indexes at most this many files without being asked
UNASKED_TREE_FILES = 2000
MAX_SYMBOL_NAMES = 16
PATH_ROUTE_FILES = 20
DEFINITION_CACHE = 512  # hit contents whose definitions are kept (a few MB at most)
QUERY_VECTORS = 256  # queries whose vectors each model keeps (a few KB each)
POST_FILTER_POOL_FACTOR = 5  # wider candidate pools when path filters are applied after retrieval
_CONTAINER_KINDS = ("class", "interface")  # a chunk of one of these holds its members
_CODE_LIKE = re.compile(r"[_.]|[a-z0-9][A-Z]|[A-Z]{2,}[a-z]")
_COMPOUND = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")  # one identifier, unqualified
_SEPARATORS = re.compile(r"[_\-]")
_CALLS: ThreadPoolExecutor | None = None
# each model's vectors of its last QUERY_VECTORS queries, oldest first (gone with the model)
_VECTORS: weakref.WeakKeyDictionary[Embedder, OrderedDict[str, tuple[float, ...]]] = (
    weakref.WeakKeyDictionary()
)
_VECTORS_LOCK = threading.Lock()
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:(?:\.|::)[A-Za-z_][A-Za-z0-9_]*)*")


def run_search(engine: Engine, args: SearchArgs, progress: Progress | None = None) -> SearchResult:
    """Search the workspace for one or several queries (SPEC JSON contract, minus `mode`)."""
    started = time.monotonic()
    # (a refreshing search verifies the index as it runs)
    if (args.get("refresh") or "wait") != "wait":
        engine.verify_store()
    queries = [q for q in (args.get("queries") or [])]
    if not queries or any(not isinstance(q, str) or not q.strip() for q in queries):
        raise ZgError(
            ErrorCode.BAD_REQUEST,
            'empty query: give search text, e.g. zg search "retry with backoff"',
        )
    search_mode = args.get("search_mode") or "hybrid"
    if search_mode not in SEARCH_MODES:
        raise ZgError(
            ErrorCode.BAD_REQUEST,
            f"unknown search mode {search_mode!r}; choose from {', '.join(SEARCH_MODES)}",
        )
    preview = args.get("preview") or "short"
    if preview not in PREVIEWS:
        raise ZgError(
            ErrorCode.BAD_REQUEST, f"unknown preview {preview!r}; choose from {', '.join(PREVIEWS)}"
        )
    limit_arg = args.get("limit")
    limit = engine.config.search.limit if limit_arg is None else limit_arg
    if not limit >= 1:  # (NaN too)
        raise ZgError(ErrorCode.BAD_REQUEST, "--limit must be at least 1")
    if limit > MAX_LIMIT:
        raise ZgError(ErrorCode.BAD_REQUEST, f"--limit must be at most {MAX_LIMIT} (got {limit})")
    limit = int(limit)
    after, before = args.get("modified_after"), args.get("modified_before")
    if after is not None and before is not None and after >= before:
        raise ZgError(
            ErrorCode.BAD_REQUEST,
            "--modified-after must be earlier than --modified-before (no file can match both)",
        )
    context = _context_lines(args)
    filters = SearchFilter.from_args(args)
    filters.paths = _check_scope(engine, filters.paths, args)
    _open_ahead(engine)
    _ensure_index(engine, args, progress)
    expr, possible, post_filter = filters.expression(engine.files().keys())
    # an index without chunks has nothing to find (and the native engine's BM25 is NaN over an empty
    # collection)
    possible = possible and any(record.chunks for record in engine.files().values())
    admits = filters.admits_path if post_filter else None
    groups: list[SearchGroup] = []
    file_lines = _indexed_lines(engine)  # one read of each hit file for all the queries
    generated = frozenset(path for path, record in engine.files().items() if record.generated)
    for query in queries:
        hits = (
            _search_one(
                engine,
                query[:MAX_QUERY_CHARS],
                search_mode,
                expr,
                limit,
                args,
                preview,
                admits,
                file_lines,
                context,
                generated,
            )
            if possible
            else []
        )
        groups.append({"query": query, "hits": hits})
    took_ms = round((time.monotonic() - started) * 1000, 1)
    root = str(engine.ws.root)
    if len(groups) == 1:
        return {
            "query": groups[0]["query"],
            "root": root,
            "took_ms": took_ms,
            "hits": groups[0]["hits"],
        }
    locations = {(h["path"], h["start_line"], h["end_line"]) for g in groups for h in g["hits"]}
    return {
        "root": root,
        "took_ms": took_ms,
        "groups": groups,
        "distinct_locations": len(locations),
    }


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
            raise ZgError(
                ErrorCode.BAD_REQUEST, f"--path {rel}: no such file or directory in {root}"
            )
        if target != root:
            scoped.append(target.relative_to(root).as_posix())
    for flag, value in (
        ("min-score", args.get("min_score")),
        ("min-score-diff", args.get("min_score_diff")),
    ):
        if value is not None and not 0.0 <= float(value) <= 1.0:
            raise ZgError(ErrorCode.BAD_REQUEST, f"--{flag} must lie between 0 and 1 (got {value})")
    for flag, value in (
        ("modified-after", args.get("modified_after")),
        ("modified-before", args.get("modified_before")),
    ):
        if value is not None and not (math.isfinite(value) and abs(value) <= MAX_EPOCH_S):
            raise ZgError(
                ErrorCode.BAD_REQUEST, f"--{flag} must be a time in seconds (got {value})"
            )
    return scoped


def _context_lines(args: SearchArgs) -> tuple[int, int]:
    """(-B, -A): lines of the file shown before and after a hit's preview."""
    out = []
    for flag, key in (("-B", "context_before"), ("-A", "context_after")):
        value = args.get(key) or 0
        if not (isinstance(value, int) and 0 <= value <= MAX_CONTEXT_LINES):
            raise ZgError(
                ErrorCode.BAD_REQUEST,
                f"{flag} takes a number of lines from 0 to {MAX_CONTEXT_LINES} (got {value})",
            )
        out.append(value)
    return out[0], out[1]


def refuse_unasked_tree(engine: Engine, args: SearchArgs | dict[str, Any]) -> None:
    """A first search outside git indexes a big tree only when asked (`--yes`, or `zg index PATH`):
    a scratch folder of unrelated projects is not one workspace."""
    root = engine.ws.root
    if args.get("yes") or git.is_git_repo(root):
        return
    rules = IgnoreRules.for_root(root, include_hidden=engine.config.index.include_hidden)
    count = len(discovery.list_files(root, rules))
    if count > UNASKED_TREE_FILES:
        raise ZgError(
            ErrorCode.BAD_REQUEST,
            f"{root} is not a git repository and holds {count} files (over {UNASKED_TREE_FILES}); "
            f"index it on purpose with: zg index {shlex.quote(str(root))} (or search with --yes)",
        )


def _open_ahead(engine: Engine) -> None:
    """Begin opening the store of an index with chunks: its engine starts and pymilvus is imported
    while the index refreshes and the model loads (a search of an index without chunks never asks
    the engine)."""
    try:
        wanted = engine.manifest() is not None and any(
            record.chunks for record in engine.files().values()
        )
    except WorkspaceError:  # the refresh reports it
        return
    if wanted:
        engine.prepare_store()


def _ensure_index(engine: Engine, args: SearchArgs, progress: Progress | None) -> None:
    from zgrep.index.run import (
        run_index,
    )  # (chunking and tree-sitter: imported once the store is being opened)

    refresh = args.get("refresh") or "wait"
    if engine.manifest() is None:
        if args.get("no_index"):
            raise ZgError(
                ErrorCode.NOT_INDEXED, f"{engine.ws.root} is not indexed yet; run: zg index"
            )
        refuse_unasked_tree(engine, args)
        run_index(engine, {}, progress)
    elif refresh == "wait":
        run_index(engine, {}, progress)
    else:
        engine.check_manifest()


def _search_one(
    engine: Engine,
    query: str,
    search_mode: str,
    expr: str,
    limit: int,
    args: SearchArgs,
    preview: str,
    admits: Callable[[str], bool] | None,
    file_lines: FileLines,
    context: tuple[int, int],
    generated: frozenset[str],
) -> list[SearchHit]:
    cfg = engine.config
    pool = max(cfg.search.candidates, limit * 3) * (POST_FILTER_POOL_FACTOR if admits else 1)
    # read from SQLite while the routes run
    file_scores = (
        _calls().submit(_file_scores, engine, query) if search_mode != "semantic" else None
    )
    routes = _routes(engine, query, search_mode, expr, pool, admits)
    if admits is not None:
        routes = {
            name: [h for h in hits if admits(h.fields["path"])] for name, hits in routes.items()
        }
    # noise gets no hits; not a query of stop words only (no lexical terms to look for), nor one
    # whose words a filter merely hides (they are spelled in files outside it)
    if (
        unsupported(routes)
        and lexical_query(query)
        and not ((expr or admits) and _spelled_anywhere(engine, query))
    ):
        return []
    if search_mode != "semantic" and _invented(engine, query, routes, bool(expr or admits)):
        return []
    settings = RankSettings(
        fusion=cfg.search.fusion,
        rrf_k=cfg.search.rrf_k,
        weights={
            "lexical": cfg.search.lexical_weight,
            "semantic": cfg.search.dense_weight,
            "symbol": cfg.search.symbol_weight,
            "path": cfg.search.path_weight,
        },
    )
    ranked = rerank(
        query,
        fuse(routes, settings),
        generated=generated,
        file_scores=file_scores.result() if file_scores is not None else None,
    )
    wanted = set(_IDENT.findall(query)) | {
        part for token in _IDENT.findall(query) for part in QUALIFIER.split(token)
    }
    min_score = args.get("min_score")
    min_diff = args.get("min_score_diff")
    best = ranked[0].score if ranked else 0.0
    gap_blank = _gap_check(file_lines)
    # the best candidates, as many as the default --limit, merge into spans:
    merging = int(cfg.search.limit)
    # later ones stay apart, so a hit's range and label are the same whatever --limit is
    spans: list[Span] = []
    seen = 0
    for cand in ranked:
        if min_score is not None and cand.score < float(min_score):
            continue
        if min_diff is not None and best - cand.score > float(min_diff):
            continue
        (add if seen < merging else add_apart)(
            spans, span_of(cand.fields, cand.score, cand.routes), gap_blank
        )
        seen += 1
        if len(spans) >= limit and seen >= merging:
            break
    return [_hit(span, preview, wanted, file_lines, context) for span in spans[:limit]]


def _file_scores(engine: Engine, query: str) -> dict[str, float]:
    """Whole-file BM25 of the query's terms (index.filestats), by path, as a share of the best
    file's."""
    raw = engine.filestats().bm25_scores(lexical_query(query).split())
    best = max(raw.values(), default=0.0)
    return {path: value / best for path, value in raw.items()} if best > 0 else {}


# file_lines(path): the lines of an indexed file as indexed, or None when it changed since (or is
# unreadable)
FileLines = Callable[[str], list[str] | None]


def _indexed_lines(engine: Engine) -> FileLines:
    """The lines of indexed files, read from disk once each and only while the file is as indexed."""
    cache: dict[str, list[str] | None] = {}

    def file_lines(path: str) -> list[str] | None:
        if path not in cache:
            cache[path] = None
            record = engine.files().get(path)
            loaded = read_file(engine.ws.root, path, max_bytes=engine.config.index.max_file_bytes)
            if (
                record is not None
                and isinstance(loaded, LoadedFile)
                and loaded.sha256 == record.sha256
            ):
                lines = loaded.text.split("\n")
                # no line after the last newline
                cache[path] = lines[:-1] if len(lines) > 1 and not lines[-1] else lines
        return cache[path]

    return file_lines


def _gap_check(file_lines: FileLines) -> GapCheck:
    """Whether lines first..last of an indexed file are all blank (False when the file is not as
    indexed)."""

    def gap_blank(path: str, first: int, last: int) -> bool:
        lines = file_lines(path)
        return (
            lines is not None
            and last <= len(lines)
            and all(not line.strip() for line in lines[first - 1 : last])
        )

    return gap_blank


def _routes(
    engine: Engine,
    query: str,
    search_mode: str,
    expr: str,
    pool: int,
    admits: Callable[[str], bool] | None,
) -> dict[str, list[RouteHit]]:
    """Run the retrieval routes the search mode selects; each returns hits in rank order. The BM25
    calls go to the engine first (on other threads, each taking the store once it is open) and
    run there while this thread embeds the query (or the model loads) and then asks the dense one."""
    lexical = search_mode in ("hybrid", "lexical")
    routes: dict[str, list[RouteHit]] = {}
    if lexical:
        text = lexical_query(query)
        names = symbol_candidates(query)
        named_text = lexical_query(" ".join(names))  # the query itself when it is only names
        # one call for both texts; the names' definitions asked beside it
        bm25 = _calls().submit(
            lambda: engine.open_store(create=False).search_lexical_many(
                [text, named_text], pool, expr
            )
        )
        defined = (
            _calls().submit(lambda: engine.open_store(create=False).symbol_rows(names, pool, expr))
            if names and named_text
            else None
        )
    dense = None
    if search_mode in ("hybrid", "semantic"):
        vector = _query_vector(engine.embedder, query)
        dense = engine.open_store(create=False).search_dense(vector, pool, expr)
    if lexical:
        store = engine.open_store(create=False)
        routes["lexical"], named_hits = bm25.result()
        routes["symbol"] = store.search_symbols(
            names, pool, expr, named_text, named_hits, defined.result() if defined else None
        )
        named = set(
            path_matches(
                query, [p for p in engine.files() if admits is None or admits(p)], PATH_ROUTE_FILES
            )
        )
        # always present, so every query of a mode is normalised by the same route weights: the
        # lexical hits in the files the query names, ranked among themselves (a BM25 call filtered
        # to those files cost a Milvus call per search and ranked no better on the semble dev half)
        kept = [hit for hit in routes["lexical"] if hit.fields["path"] in named]
        routes["path"] = [
            RouteHit(hit.id, rank, hit.distance, hit.fields) for rank, hit in enumerate(kept)
        ]
    if dense is not None:
        routes["semantic"] = dense
    return routes


def _query_vector(embedder: Embedder, query: str) -> list[float]:
    """The query's vector from `embedder`, kept for its next searches of the same text (a model
    gives a text the same vector every time; the query encoder takes ~11-17 ms of CPU a query)."""
    with _VECTORS_LOCK:
        kept = _VECTORS.setdefault(embedder, OrderedDict())
        vector = kept.get(query)
        if vector is not None:
            kept.move_to_end(query)
            return list(vector)
    vector = tuple(embedder.embed_query(query).tolist())
    with _VECTORS_LOCK:
        kept[query] = vector
        if len(kept) > QUERY_VECTORS:
            kept.popitem(last=False)
    return list(vector)


def _calls() -> ThreadPoolExecutor:
    """The threads that run one search's Milvus calls side by side (shared by every search of the
    process)."""
    global _CALLS
    if _CALLS is None:
        _CALLS = ThreadPoolExecutor(max_workers=4, thread_name_prefix="zg-route")
    return _CALLS


def _spelled_anywhere(engine: Engine, query: str) -> bool:
    """Whether any route but the dense one matches the query in the whole workspace, unfiltered."""
    store = engine.open_store(create=False)
    return bool(
        store.search_lexical(lexical_query(query), 1)
        or _symbol_hits(store, symbol_candidates(query))
        or path_matches(query, list(engine.files()), 1)
    )


def _invented(
    engine: Engine, query: str, routes: dict[str, list[RouteHit]], filtered: bool
) -> bool:
    """Whether the query is one compound identifier (`main_side_gamma`, `getUserName`) that no chunk
    BM25 finds for its parts spells, as grep would find it (inside a longer name too), in any case
    or separator style: each part may match (`main`), but the name is made up."""
    token = query.strip().lstrip("$@")
    if not _COMPOUND.fullmatch(token) or len(split_identifier(token)) < 2:
        return False
    joined = "".join(split_identifier(token))
    hits = routes.get("lexical") or []
    # the filter may hide where it is spelt
    if filtered and not any(_spells(hit, joined) for hit in hits):
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


def _hit(
    span: Span, preview: str, wanted: set[str], file_lines: FileLines, context: tuple[int, int]
) -> SearchHit:
    """A search hit labelled with the definition its best chunk holds: a class's chunk is the
    class's even when the query named one of its members; of sibling definitions merged into one
    chunk, the one named. A short preview starts at that definition, or at the best chunk (a full
    one shows the whole span); -B/-A add lines of the file around it. Markdown headings label
    sections."""
    f = span.fields
    symbol = f.get("symbol") or None
    if f.get("symbol_kind") not in _CONTAINER_KINDS and symbol not in wanted:
        symbol = next((n for n in f.get("names") or [] if n in wanted), symbol)
    kind = f.get("symbol_kind")
    if f.get("language") == "markdown" and kind == "module":
        kind = "section"
    rows = span.content.split("\n")
    # the best chunk's start (a span may begin before)
    own = max(span.start, min(int(f["start_line"]), span.end))
    first = _definition_line(span, symbol, own) if symbol and preview == "short" else own
    if preview == "full":
        first = span.start
    if preview == "none":
        shown: list[str] = []
    else:
        stop = (
            len(rows)
            if preview == "full"
            else min(len(rows), first - span.start + SHORT_PREVIEW_LINES)
        )
        shown = rows[first - span.start : stop]
    before, after = context
    lines = file_lines(span.path) if shown and (before or after) else None
    if lines is not None and span.end <= len(lines):
        last = first + len(shown) - 1
        low, high = max(1, first - before), min(len(lines), last + after)
        shown, first = lines[low - 1 : high], low
    return {
        "path": f["path"],
        "start_line": span.start,
        "end_line": span.end,
        "score": round(span.score, 4),
        "symbol": symbol,
        "symbol_kind": kind,
        "scope": f.get("scope") or None,
        "language": f.get("language"),
        "matched_by": sorted(span.routes),
        "preview": "\n".join(shown),
        "preview_start_line": first,
    }


def _definition_line(span: Span, name: str, own: int) -> int:
    """The line where `name` is defined inside the span (tree-sitter, as indexing finds
    definitions), the first from the best chunk's start `own` on; `own` when the span holds no such
    definition (a piece of a long one)."""
    language = str(span.fields.get("language") or "")
    found = [
        span.start + start - 1
        for defined, start in _definitions(span.content, language)
        if defined == name
    ]
    return next((line for line in found if line >= own), found[0] if found else own)


@lru_cache(maxsize=DEFINITION_CACHE)
def _definitions(content: str, language: str) -> tuple[tuple[str, int], ...]:
    """The (name, first line) of each definition in `content`, as `extract_symbols` finds them; kept
    for the hits of the next searches (a tree-sitter parse and walk, ~0.5 ms a hit)."""
    from zgrep.chunking import extract_symbols

    return tuple((s.name, s.start) for s in extract_symbols(content, language))
