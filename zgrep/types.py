"""Plain data types shared by chunking, indexing, search, relations and the ADR checker."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypedDict

from zgrep.qualname import qualify

if TYPE_CHECKING:
    from zgrep.contracts import DefinitionDoc


@dataclass(frozen=True)
class Definition:
    """A definition in a source file: what chunking, the ADR checker, relations extraction and the
    relations graph all mean by one.

    Lines are 1-based inclusive. `scope` is the qualified name of what encloses it ("" at the top
    level); `path` the workspace file it is in (known once stored: "" while one file is extracted);
    `type` the class (or call, `f()`) its value or result is, when the source says so ("", and not
    part of its identity)."""

    name: str
    kind: str
    start: int
    end: int
    scope: str = ""
    path: str = ""
    type: str = field(default="", compare=False)

    @property
    def qualname(self) -> str:
        """Its scope and name (`Rack.Response`): the scope of what it holds."""
        return qualify(self.scope, self.name)

    def to_json(self) -> DefinitionDoc:
        """The JSON the relations ops answer with (a callers entry's, a trace node's definition)."""
        return {
            "path": self.path,
            "start_line": self.start,
            "end_line": self.end,
            "symbol": self.name,
            "scope": self.scope or None,
            "kind": self.kind,
        }

    @classmethod
    def from_json(cls, entry: DefinitionDoc) -> Definition:
        """The definition a `to_json`-shaped dict (a callers entry, a trace node) names."""
        return cls(
            entry["symbol"],
            entry["kind"],
            entry["start_line"],
            entry["end_line"],
            entry["scope"] or "",
            entry["path"],
        )


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
    # every definition in the chunk, `symbol` first
    names: tuple[str, ...] = field(default_factory=tuple)

    @property
    def content_hash(self) -> str:
        """Hash of what gets embedded: identical text shares one cached vector."""
        return hashlib.sha256(self.embed_text.encode("utf-8")).hexdigest()

    @property
    def embed_text(self) -> str:
        """The text handed to the embedding model: no path, so a rename re-uses cached vectors."""
        head = qualify(self.scope, self.symbol)
        body = f"{self.context}\n{self.content}" if self.context else self.content
        return f"{head}\n{body}" if head else body


class ChunkFields(TypedDict, total=False):
    """A chunk's stored fields (store/rows.chunk_row writes them all; a route or query returns those
    it asks for)."""

    id: str
    path: str
    language: str
    symbol: str
    names: list[str]
    symbol_kind: str
    scope: str
    start_line: int
    end_line: int
    mtime: int
    content: str
    lexical: str
    dense: list[float]


@dataclass
class RouteHit:
    """One hit of one search route: the chunk's stored fields and its rank (0-based) in that route."""

    id: str
    rank: int
    distance: float
    fields: ChunkFields
