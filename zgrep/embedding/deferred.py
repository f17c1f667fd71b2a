"""A zgrep static model known by its folder's config.json alone until its first embedding: a process
that needs only the model's id and dimension (an index whose workers embed, a no-change `zg index`)
never imports numpy or tokenizers, nor holds the table."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

from zgrep.embedding.base import Embedder, EmbeddingError
from zgrep.embedding.folder import deferred_identity

if TYPE_CHECKING:
    import numpy as np


class DeferredStatic:
    """The static model of a zgrep folder, loaded (once, whichever thread asks first) by its first
    embedding."""

    def __init__(self, folder: Path, model_id: str | None, identity: tuple[str, int]) -> None:
        self.model_id, self.dim = identity
        self.source: tuple[str, str | None] = (str(folder), model_id)  # what a worker process loads
        self._model: Any = None
        self._loading = threading.Lock()

    def loaded(self) -> Any:
        """The StaticEmbedder itself (EmbeddingError when its table is not config.json's dimension)."""
        with self._loading:
            if self._model is None:
                from zgrep.embedding.static import StaticEmbedder

                model = StaticEmbedder.from_dir(*self.source)
                if model.dim != self.dim:  # the index was made for config.json's dimension
                    raise EmbeddingError(
                        f"{self.source[0]}: config.json says dim {self.dim}, "
                        f"embeddings.npy has {model.dim}"
                    )
                self._model = model
        return self._model

    def embed(self, texts: list[str]) -> np.ndarray:
        vectors: np.ndarray = self.loaded().embed(texts)
        return vectors

    def embed_query(self, text: str) -> np.ndarray:
        vector: np.ndarray = self.loaded().embed_query(text)
        return vector


def open_static(path: Path, model_id: str | None = None) -> Embedder:
    """The static model in folder `path`: deferred for a zgrep int8 folder whose config.json gives
    its dimension, else loaded now (a model2vec folder)."""
    identity = deferred_identity(path, model_id)
    if identity is not None:
        return DeferredStatic(path, model_id, identity)
    from zgrep.embedding.static import StaticEmbedder

    return StaticEmbedder.from_dir(path, model_id)
