"""A search's query vector is kept per model (search.run): a repeated query does not run the model
again, and two models in one process (a daemon serving workspaces indexed with different models)
never get each other's vector for the same text."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

import zgrep
from zgrep.embedding.factory import make_embedder
from zgrep.search.run import _query_vector

STATIC = str(Path(zgrep.__file__).parent / "models" / "minilm-l6-static")  # another bundled model


class Counted:
    """A real model whose query embeddings are counted."""

    def __init__(self, model: Any) -> None:
        self.model = model
        self.queries: list[str] = []

    def embed_query(self, text: str) -> np.ndarray:
        self.queries.append(text)
        vector: np.ndarray = self.model.embed_query(text)
        return vector


def test_each_model_answers_a_query_with_its_own_vector() -> None:
    code, static = make_embedder("local"), make_embedder("local", STATIC)
    query = "retry the request with backoff"
    assert code.embed_query(query).tolist() != static.embed_query(query).tolist()
    for model in (code, static, code, static):
        assert _query_vector(model, query) == model.embed_query(query).tolist()


def test_a_repeated_query_is_embedded_once() -> None:
    model = Counted(make_embedder("local"))
    first = _query_vector(model, "parse the config file")
    other = _query_vector(model, "open a socket")
    again = _query_vector(model, "parse the config file")
    assert again == first != other
    assert model.queries == ["parse the config file", "open a socket"]
