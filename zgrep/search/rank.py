"""Fuse the dense and lexical routes and rerank the fused candidates."""

from __future__ import annotations

import functools
import math
import re
from dataclasses import dataclass, field
from collections.abc import Set
from typing import Any

from zgrep.search.text import STOPWORDS, split_identifier, stem
from zgrep.types import RouteHit

_TEST_PATH = re.compile(r"(^|/)(tests?|testing|spec|__tests__)(/|$)|(^|/)test_[^/]*$|_test\.[a-z]+$|\.(test|spec)\.[a-z]+$")
_VENDOR_PATH = re.compile(r"(^|/)(vendor|vendored|third_party|thirdparty|external|_vendor)(/|$)")
_DEFINITION_KINDS = frozenset({"class", "interface", "function"})
SCORE_SCALE = 2.0  # fused scores lie in 0-1; boosts can roughly double the best one
# Identifiers as a user types them, qualified or not: `parse_url`, `Flask.run`, `std::vector`, `$this->app`.
_QUERY_TOKEN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:(?:::|->|\\|\.)[A-Za-z_][A-Za-z0-9_]*)*")
_QUALIFIER = re.compile(r"::|->|\\|\.")
# A token is code-like when no English word is spelt that way: a separator (`_ . :: ->`), a lower-to-upper
# hump (camelCase, PascalCase like `HttpClient`) or two capitals in a row (`FORCE_COLOR`, `URLPattern`).
_CODE_TOKEN = re.compile(r"[_.:\\]|->|[a-z0-9][A-Z]|[A-Z]{2,}")
# A whole query that is one symbol: any code-like token, a `_private` name or one capitalised word (`Flask`).
_SYMBOL_QUERY = re.compile(r"[A-Z][A-Za-z0-9]*|_[A-Za-z0-9_]*")
# Inner product of normalised vectors (the default static model) that a hybrid query no lexical route
# matched must reach to return anything. On the semble dev half every one of 618 queries had lexical
# support, while 186 random letter strings had none and reached at most 0.83 (`qzxvbnmwpl`: 0.83 on gin).
MIN_UNSUPPORTED_SIMILARITY = 0.9
_LEXICAL_ROUTES = ("lexical", "symbol", "path")


@dataclass
class Candidate:
    """A chunk with its fused score, the routes that found it and its final score."""

    id: str
    fields: dict[str, Any]
    fused: float = 0.0
    routes: list[str] = field(default_factory=list)
    score: float = 0.0


@dataclass(frozen=True)
class RankSettings:
    """Knobs of fusion and rerank (from config)."""

    fusion: str = "rrf"
    rrf_k: int = 60
    weights: dict[str, float] = field(default_factory=lambda: {"lexical": 1.0, "semantic": 0.6})


@dataclass(frozen=True)
class RerankSettings:
    """Boosts (fractions of the best fused score) and penalties (multipliers) of the rerank."""

    symbol_exact: float = 1.0  # a definition named exactly by a code-like query token (case-sensitive)
    symbol_embedded: float = 0.5  # share of symbol_exact when that token sits in a natural-language query
    symbol_partial: float = 0.25
    path_match: float = 1.0
    # the best chunk of each file gains this share of its file's summed fused score (relative to the best
    # file's): files with several matching chunks rise; 0.35-0.8 all beat 0.2 on the dev half, 0.5 best
    file_coherence: float = 0.5
    definition: float = 0.05
    test_penalty: float = 0.75
    vendor_penalty: float = 0.8
    diversity: float = 0.5


def fuse(routes: dict[str, list[RouteHit]], settings: RankSettings) -> list[Candidate]:
    """Combine per-route rankings: reciprocal rank fusion, or weighted min-max scores."""
    merged: dict[str, Candidate] = {}
    for name, hits in routes.items():
        weight = settings.weights.get(name, 1.0)
        scores = _route_scores(hits, settings)
        for hit, value in zip(hits, scores):
            cand = merged.setdefault(hit.id, Candidate(hit.id, hit.fields))
            cand.fused += weight * value
            cand.routes.append(name)
    best = sum(settings.weights.get(n, 1.0) for n in routes) * (1.0 / (settings.rrf_k + 1) if settings.fusion == "rrf" else 1.0)
    for cand in merged.values():
        cand.fused = cand.fused / best if best else 0.0
    return sorted(merged.values(), key=lambda c: -c.fused)


def unsupported(routes: dict[str, list[RouteHit]]) -> bool:
    """A hybrid query that no lexical route matched and whose nearest chunk is only weakly similar:
    noise (a typo, random letters) that should get no hits, like grep."""
    if "semantic" not in routes or not all(name in routes for name in _LEXICAL_ROUTES):
        return False
    if any(routes[name] for name in _LEXICAL_ROUTES):
        return False
    dense = routes["semantic"]
    return not dense or dense[0].distance < MIN_UNSUPPORTED_SIMILARITY


def _route_scores(hits: list[RouteHit], settings: RankSettings) -> list[float]:
    if settings.fusion == "rrf":
        return [1.0 / (settings.rrf_k + h.rank + 1) for h in hits]
    raw = [abs(h.distance) for h in hits]
    if not raw:
        return []
    lo, hi = min(raw), max(raw)
    return [(r - lo) / (hi - lo) if hi > lo else 1.0 for r in raw]


def query_terms(query: str) -> set[str]:
    """Stemmed content words of a query, identifiers split into parts."""
    out: set[str] = set()
    for word in re.findall(r"[A-Za-z_][A-Za-z0-9_]*", query):
        for part in split_identifier(word):
            if part not in STOPWORDS and len(part) > 1:
                out.add(stem(part))
    return out


def _name_terms(name: str) -> set[str]:
    return {stem(p) for p in split_identifier(name) if len(p) > 1}


def code_names(query: str) -> tuple[frozenset[str], bool]:
    """The names a query spells as code (case kept; qualified tokens also give their parts) and
    whether the whole query is one symbol. Plain English words (`application`, `table`) give none."""
    text = query.strip().lstrip("$@")
    tokens = _QUERY_TOKEN.findall(text)
    whole = len(tokens) == 1 and tokens[0] == text and bool(_CODE_TOKEN.search(text) or _SYMBOL_QUERY.fullmatch(text))
    names: set[str] = set()
    for token in tokens:
        if whole or _CODE_TOKEN.search(token):
            names.add(token)
            names.update(p for p in _QUALIFIER.split(token) if p)
    return frozenset(names), whole


def _keywords(query: str) -> set[str]:
    return {w for w in (m.lower() for m in re.findall(r"[A-Za-z][A-Za-z0-9]*", query)) if len(w) > 2 and w not in STOPWORDS}


@functools.lru_cache(maxsize=1 << 16)
def _path_parts(path: str) -> frozenset[str]:
    """Words of a file's stem and its parent directory (`sansio/app.py` → sansio, app)."""
    pieces = path.split("/")
    names = [pieces[-1].split(".", 1)[0]] + ([pieces[-2]] if len(pieces) > 1 else [])
    return frozenset(p for name in names for p in split_identifier(name) if len(p) > 1)


def _prefix_overlap(keywords: set[str], parts: Set[str]) -> int:
    """Keywords matching a path part exactly or by a shared prefix of 3+ characters."""
    hits = 0
    for word in keywords:
        for part in parts:
            short, long_ = (word, part) if len(word) <= len(part) else (part, word)
            if len(short) >= 3 and long_.startswith(short):
                hits += 1
                break
    return hits


def path_matches(query: str, paths: list[str], limit: int) -> list[str]:
    """Indexed files whose stem or parent directory share the most words with the query."""
    keywords = _keywords(query)
    if not keywords:
        return []
    scored = [(n, p) for p in paths if (n := _prefix_overlap(keywords, _path_parts(p)))]
    scored.sort(key=lambda item: (-item[0], len(item[1])))
    return [p for _, p in scored[:limit]]


def rerank(query: str, candidates: list[Candidate], settings: RerankSettings | None = None) -> list[Candidate]:
    """Boost symbol/file-name matches, definitions and coherent files; demote tests/vendored code; diversify."""
    cfg = settings or RerankSettings()
    if not candidates:
        return []
    top = max(c.fused for c in candidates)
    terms = query_terms(query)
    keywords = _keywords(query)
    exact_names, whole_symbol = code_names(query)
    exact_boost = cfg.symbol_exact * (1.0 if whole_symbol else cfg.symbol_embedded)
    wants_tests = bool(terms & {"test", "spec", "fixture"})
    file_sum: dict[str, float] = {}
    best_of_file: dict[str, Candidate] = {}
    for cand in candidates:
        path = cand.fields["path"]
        file_sum[path] = file_sum.get(path, 0.0) + cand.fused
        if path not in best_of_file or cand.fused > best_of_file[path].fused:
            best_of_file[path] = cand
    max_file = max(file_sum.values())
    for cand in candidates:
        f = cand.fields
        score = cand.fused
        symbol = f.get("symbol") or ""
        if exact_names and any(name in exact_names for name in f.get("names") or [symbol] if name):
            score += top * exact_boost
        elif symbol and terms:
            score += top * cfg.symbol_partial * len(_name_terms(symbol) & terms) / max(1, len(_name_terms(symbol)))
        if keywords:
            ratio = _prefix_overlap(keywords, _path_parts(f["path"])) / len(keywords)
            score += top * cfg.path_match * ratio
        if best_of_file[f["path"]] is cand:
            score += top * cfg.file_coherence * file_sum[f["path"]] / max_file
        if f.get("symbol_kind") in _DEFINITION_KINDS:
            score *= 1.0 + cfg.definition
        if not wants_tests and _TEST_PATH.search(f["path"]):
            score *= cfg.test_penalty
        if _VENDOR_PATH.search(f["path"]):
            score *= cfg.vendor_penalty
        cand.score = score
    ranked = sorted(candidates, key=lambda c: -c.score)
    return _diversify(ranked, cfg.diversity)


def _diversify(ranked: list[Candidate], decay: float) -> list[Candidate]:
    """Decay repeated hits from the same file so other files surface; scale scores to 0-1."""
    seen: dict[str, int] = {}
    for cand in ranked:
        n = seen.get(cand.fields["path"], 0)
        cand.score *= math.pow(decay, n)
        seen[cand.fields["path"]] = n + 1
    ranked.sort(key=lambda c: -c.score)
    for cand in ranked:
        cand.score = min(1.0, cand.score / SCORE_SCALE)
    return ranked
