"""Fuse the dense and lexical routes and rerank the fused candidates."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any

from zgrep.search.text import STOPWORDS, split_identifier, stem
from zgrep.store.milvus import RouteHit

_TEST_PATH = re.compile(r"(^|/)(tests?|testing|spec|__tests__)(/|$)|(^|/)test_[^/]*$|_test\.[a-z]+$|\.(test|spec)\.[a-z]+$")
_VENDOR_PATH = re.compile(r"(^|/)(vendor|vendored|third_party|thirdparty|external|_vendor)(/|$)")
_DEFINITION_KINDS = frozenset({"class", "interface", "function"})


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


def _is_code_query(query: str) -> bool:
    return bool(re.search(r"[A-Za-z0-9]_[A-Za-z0-9]|[a-z][A-Z]|\.\w+\(|^\w+$", query.strip()))


def rerank(query: str, candidates: list[Candidate]) -> list[Candidate]:
    """Boost symbol/file-name matches and definitions, demote tests/vendored code, diversify files."""
    terms = query_terms(query)
    raw_words = {w.lower() for w in re.findall(r"[A-Za-z_][A-Za-z0-9_]*", query)}
    wants_tests = bool(terms & {"test", "tests", "spec", "fixture"})
    for cand in candidates:
        f = cand.fields
        boost = 1.0
        symbol = f.get("symbol") or ""
        if symbol and symbol.lower() in raw_words:
            boost *= 1.6
        elif symbol and terms:
            overlap = len(_name_terms(symbol) & terms) / max(1, len(_name_terms(symbol)))
            boost *= 1.0 + 0.25 * overlap
        stem_name = f["path"].rsplit("/", 1)[-1].split(".", 1)[0]
        if terms and _name_terms(stem_name) & terms:
            boost *= 1.1
        if f.get("symbol_kind") in _DEFINITION_KINDS:
            boost *= 1.05
        if not wants_tests and _TEST_PATH.search(f["path"]):
            boost *= 0.75
        if _VENDOR_PATH.search(f["path"]):
            boost *= 0.8
        cand.score = cand.fused * boost
    ranked = sorted(candidates, key=lambda c: -c.score)
    return _diversify(ranked)


def _diversify(ranked: list[Candidate]) -> list[Candidate]:
    """Decay repeated hits from the same file so other files surface."""
    seen: dict[str, int] = {}
    for cand in ranked:
        n = seen.get(cand.fields["path"], 0)
        cand.score *= math.pow(0.8, n)
        seen[cand.fields["path"]] = n + 1
    ranked.sort(key=lambda c: -c.score)
    for cand in ranked:
        cand.score = min(1.0, cand.score)
    return ranked
