"""The embedded Milvus Lite's memory changes (zgrep/store/lite.py) keep every answer as it was."""

from __future__ import annotations

import gc
import random
from pathlib import Path

import numpy as np
from milvus_lite.index.sparse_inverted import SparseInvertedIndex

from zgrep.store import lite
from zgrep.store.milvus import MilvusStore

CompactBM25 = lite._compact_class(SparseInvertedIndex)


def _corpus(rng: random.Random) -> tuple[list[dict[int, float]], list[int]]:
    vocab = [rng.randrange(2**32) for _ in range(rng.randint(1, 60))]
    docs = [{t: float(rng.randint(1, 5)) for t in rng.sample(vocab, rng.randint(0, min(12, len(vocab))))}
            for _ in range(rng.randint(0, 300))]
    return docs, vocab


def test_compact_bm25_ranks_and_scores_exactly_as_milvus_lite() -> None:
    rng = random.Random(3)
    for _ in range(40):
        docs, vocab = _corpus(rng)
        n = len(docs)
        build_mask = np.array([rng.random() < .8 for _ in range(n)]) if n and rng.random() < .5 else None
        theirs, ours = SparseInvertedIndex(k1=1.2, b=0.7), CompactBM25(k1=1.2, b=0.7)
        theirs.build(docs, build_mask)
        ours.build(docs, build_mask)
        assert (ours.doc_count, ours.avgdl) == (theirs.doc_count, theirs.avgdl)
        queries = [{t: float(rng.randint(1, 2)) for t in rng.sample(vocab, rng.randint(0, min(5, len(vocab))))}
                   for _ in range(4)] + [{7: 1.0}]
        search_mask = np.array([rng.random() < .7 for _ in range(n)]) if n and rng.random() < .5 else None
        for top_k in (1, 5, 50, 400):
            their_ids, their_dists = theirs.search(queries, top_k, search_mask)
            our_ids, our_dists = ours.search(queries, top_k, search_mask)
            assert (our_ids == their_ids).all()
            assert (our_dists == their_dists).all()  # bit for bit, ties in the same order


def test_inner_product_without_the_copy_ranks_as_milvus_lite_does() -> None:
    """The masked inner-product search against Milvus Lite's own, on random vectors and masks (ties aside:
    random floats have none)."""
    from milvus_lite.index.brute_force import BruteForceIndex

    lite.install()
    theirs = lite._ORIGINALS["BruteForceIndex.search"]
    assert BruteForceIndex.search is not theirs  # the replacement is what runs
    rng = np.random.default_rng(5)
    for n in (1, 7, 300):
        index = BruteForceIndex(rng.standard_normal((n, 16)).astype(np.float32), "IP")
        queries = rng.standard_normal((3, 16)).astype(np.float32)
        for mask in (None, rng.random(n) < 0.6, np.zeros(n, dtype=bool)):
            for top_k in (1, 5, 400):
                our_ids, our_dists = index.search(queries, top_k, mask)
                their_ids, their_dists = theirs(index, queries, top_k, mask)
                assert (our_ids == their_ids).all()
                np.testing.assert_allclose(our_dists, their_dists, rtol=1e-5, atol=1e-6)


def _row(i: int, version: int) -> dict:
    return {"id": f"c{i}", "path": f"src/f{i}.py", "language": "python", "symbol": f"f{i}", "names": [f"f{i}"],
            "symbol_kind": "function", "scope": "", "start_line": version, "end_line": version + 3, "mtime": 1,
            "content": f"def f{i}(): return {version}", "lexical": f"token{i % 7} shared v{version}",
            "dense": [float((i + k) % 5) + 0.5 for k in range(8)]}


def test_flushed_rows_read_back_unchanged_after_reopen(tmp_path: Path) -> None:
    """Upserts across insert batches, a flush (the Arrow copy), a reopen: every row is its newest version."""
    uri = str(tmp_path / "milvus.db")
    store = MilvusStore(uri, "c", 8)
    store.create()
    for version, ids in enumerate((range(0, 60), range(40, 100), range(90, 120))):
        store.insert([_row(i, version) for i in ids])
    store.flush()
    store.close()
    store = MilvusStore(uri, "c", 8)
    try:
        got = {r["symbol"]: r["start_line"] for r in store.rows(["symbol", "start_line"])}
        want = {f"f{i}": 0 if i < 40 else 1 if i < 90 else 2 for i in range(120)}
        assert got == want
        hits = store.search_lexical("token3", 200)
        assert {h.fields["symbol"] for h in hits} == {f"f{i}" for i in range(120) if i % 7 == 3}
        query = np.array([float(k % 3) for k in range(8)])
        products = {f"f{i}": float(np.dot(query, _row(i, 0)["dense"])) for i in range(120)}
        best = max(products.values())
        dense = store.search_dense(query.tolist(), 3)
        assert [products[h.fields["symbol"]] for h in dense] == [best] * 3
    finally:
        store.close()


def test_flush_builds_the_same_table_as_milvus_lite(tmp_path: Path) -> None:
    """The Arrow-copy flush against Milvus Lite's own cell-by-cell one, on a memtable with upserts."""
    from milvus_lite.engine.collection import Collection

    store = MilvusStore(str(tmp_path / "milvus.db"), "c", 8)
    try:
        store.create()
        for version, ids in enumerate((range(0, 30), range(20, 50), range(45, 70))):
            store.insert([_row(i, version) for i in ids])
        memtable = next(o for o in gc.get_objects() if isinstance(o, Collection))._memtable
        assert type(memtable)._build_data_table is not lite._ORIGINALS["_build_data_table"]  # the Arrow copy runs
        live = [(batch, row) for batch, row, _ in memtable._pk_index.values()]
        ours = memtable._build_data_table(live)
        theirs = lite._ORIGINALS["_build_data_table"](memtable, live)
        assert ours.num_rows == 70
        assert ours.equals(theirs) and ours.schema.equals(theirs.schema)
    finally:
        store.close()
