"""Plain data types shared by chunking, indexing, search and the ADR checker."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Symbol:
    """A definition found in a source file (1-based inclusive lines)."""

    name: str
    kind: str
    start_line: int
    end_line: int
    scope: str = ""


@dataclass(frozen=True)
class Chunk:
    """One searchable slice of a file (1-based inclusive lines, `/`-separated relative path)."""

    path: str
    language: str
    start_line: int
    end_line: int
    content: str
    symbol: str = ""
    symbol_kind: str = "module"
    scope: str = ""
    context: str = ""
    names: tuple[str, ...] = field(default_factory=tuple)  # every definition in the chunk, `symbol` first

    @property
    def content_hash(self) -> str:
        """Hash of what gets embedded: identical text shares one cached vector."""
        return hashlib.sha256(self.embed_text.encode("utf-8")).hexdigest()

    @property
    def embed_text(self) -> str:
        """The text handed to the embedding model: no path, so a rename re-uses cached vectors."""
        head = ".".join(p for p in (self.scope, self.symbol) if p)
        body = f"{self.context}\n{self.content}" if self.context else self.content
        return f"{head}\n{body}" if head else body


@dataclass
class RouteHit:
    """One hit of one search route: the chunk's stored fields and its rank (0-based) in that route."""

    id: str
    rank: int
    distance: float
    fields: dict[str, Any]
