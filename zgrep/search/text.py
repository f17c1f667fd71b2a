"""Lexical normalisation shared by indexing and querying (identifier splitting, stemming).

Milvus's BM25 analyzer only splits words; every other step happens here so the
embedded and the server deployments rank identically.
"""

from __future__ import annotations

import re

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


def stem(word: str) -> str:
    """A light, deterministic suffix stripper (retries → retry, handling → handl)."""
    if len(word) <= 3:
        return word
    for suffix, repl in (("ies", "y"), ("sses", "ss"), ("ing", ""), ("ed", ""), ("es", ""), ("s", "")):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            if suffix == "s" and word.endswith(("ss", "us", "is")):
                return word
            if suffix == "es" and not word.endswith(("ches", "shes", "xes", "zes", "sses")):
                return word[:-1]
            return word[: len(word) - len(suffix)] + repl
    return word


def terms(text: str, *, keep_stopwords: bool = False) -> list[str]:
    """Normalised lexical terms: whole identifiers (lowercased) plus their parts, stemmed."""
    out: list[str] = []
    for match in _WORD.finditer(text):
        word = match.group(0)
        lower = word.lower()
        parts = split_identifier(word)
        if len(parts) > 1:
            out.append(lower.strip("_"))
        for part in parts:
            if keep_stopwords or part not in STOPWORDS:
                out.append(stem(part))
    return out


def lexical_document(text: str) -> str:
    """The text stored in the BM25 field for `text`."""
    return " ".join(terms(text, keep_stopwords=True))


def lexical_query(text: str) -> str:
    """The BM25 query for a user query (stop words removed)."""
    return " ".join(terms(text))
