"""Lexical normalisation shared by indexing and querying (identifier splitting, stemming).

Milvus's BM25 analyzer only splits words; every other step happens here so the
embedded and the server deployments rank identically.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from itertools import chain
from typing import Any

_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|[0-9]+")
_CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")

STOPWORDS = frozenset(
    """a an and are as at be by do does did for from has have how i if in into is it its of on or
    that the their then there these this to was were what when where which who why will with
    you your can could should would we our us""".split()
)


def split_identifier(word: str) -> list[str]:
    """`getUserName` → [get, user, name]; `parse_url` → [parse, url]; lowercase."""
    parts: list[str] = []
    for piece in word.split("_"):
        parts.extend(m.group(0).lower() for m in _CAMEL.finditer(piece))
    return [p for p in parts if p]


# Nouns made from verbs end as the verb's stem does: normalization/normalizer/normalize → normaliz,
# validation/validator/validate → validat (English derivation, as Porter's step 2 reads it).
_DERIVED = (
    ("ization", "iz"),
    ("isation", "is"),
    ("ation", "at"),
    ("izer", "iz"),
    ("iser", "is"),
    ("ator", "at"),
)


def stem(word: str) -> str:
    """A light, deterministic stemmer: plural, -ing/-ed, a noun's -ation/-izer/-ator and a final -e
    go (retries/retried/retrying → retry; handle/handles/handled/handling → handl; normalization →
    normaliz)."""
    if len(word) <= 3:
        return word
    if word.endswith(("ies", "ied")) and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith("sses") or word.endswith(("ches", "shes", "xes", "zes", "ses")):
        word = word[:-2]
    elif word.endswith("s") and not word.endswith(("ss", "us", "is", "as", "os")):
        word = word[:-1]
    for suffix in ("ing", "ed"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            word = word[: -len(suffix)]
            if len(word) > 3 and word[-1] == word[-2] and word[-1] not in "aeiouls":
                word = word[:-1]
            break
    for suffix, verb in _DERIVED:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)] + verb
    if word.endswith("e") and len(word) > 4:
        word = word[:-1]
    return word


def terms(text: str, *, keep_stopwords: bool = False) -> list[str]:
    """Normalised lexical terms: whole identifiers (lowercased) plus their parts, stemmed."""
    memo = _ALL_TERMS if keep_stopwords else _QUERY_TERMS
    return list(chain.from_iterable(map(memo.__getitem__, _WORD.findall(text))))


def term_counts(text: str) -> dict[str, int]:
    """`terms(text)` counted, each term keyed in order of its first occurrence."""
    counts: dict[str, int] = {}
    get = counts.get
    for word, n in Counter(_WORD.findall(text)).items():
        for term in _QUERY_TERMS[word]:
            counts[term] = get(term, 0) + n
    return counts


def _word_terms(word: str, keep_stopwords: bool) -> tuple[str, ...]:
    """The terms of one word."""
    parts = split_identifier(word)
    whole = (word.lower().strip("_"),) if len(parts) > 1 else ()
    return whole + tuple(stem(part) for part in parts if keep_stopwords or part not in STOPWORDS)


class _Memo(dict[str, Any]):
    """A word's terms (or, `joined`, its terms as one string), computed once: a corpus repeats its
    identifiers endlessly. Emptied when full (32,768 words keep most of Django's hits at a few MB;
    a miss costs only a recomputation)."""

    def __init__(self, keep_stopwords: bool, joined: bool) -> None:
        super().__init__()
        self.keep_stopwords, self.joined = keep_stopwords, joined

    def __missing__(self, word: str) -> Any:
        if len(self) >= _MEMO_WORDS:
            self.clear()
        found = _word_terms(word, self.keep_stopwords)
        self[word] = value = " ".join(found) if self.joined else found
        return value


class _Stems(dict[str, str]):
    """A word's stem, computed once (emptied when full, as _Memo)."""

    def __missing__(self, word: str) -> str:
        if len(self) >= _MEMO_WORDS:
            self.clear()
        self[word] = found = stem(word)
        return found


_MEMO_WORDS = 1 << 15
_ALL_TERMS = _Memo(keep_stopwords=True, joined=False)
_QUERY_TERMS = _Memo(keep_stopwords=False, joined=False)
_DOCUMENT_WORDS = _Memo(keep_stopwords=True, joined=True)
_STEMS = _Stems()


def stems(words: Iterable[str]) -> list[str]:
    """`stem` of each word (a search stems the words of every candidate chunk: ~3,500 a query on
    Django, most of them seen before)."""
    return list(map(_STEMS.__getitem__, words))


def lexical_document(text: str) -> str:
    """The text stored in the BM25 field for `text`."""
    return " ".join(filter(None, map(_DOCUMENT_WORDS.__getitem__, _WORD.findall(text))))


def lexical_query(text: str) -> str:
    """The BM25 query for a user query (stop words removed)."""
    return " ".join(terms(text))
