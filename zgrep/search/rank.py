"""Fuse the search routes (dense, BM25, symbol and path) by rank and rerank the fused candidates."""

from __future__ import annotations

import bisect
import functools
import math
import re
from dataclasses import dataclass, field
from collections.abc import Mapping, Set
from typing import NamedTuple

from zgrep.filetypes import DATA_SUFFIXES, is_data, is_prose, is_test
from zgrep.search.text import STOPWORDS, split_identifier, stem, stems
from zgrep.types import ChunkFields, RouteHit

_VENDOR_PATH = re.compile(r"(^|/)(vendor|vendored|third_party|thirdparty|external|_vendor)(/|$)")
_DEFINITION_KINDS = frozenset({"class", "interface", "function"})
SCORE_SCALE = 2.0  # fused scores lie in 0-1; boosts can roughly double the best one
# Identifiers as a user types them, qualified or not: `parse_url`, `Flask.run`, `std::vector`,
# `$this->app`.
_QUERY_TOKEN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:(?:::|->|\\|\.)[A-Za-z_][A-Za-z0-9_]*)*")
# what joins a qualified name's parts (`Rack::Response`, `os.path`)
QUALIFIER = re.compile(r"::|->|\\|\.")
# Documentation is prose about the code; a query that names it (`readme`, `changelog`, `docs`) wants
# it.
_PROSE_QUERY = re.compile(
    r"\b(?:docs?|documentation|documented|readme|changelog|changes|guide|tutorial|faq|manual"
    r"|release notes|how-?to)\b",
    re.IGNORECASE,
)
# A token is code-like when no English word is spelt that way: a separator (`_ . :: ->`), a
# lower-to-upper hump (camelCase, PascalCase like `HttpClient`) or two capitals in a row
# (`FORCE_COLOR`, `URLPattern`).
_CODE_TOKEN = re.compile(r"[_.:\\]|->|[a-z0-9][A-Z]|[A-Z]{2,}")
# An all-capital word in a sentence (`HTTP`, `JSON`, `URLs`) is an acronym: any code about it spells
# it, so spelling it says nothing of which chunk is wanted (FORCE_COLOR, with its underscore, is an
# identifier)
_ACRONYM = re.compile(r"[A-Z]{2,}s?")
# A whole query that is one symbol: any code-like token, a `_private` name or one capitalised word
# (`Flask`).
_SYMBOL_QUERY = re.compile(r"[A-Z][A-Za-z0-9]*|_[A-Za-z0-9_]*")
# Inner product of normalised vectors (the default static model) that a hybrid query no lexical
# route matched must reach to return anything. On the semble dev half every one of 618 queries had
# lexical support, while 186 random letter strings had none and reached at most 0.83 (`qzxvbnmwpl`:
# 0.83 on gin).
MIN_UNSUPPORTED_SIMILARITY = 0.9
_LEXICAL_ROUTES = ("lexical", "symbol", "path")
# A query is searched for as a phrase when it has this many words, content words among them: shorter
# ones ("parse the url") turn up verbatim by chance. A chunk holds it when it has this share of its
# word pairs.
PHRASE_MIN_WORDS = 4
PHRASE_MIN_CONTENT = 2
PHRASE_SHARE = 0.75
PHRASE_BOOST = 3.0
# the raw lexical route's best chunk stays in this many first places unless chunks with a stronger
# signal (a definition named by the query, the query's phrase) fill them
LEXICAL_TOP_SLOTS = 3
_PHRASE_WORD = re.compile(r"[A-Za-z0-9]+")


@dataclass
class Candidate:
    """A chunk with its fused score, the routes that found it and its final score."""

    id: str
    fields: ChunkFields
    fused: float = 0.0
    routes: list[str] = field(default_factory=list)
    score: float = 0.0
    ranks: dict[str, int] = field(default_factory=dict)  # its rank in each route that found it


@dataclass(frozen=True)
class RankSettings:
    """Knobs of fusion: method, k and route weights from `[search]` config; dense_margin is fixed."""

    fusion: str = "rrf"
    rrf_k: int = 60
    weights: dict[str, float] = field(default_factory=lambda: {"lexical": 1.0, "semantic": 0.6})
    # the dense route's reciprocal-rank value times (similarity / the route's best similarity) **
    # this: ranks alone make a chunk far more similar than the rest (0.41 against 0.29) worth no
    # more than the next one, and a file of many weakly similar chunks then outweighs it by
    # coherence. The static model's similarities sit in a narrow band, hence a power: 1 gained
    # +0.001 (semble dev) and +0.006 (outside dev), 2 +0.004 and +0.004 more with the whole-file
    # route, 3 and 4 less on semble's (+0.0044, +0.0021 against +0.0060 in all)
    dense_margin: float = 2.0


@dataclass(frozen=True)
class RerankSettings:
    """Boosts (fractions of the best fused score) and penalties (multipliers) of the rerank."""

    # a definition named exactly by a code-like query token (case-sensitive)
    symbol_exact: float = 1.0
    # share of symbol_exact when that token sits in a natural-language query
    symbol_embedded: float = 0.5
    symbol_partial: float = 0.25
    # share of the exact boost for a chunk that holds the name only among definitions merged into it
    # (a sibling method, a slice of the class body) rather than being labelled with it: 0.5 on the
    # dev half
    symbol_merged: float = 0.5
    # share of the exact boost for a qualifier's definition (`module Rack`)
    symbol_qualifier: float = 0.5
    # a chunk whose code spells a code-like query token whole (`FORCE_COLOR` read in `is_terminal`):
    # the dense route cannot tell such a use from chunks about its parts (force, color)
    identifier_use: float = 0.5
    path_match: float = 1.0
    # share of the path boost that depends on how much of the file's own name the query spells: a
    # file the query names exactly (`procedure.ts`) over one whose name says more
    # (`procedureBuilder.ts`); 0.7-1.0 all gained +0.004-0.006 on the dev half, 0.8 in the middle
    name_cover: float = 0.8
    # the best chunk of each file gains this share of its file's summed fused score (relative to the
    # best file's): files with several matching chunks rise; 0.35-0.8 all beat 0.2 on the dev half,
    # 0.5 best
    file_coherence: float = 0.5
    definition: float = 0.05
    # tests (filetypes.is_test) unless the query asks for them: a test spells the behaviour's words
    # (its inputs and expected outputs) without holding it, and a vendored test framework
    # (cJSON's tests/unity) spells every word. Against 0.75, 0.5-0.7 all gained on the outside dev
    # half (+0.006..+0.009, no repo down) and moved semble's by -0.0000..+0.0007; 0.3 lost on both:
    # 0.6 in the middle
    test_penalty: float = 0.6
    # documentation (filetypes.is_prose) unless the query asks for it: prose about the code matches
    # an English query better than the code it describes; 0.4-0.7 all gain +0.006 on the dev half.
    # With tests at 0.6, 0.4-0.6 all gained on both dev halves over 0.7 (outside +0.002, semble
    # +0.0003..+0.0005, no repo down): 0.5 in the middle
    prose_penalty: float = 0.5
    vendor_penalty: float = 0.8
    # data files (filetypes.is_data: JSON, CSV/TSV, fuzzing dictionaries) unless the query asks for
    # tests or names such a file: test data and dictionaries spell a behaviour's words without
    # holding it (cJSON's json-patch test cases over cJSON_Utils.c). 0.5 gained on both dev halves
    # (outside +0.002: 5 queries up, none down; semble +0.00002: 1 up); no annotated answer in
    # either benchmark is a data file
    data_penalty: float = 0.5
    # generated, minified and dump files (index.generated) unless the query asks for them: below a
    # hand-written chunk of the same score and below a test (0.75); machine-written text matches
    # every query's words
    generated_penalty: float = 0.5
    # a chunk that spells the query's own words in their order (a docstring searched for verbatim)
    # is the one asked for: this share of the best fused score, more than any name and path boosts
    # together give
    phrase: float = PHRASE_BOOST
    # how a file's chunks add up to its coherence: the best chunk counts 1, the next
    # `coherence_decay`, the next its square... A plain sum (1.0) is won by a hub file's many weak
    # chunks; 0.8 gained on both dev halves (semble +0.004, outside +0.027), 0.9 less (+0.001,
    # +0.014), 0.7 and 0.5 lost on semble's (-0.001, -0.006)
    coherence_decay: float = 0.8
    diversity: float = 0.5
    # the best chunk of each file gains this share of the best fused score times its file's
    # whole-file BM25 as a share of the best file's (index.filestats): a file whose text as a whole
    # holds the query's words, though no one chunk does. 0.2-0.3 gained +0.017-0.021 on the outside
    # dev half and moved semble's by -0.0007..+0.0007; 0.5 and more lost on semble's (hub files hold
    # every word)
    file_bm25: float = 0.25


def fuse(routes: dict[str, list[RouteHit]], settings: RankSettings) -> list[Candidate]:
    """Combine per-route rankings: reciprocal rank fusion, or weighted min-max scores."""
    merged: dict[str, Candidate] = {}
    for name, hits in routes.items():
        weight = settings.weights.get(name, 1.0)
        scores = _route_scores(hits, settings)
        if name == "semantic" and settings.dense_margin and hits and hits[0].distance > 0:
            scores = [
                v * max(h.distance / hits[0].distance, 0.0) ** settings.dense_margin
                for v, h in zip(scores, hits)
            ]
        for hit, value in zip(hits, scores):
            cand = merged.setdefault(hit.id, Candidate(hit.id, hit.fields))
            cand.fused += weight * value
            cand.routes.append(name)
            cand.ranks[name] = hit.rank
    best = sum(settings.weights.get(n, 1.0) for n in routes) * (
        1.0 / (settings.rrf_k + 1) if settings.fusion == "rrf" else 1.0
    )
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


@functools.lru_cache(maxsize=1 << 16)
def _name_terms(name: str) -> frozenset[str]:
    return frozenset(stem(p) for p in split_identifier(name) if len(p) > 1)


def code_names(query: str) -> tuple[frozenset[str], frozenset[str], bool]:
    """The names a query spells as code (case kept; a qualified token also gives its last part),
    their qualifiers (`Rack` of `Rack::Response`: the container, not the definition asked for) and
    whether the whole query is one symbol. Plain English words (`application`, `table`) give none.
    """
    text = query.strip().lstrip("$@")
    tokens = _QUERY_TOKEN.findall(text)
    whole = (
        len(tokens) == 1
        and tokens[0] == text
        and bool(_CODE_TOKEN.search(text) or _SYMBOL_QUERY.fullmatch(text))
    )
    names: set[str] = set()
    qualifiers: set[str] = set()
    for token in tokens:
        if whole or _CODE_TOKEN.search(token):
            *outer, last = [p for p in QUALIFIER.split(token) if p]
            names.update((token, last))
            qualifiers.update(outer)
    return frozenset(names), frozenset(qualifiers - names), whole


def _keywords(query: str) -> set[str]:
    """Plain words of a query that a file name may share (by prefix): code-like tokens are left to
    `_identifiers`, so `FORCE_COLOR` does not name color.py."""
    words = (
        seg
        for token in _QUERY_TOKEN.findall(query)
        for seg in QUALIFIER.split(token)
        if seg and not _CODE_TOKEN.search(seg)
    )
    return {
        w
        for w in (m.lower() for seg in words for m in re.findall(r"[A-Za-z][A-Za-z0-9]*", seg))
        if len(w) > 2 and w not in STOPWORDS
    }


def _identifiers(query: str) -> set[str]:
    """Code-like tokens of a query, joined lowercase (`FORCE_COLOR` → forcecolor, `HttpClient` →
    httpclient): they name a file or directory only when spelt whole (force_color.py,
    HttpClient.java)."""
    return {
        _joined(seg)
        for token in _QUERY_TOKEN.findall(query)
        for seg in QUALIFIER.split(token)
        if seg and _CODE_TOKEN.search(seg)
    }


def _joined(name: str) -> str:
    return re.sub(r"[_\-]", "", name).lower()


@functools.lru_cache(maxsize=1 << 16)
def _path_parts(path: str) -> frozenset[str]:
    """Words of a file's stem and its parent directory (`sansio/app.py` → sansio, app)."""
    return frozenset(p for name in _path_names(path) for p in _name_words(name))


@functools.lru_cache(maxsize=1 << 16)
def _name_words(name: str) -> tuple[str, ...]:
    """The words of a file or directory name (`color_triplet` → color, triplet)."""
    return tuple(p for p in split_identifier(name) if len(p) > 1)


def _path_names(path: str) -> list[str]:
    pieces = path.split("/")
    return [pieces[-1].split(".", 1)[0]] + ([pieces[-2]] if len(pieces) > 1 else [])


@functools.lru_cache(maxsize=1 << 16)
def _path_joined(path: str) -> frozenset[str]:
    """A file's stem and parent directory, joined lowercase (`color_triplet.py` → colortriplet)."""
    return frozenset(_joined(name) for name in _path_names(path))


def _path_overlap(keywords: set[str], identifiers: set[str], path: str, symbol: bool) -> int:
    """Query words sharing a prefix with a path part, plus identifiers spelling a stem or directory
    whole. For a one-symbol query only the file's stem counts: `Channel` names channel.ex, not
    channel/server.ex."""
    if symbol:
        file_stem = _path_names(path)[0]
        return _prefix_overlap(keywords, set(_name_words(file_stem))) + (
            _joined(file_stem) in identifiers
        )
    return _prefix_overlap(keywords, _path_parts(path)) + len(identifiers & _path_joined(path))


@functools.lru_cache(maxsize=1 << 16)
def _own_name(path: str) -> tuple[str, tuple[str, ...]]:
    """A file's own name and its words: its stem, or for a directory's index file (`routing/mod.rs`,
    `utils/index.ts`, `pkg/__init__.py`) the directory's name, as the module it defines is called.
    """
    names = _path_names(path)
    name = names[1] if names[0] in _INDEX_STEMS and len(names) > 1 else names[0]
    return name, _name_words(name)


_INDEX_STEMS = frozenset({"mod", "index", "__init__", "init"})


def _name_cover(keywords: set[str], identifiers: set[str], path: str) -> float:
    """Share of the words of a file's own name that the query spells (all of them when an identifier
    spells the name whole): `procedure.ts` 1, `procedureBuilder.ts` 0.5 for "how procedures are
    defined"."""
    name, parts = _own_name(path)
    if _joined(name) in identifiers:
        return 1.0
    return sum(_prefix_overlap(keywords, {part}) for part in parts) / len(parts) if parts else 0.0


def _prefix_overlap(keywords: set[str], parts: Set[str]) -> int:
    """Keywords matching a path part exactly, by a shared prefix of 3+ characters, or abbreviated by
    it."""
    hits = 0
    for word in keywords:
        for part in parts:
            short, long_ = (word, part) if len(word) <= len(part) else (part, word)
            if (len(short) >= 3 and long_.startswith(short)) or _abbreviates(part, word):
                hits += 1
                break
    return hits


def _abbreviation_like(part: str) -> bool:
    """A name of 3+ letters with no vowel after the first, as code abbreviates (`ctx`, `cfg`,
    `args`)."""
    return len(part) >= 3 and not any(c in "aeiou" for c in part[1:])


def _abbreviates(part: str, word: str) -> bool:
    """Whether a file or folder name abbreviates a query word: its first letter, then consonants the
    word spells in order (`ctx` context, `cfg` configuration, `args` arguments, `msg` message)."""
    if len(word) < len(part) + 2 or part[0] != word[0] or not _abbreviation_like(part):
        return False
    rest = iter(word[1:])
    return all(ch in rest for ch in part[1:])


def path_matches(query: str, paths: list[str], limit: int) -> list[str]:
    """Indexed files whose stem or parent directory share the most words with the query (the count
    `_path_overlap` gives, looked up in an index of the paths' words: no pass over every path)."""
    keywords, identifiers = _keywords(query), _identifiers(query)
    if not keywords and not identifiers:
        return []
    index = _PathIndex.of(tuple(paths))
    counts: dict[int, int] = {}
    for word in keywords:
        for i in index.sharing_prefix(word):
            counts[i] = counts.get(i, 0) + 1
    for name in identifiers:
        for i in index.by_joined.get(name, ()):
            counts[i] = counts.get(i, 0) + 1
    scored = sorted(counts.items(), key=lambda item: (-item[1], len(paths[item[0]]), item[0]))
    return [paths[i] for i, _ in scored[:limit]]


class _PathIndex:
    """The words of a list of paths (`_path_parts`, `_path_joined`) mapped to the paths holding
    them."""

    def __init__(self, paths: tuple[str, ...]) -> None:
        self.by_part: dict[str, list[int]] = {}
        self.by_joined: dict[str, list[int]] = {}
        for i, path in enumerate(paths):
            for part in _path_parts(path):
                self.by_part.setdefault(part, []).append(i)
            for name in _path_joined(path):
                self.by_joined.setdefault(name, []).append(i)
        self.sorted_parts = sorted(self.by_part)
        self.abbreviations = [part for part in self.by_part if _abbreviation_like(part)]

    @staticmethod
    @functools.lru_cache(maxsize=4)
    def of(paths: tuple[str, ...]) -> _PathIndex:
        """The index of `paths`, kept for the next search over the same files."""
        return _PathIndex(paths)

    def sharing_prefix(self, word: str) -> set[int]:
        """Paths with a part that `_prefix_overlap` matches to `word` (a shared 3+ character prefix,
        or an abbreviation of it)."""
        found: set[int] = set()
        # parts `word` starts with
        parts = [word[:n] for n in range(3, len(word) + 1) if word[:n] in self.by_part]
        if len(word) >= 3:  # parts that start with `word`
            at = bisect.bisect_left(self.sorted_parts, word)
            while at < len(self.sorted_parts) and self.sorted_parts[at].startswith(word):
                parts.append(self.sorted_parts[at])
                at += 1
        parts.extend(part for part in self.abbreviations if _abbreviates(part, word))
        for part in parts:
            found.update(self.by_part[part])
        return found


def rerank(
    query: str,
    candidates: list[Candidate],
    settings: RerankSettings | None = None,
    generated: Set[str] = frozenset(),
    file_scores: Mapping[str, float] | None = None,
) -> list[Candidate]:
    """Boost symbol/file-name matches, the query's phrase, definitions, coherent files and files
    whose whole text matches (`file_scores`: a share of the best file's, by path); demote tests,
    vendored and `generated` files; diversify; keep the lexical route's best chunk near the top."""
    cfg = settings or RerankSettings()
    if not candidates:
        return []
    top = max(c.fused for c in candidates)
    terms = query_terms(query)
    keywords, identifiers = _keywords(query), _identifiers(query)
    exact_names, qualifiers, whole_symbol = code_names(query)
    exact_boost = cfg.symbol_exact * (1.0 if whole_symbol else cfg.symbol_embedded)
    spelt = [
        n
        for n in exact_names
        if _CODE_TOKEN.search(n) and (whole_symbol or not _ACRONYM.fullmatch(n))
    ]
    phrase = _Phrase.of(query)
    wants_tests = bool(terms & {"test", "spec", "fixture"})
    demote_generated = bool(generated) and not terms & _GENERATED_WORDS
    # a query for tests or fixtures, or one that names a data file (`tsconfig.json`), asks for them
    demote_data = not wants_tests and not any(s in query.lower() for s in DATA_SUFFIXES)
    # prose ranks below code, so a search that holds no code (scoped to docs/ or to ADRs) keeps its
    # scores
    demote_prose = not _PROSE_QUERY.search(query) and any(
        not _path_kinds(c.fields["path"]).prose for c in candidates
    )
    file_sum = _file_sums(candidates, cfg.coherence_decay)
    max_file = max(file_sum.values())
    best_of_file: dict[str, Candidate] = {}
    strong: set[str] = set()  # chunks named by the query or holding its phrase
    path_ratio: dict[str, float] = {}  # each file's share of the path boost
    # name, identifier, phrase and path boosts first: they pick each file's best chunk
    for cand in candidates:
        f = cand.fields
        score = cand.fused
        symbol = f.get("symbol") or ""
        defined = [name for name in f.get("names") or [symbol] if name]
        if exact_names and any(name in exact_names for name in defined):
            score += top * exact_boost * (1.0 if symbol in exact_names else cfg.symbol_merged)
            strong.add(cand.id)
        elif qualifiers and any(name in qualifiers for name in defined):
            score += top * exact_boost * cfg.symbol_qualifier
        elif symbol and terms and len(name := _name_terms(symbol)) > 1:
            # words spelling parts of a compound name (`start_services`); a one-word name
            # (`Application`, `Color`) is what an English word or an identifier's part matches by
            # accident. A one-symbol query wants all of its parts named.
            score += (
                top
                * cfg.symbol_partial
                * len(name & terms)
                / max(len(name), len(terms) if whole_symbol else 0)
            )
        content = f.get("content") or ""
        if spelt and any(_spells_whole(content, n) for n in spelt):
            score += top * cfg.identifier_use
        if phrase is not None and (share := phrase.share(content)) >= PHRASE_SHARE:
            score += top * cfg.phrase * share
            strong.add(cand.id)
        if keywords or identifiers:
            ratio = path_ratio.get(f["path"])
            if ratio is None:  # once per file: a file's chunks share its path
                ratio = _path_overlap(keywords, identifiers, f["path"], whole_symbol) / (
                    len(keywords) + len(identifiers)
                )
                if ratio:
                    ratio *= (
                        1.0
                        - cfg.name_cover
                        + cfg.name_cover * _name_cover(keywords, identifiers, f["path"])
                    )
                path_ratio[f["path"]] = ratio
            score += top * cfg.path_match * ratio
        cand.score = score
        best = best_of_file.get(f["path"])
        if best is None or score > best.score:
            best_of_file[f["path"]] = cand
    for cand in candidates:
        f = cand.fields
        score = cand.score
        if best_of_file[f["path"]] is cand:
            score += top * cfg.file_coherence * file_sum[f["path"]] / max_file
            score += top * cfg.file_bm25 * (file_scores or {}).get(f["path"], 0.0)
        if f.get("symbol_kind") in _DEFINITION_KINDS:
            score *= 1.0 + cfg.definition
        kinds = _path_kinds(f["path"])
        if not wants_tests and kinds.test:
            score *= cfg.test_penalty
        if demote_prose and kinds.prose:
            score *= cfg.prose_penalty
        if kinds.vendored:
            score *= cfg.vendor_penalty
        if demote_data and kinds.data:
            score *= cfg.data_penalty
        if demote_generated and f["path"] in generated:
            score *= cfg.generated_penalty
        cand.score = score
    ranked = sorted(candidates, key=lambda c: -c.score)
    ranked = _diversify(ranked, cfg.diversity)
    _keep_lexical_top(ranked, strong)
    return ranked


class _PathKinds(NamedTuple):
    """What a file's path says it is, as the rerank's penalties read it."""

    test: bool
    prose: bool
    vendored: bool
    data: bool


@functools.lru_cache(maxsize=1 << 16)
def _path_kinds(path: str) -> _PathKinds:
    """The kinds of a path (four name tests), kept for the next chunks and searches of the file."""
    return _PathKinds(
        is_test(path), is_prose(path), bool(_VENDOR_PATH.search(path)), is_data(path)
    )


_IDENTIFIER_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_")


def _spells_whole(text: str, name: str) -> bool:
    """Whether `text` spells `name` with no identifier character (ASCII letter, digit, `_`) next to
    it (str.find: ~1 µs a chunk, a regular expression ~12)."""
    at = text.find(name)
    while at >= 0:
        end = at + len(name)
        if (at == 0 or text[at - 1] not in _IDENTIFIER_CHARS) and (
            end == len(text) or text[end] not in _IDENTIFIER_CHARS
        ):
            return True
        at = text.find(name, at + 1)
    return False


# Query words (stemmed) that ask for machine-written files: "the generated parser", "minified
# bundle", "dump".
_GENERATED_WORDS = frozenset({"generat", "autogenerat", "minify", "dump"})


def _file_sums(candidates: list[Candidate], decay: float) -> dict[str, float]:
    """Each file's fused scores added up, best first, the i-th weighted decay**i (1.0: a plain sum)."""
    by_file: dict[str, list[float]] = {}
    for cand in candidates:
        by_file.setdefault(cand.fields["path"], []).append(cand.fused)
    if decay == 1.0:
        return {path: sum(scores) for path, scores in by_file.items()}
    return {
        path: sum(v * decay**i for i, v in enumerate(sorted(scores, reverse=True)))
        for path, scores in by_file.items()
    }


@dataclass(frozen=True)
class _Phrase:
    """A query long enough to be looked for as a phrase: its stemmed word pairs, and word prefixes
    that a chunk must spell before its words are paired (most chunks spell few of them: no pairing
    at all)."""

    pairs: frozenset[tuple[str, str]]
    prefixes: tuple[str, ...]

    @staticmethod
    def of(query: str) -> _Phrase | None:
        words = [w.lower() for w in _PHRASE_WORD.findall(query)]
        content = [w for w in words if w not in STOPWORDS and len(w) > 1]
        if len(words) < PHRASE_MIN_WORDS or len(set(content)) < PHRASE_MIN_CONTENT:
            return None
        return _Phrase(frozenset(_pairs(words)), tuple(sorted({w[:4] for w in content})))

    def share(self, text: str) -> float:
        """The share of the query's word pairs that `text` holds (1.0: the query spelt verbatim)."""
        lowered = text.lower()
        if not all(p in lowered for p in self.prefixes):
            return 0.0
        held = set(_pairs(_PHRASE_WORD.findall(lowered)))
        return len(self.pairs & held) / len(self.pairs)


def _pairs(words: list[str]) -> list[tuple[str, str]]:
    stemmed = stems(words)
    return list(zip(stemmed, stemmed[1:]))


def _keep_lexical_top(ranked: list[Candidate], strong: Set[str]) -> None:
    """Move the lexical route's best chunk up to the `LEXICAL_TOP_SLOTS`-th place when the rerank
    put it and every other chunk of its file lower; only chunks with a stronger signal (`strong`)
    may stay above it beyond that."""
    at = next((i for i, c in enumerate(ranked) if c.ranks.get("lexical") == 0), None)
    # a chunk of its file among the first places is the file found (hits are scored by file)
    if at is None or any(
        c.fields["path"] == ranked[at].fields["path"] for c in ranked[:LEXICAL_TOP_SLOTS]
    ):
        return
    weaker = 0
    for i, cand in enumerate(ranked[:at]):
        if cand.id in strong:
            continue
        weaker += 1
        if weaker == LEXICAL_TOP_SLOTS:
            moved = ranked.pop(at)
            moved.score = max(moved.score, cand.score)
            ranked.insert(i, moved)
            return


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
