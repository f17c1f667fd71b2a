"""The row zg stores for a chunk, with the field limits of the collection's schema (driver-free)."""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING

from zgrep.types import Chunk, ChunkFields

if TYPE_CHECKING:
    import numpy as np

MAX_NAMES = 64  # the `names` ARRAY field's capacity
MAX_CONTENT_BYTES = 60_000  # below the VARCHAR limit of `content` and `lexical` (65,535 bytes)


def clip_utf8(text: str, limit: int = MAX_CONTENT_BYTES) -> str:
    """Cut `text` so its UTF-8 encoding fits in `limit` bytes."""
    raw = text.encode("utf-8")
    return text if len(raw) <= limit else raw[:limit].decode("utf-8", "ignore")


def chunk_id(path: str, start: int, end: int, content_hash: str) -> str:
    """A stable primary key for a chunk."""
    return hashlib.sha256(
        f"{path}\0{start}\0{end}\0{content_hash}".encode("utf-8", "surrogateescape")
    ).hexdigest()[:40]


def chunk_row(
    chunk: Chunk, content_hash: str, lexical: str, vector: np.ndarray, mtime: float
) -> ChunkFields:
    """The collection row of one chunk (every field of the schema except the BM25 `sparse` output)."""
    return {
        "id": chunk_id(chunk.path, chunk.start_line, chunk.end_line, content_hash),
        "path": chunk.path,
        "language": chunk.language,
        "symbol": chunk.symbol[:500],
        "names": [n[:500] for n in chunk.names[:MAX_NAMES]],
        "symbol_kind": chunk.symbol_kind,
        "scope": chunk.scope[:1000],
        "start_line": chunk.start_line,
        "end_line": chunk.end_line,
        "mtime": int(mtime),
        "content": clip_utf8(chunk.content),
        "lexical": clip_utf8(lexical),
        # Python floats by the array's own tolist: the same values, ~10x faster than float() of each
        "dense": vector.tolist(),
    }


def plain_row(row_id: str, path: str, text: str, dense: list[float]) -> ChunkFields:
    """The row of a one-line module chunk holding `text` (what the doctor's probe stores)."""
    return {
        "id": row_id,
        "path": path,
        "language": "text",
        "symbol": "",
        "names": [],
        "symbol_kind": "module",
        "scope": "",
        "start_line": 1,
        "end_line": 1,
        "mtime": 0,
        "content": text,
        "lexical": text,
        "dense": dense,
    }
