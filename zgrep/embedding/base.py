"""The one interface every embedding provider implements."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from zgrep.service import ErrorCode, FixedCodeError

if TYPE_CHECKING:
    import numpy as np


class EmbeddingError(FixedCodeError):
    """An embedding provider failed in a way the user must hear about (one line)."""

    CODE = ErrorCode.EMBEDDING


class Embedder(Protocol):
    """Turns texts into L2-normalised float32 vectors of shape (len(texts), dim)."""

    model_id: str

    @property
    def dim(self) -> int:
        """Vector width."""
        ...

    def embed(self, texts: list[str]) -> np.ndarray:
        """Embed documents (chunks)."""
        ...

    def embed_query(self, text: str) -> np.ndarray:
        """Embed one search query; shape (dim,)."""
        ...
