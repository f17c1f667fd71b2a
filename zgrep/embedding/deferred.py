"""A zgrep static model known by its folder's config.json alone until its first embedding: a process
that needs only the model's id and dimension (an index whose workers embed, a no-change `zg index`)
never imports numpy or tokenizers, nor holds the table, and one that embeds only queries through the
folder's query encoder (a search) never loads the table."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

from zgrep.embedding.base import Embedder, EmbeddingError
from zgrep.embedding.folder import deferred_identity

if TYPE_CHECKING:
    import numpy as np

    from zgrep.embedding.static import QueryEncoder


class DeferredStatic:
    """The static model of a zgrep folder, loaded (once, whichever thread asks first) by its first
    chunk embedding; a query goes through the folder's query encoder alone when it names one (the
    table is not loaded for it)."""

    def __init__(self, folder: Path, model_id: str | None, identity: tuple[str, int]) -> None:
        self.model_id, self.dim = identity
        self.source: tuple[str, str | None] = (str(folder), model_id)  # what a worker process loads
        self._model: Any = None
        # [the folder's QueryEncoder or None] once config.json was read for it: one for both sides
        self._query: list[QueryEncoder | None] = []
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
                if self._query:
                    model.query_encoder = self._query[0]
                else:
                    self._query.append(model.query_encoder)
                self._model = model
        return self._model

    def query_encoder(self) -> QueryEncoder | None:
        """The folder's query encoder (loaded on its first query), or None when queries go through
        the table."""
        with self._loading:
            if not self._query:
                from zgrep.embedding.static import query_encoder_of

                self._query.append(query_encoder_of(Path(self.source[0])))
            return self._query[0]

    def load_query_ahead(self) -> None:
        """Begin loading the query encoder on a thread (nothing to load when the folder names none);
        the first query waits for it, and meets a failure again as its own error."""
        if self._query and (self._query[0] is None or self._query[0].loaded()):
            return  # (a daemon's model: loaded by its first search)
        threading.Thread(target=self._load_query, name="zg-query-model", daemon=True).start()

    def _load_query(self) -> None:
        try:
            encoder = self.query_encoder()
            if encoder is not None:
                encoder.load()
        except Exception:  # (the query raises it)
            pass

    def embed(self, texts: list[str]) -> np.ndarray:
        vectors: np.ndarray = self.loaded().embed(texts)
        return vectors

    def embed_query(self, text: str) -> np.ndarray:
        encoder = self.query_encoder()
        if encoder is None:
            vector: np.ndarray = self.loaded().embed_query(text)
            return vector
        vector = encoder.embed(text)
        if len(vector) != self.dim:  # the index was made for config.json's dimension
            raise EmbeddingError(
                f"{self.source[0]}: config.json says dim {self.dim}, its query encoder gives {len(vector)}"
            )
        return vector


def open_static(path: Path, model_id: str | None = None) -> Embedder:
    """The static model in folder `path`: deferred for a zgrep int8 folder whose config.json gives
    its dimension, else loaded now (a model2vec folder)."""
    identity = deferred_identity(path, model_id)
    if identity is not None:
        return DeferredStatic(path, model_id, identity)
    from zgrep.embedding.static import StaticEmbedder

    return StaticEmbedder.from_dir(path, model_id)
