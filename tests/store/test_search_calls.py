"""The store's search calls (`search_dense`, `search_lexical_many`) send their own request and read
the reply column by column: they find what pymilvus's `MilvusClient.search` finds, hit for hit
(ids, order, scores and every field), honour the filter and the limit, and answer a text list with
repeats or blanks text by text."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from corpus import FILES, opened_index
from zgrep.search.text import lexical_query
from zgrep.store.milvus import SCALAR_FIELDS

FILTERS = ["", 'path like "src/%"', 'language == "python"', 'path == "no/such/file.py"']


@pytest.fixture(scope="module")
def opened(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Any, Any]]:
    yield from opened_index(tmp_path_factory.mktemp("searches"), FILES)


def _pymilvus_hits(
    store: Any, data: list[Any], field: str, metric: str, limit: int, expr: str
) -> Any:
    """What pymilvus's own search returns for the same query: (id, rank, score, fields) per hit."""
    res = store.client.search(
        store.collection,
        data,
        anns_field=field,
        limit=limit,
        filter=expr,
        output_fields=list(SCALAR_FIELDS),
        search_params={"metric_type": metric},
    )
    return [
        [(h["id"], rank, float(h["distance"]), dict(h["entity"])) for rank, h in enumerate(hits)]
        for hits in res
    ]


def _plain(hits: Any) -> list[tuple[Any, ...]]:
    return [(h.id, h.rank, h.distance, dict(h.fields)) for h in hits]


@pytest.mark.parametrize("expr", FILTERS)
@pytest.mark.parametrize("limit", [1, 3, 50])
def test_dense_hits_are_pymilvus_hits(opened: tuple[Any, Any], expr: str, limit: int) -> None:
    engine, store = opened
    vector = engine.embedder.embed_query("look up the display name of a user").tolist()
    hits = store.search_dense(vector, limit, expr)
    assert _plain(hits) == _pymilvus_hits(store, [vector], "dense", "IP", limit, expr)[0]
    assert len(hits) <= limit
    if expr == "":
        assert len(hits) == min(limit, store.count())
        assert set(hits[0].fields) == set(SCALAR_FIELDS)
        assert all(isinstance(h.fields["names"], list) for h in hits)
    if expr.startswith("path like"):
        assert all(h.fields["path"].startswith("src/") for h in hits)


@pytest.mark.parametrize("expr", FILTERS)
@pytest.mark.parametrize("limit", [2, 50])
def test_lexical_hits_are_pymilvus_hits_text_by_text(
    opened: tuple[Any, Any], expr: str, limit: int
) -> None:
    _, store = opened
    first, second = lexical_query("session cookies secret"), lexical_query("display name")
    texts = [first, "", second, first, lexical_query("qqqzzz")]
    found = store.search_lexical_many(texts, limit, expr)
    assert len(found) == len(texts)
    expected = _pymilvus_hits(store, [first, second], "sparse", "BM25", limit, expr)
    assert [_plain(hits) for hits in found] == [expected[0], [], expected[1], expected[0], []]
    assert all(len(hits) <= limit for hits in found)
    if expr == "":
        assert found[0] and found[2], "both texts are spelled in the corpus"
    assert _plain(store.search_lexical(second, limit, expr)) == expected[1]
