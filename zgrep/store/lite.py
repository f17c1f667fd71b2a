"""Memory and per-search cost of embedded Milvus Lite 3.2, by replacing five of its pieces in-process.

Milvus Lite 3.2 keeps each segment's BM25 postings as Python lists of (row, tf) tuples (~470 MB
for Django's 43k chunks), turns every cell of a flushed memtable into a Python object (~700 MB at
once), reads a second copy of each segment's vectors for a FLAT index, copies every vector on each
inner-product search and reads Parquet through mimalloc, which keeps ~200 MB it has freed.
`install()` swaps in `CompactBM25Index` (the same scores, bit for bit, from numpy arrays: ~8 bytes
a posting), a flush that copies Arrow columns, a FLAT index over the segment's own vectors, inner
product without the copy, a 48 MiB memtable and the system allocator. It leaves a Milvus Lite it
was not written for untouched.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import math
import os
from collections.abc import Callable, Sequence
from itertools import chain, groupby
from operator import itemgetter
from typing import Any

import numpy as np

# The Milvus Lite releases whose pieces this replaces, checked against their source (signatures, BM25 formula).
SUPPORTED = ("3.2.2",)  # exact releases: a patch release may move the internals replaced here
MEMTABLE_BYTES = 48 << 20  # Milvus Lite's default is 128 MiB; a flush briefly holds ~4x this (Django: peak 679 MB, 758 at 64 MiB)
_installed = False
_ORIGINALS: dict[str, Any] = {}  # Milvus Lite's own methods this replaced (the tests compare against them)


def install() -> bool:
    """Tune the embedded Milvus Lite of this process once; False when its version is not a known one."""
    global _installed
    if _installed:
        return True
    try:
        from importlib.metadata import version

        import pyarrow as pa
        from milvus_lite.index import sparse_factory, sparse_inverted
        from milvus_lite.engine import collection
        from milvus_lite.index.brute_force import BruteForceIndex
        from milvus_lite.storage.memtable import MemTable
        from milvus_lite.storage.segment import Segment
    except Exception:  # no Milvus Lite here (a remote server only): nothing to tune
        return False
    if version("milvus-lite") not in SUPPORTED:
        return False
    pa.set_memory_pool(pa.system_memory_pool())
    sparse_factory.SparseInvertedIndex = _compact_class(sparse_inverted.SparseInvertedIndex)
    _ORIGINALS["_build_data_table"] = MemTable._build_data_table
    MemTable._build_data_table = _arrow_data_table(MemTable._build_data_table)
    Segment.build_or_load_index = _flat_on_segment_vectors(Segment.build_or_load_index)
    _ORIGINALS["BruteForceIndex.search"] = BruteForceIndex.search
    BruteForceIndex.search = _ip_without_copy(BruteForceIndex.search)
    if "MILVUS_LITE_MEMTABLE_MEMORY_LIMIT_BYTES" not in os.environ:  # the user's own budget wins
        collection.MEMTABLE_MEMORY_LIMIT = MEMTABLE_BYTES
    _installed = True
    return True


def release_freed_memory() -> None:
    """Hand memory the C allocator keeps after large frees back to the system (glibc only)."""
    name = ctypes.util.find_library("c")
    if name:
        try:
            ctypes.CDLL(name).malloc_trim(0)
        except (OSError, AttributeError):  # not glibc: its allocator decides
            pass


def _arrow_data_table(original: Callable[[Any, list[tuple[int, int]]], Any]) -> Callable[[Any, list[tuple[int, int]]], Any]:
    """MemTable._build_data_table by Arrow `take` over each run of rows from one batch (the same table)."""
    import pyarrow as pa

    def build(memtable: Any, rows: list[tuple[int, int]]) -> Any:
        schema = memtable._data_schema
        pieces = []
        for batch_index, run in groupby(rows, key=itemgetter(0)):
            batch = memtable._insert_batches[batch_index]
            if any(batch.schema.field(f.name).type != f.type for f in schema):
                return original(memtable, rows)  # a column stored differently: the cell-by-cell original
            pieces.append(batch.select(schema.names).take(pa.array([r for _, r in run], type=pa.int64())))
        if not pieces:
            return original(memtable, rows)
        return pa.Table.from_batches(pieces).cast(schema)

    return build


def _flat_on_segment_vectors(original: Callable[[Any, Any, str], None]) -> Callable[[Any, Any, str], None]:
    """Segment.build_or_load_index with a FLAT index made over the vectors the segment holds (free),
    never a second copy read from its sidecar file; other index types as before."""

    def build_or_load(segment: Any, spec: Any, index_dir: str) -> None:
        if spec.index_type != "FLAT" or spec.field_name in segment.indexes or segment.num_rows == 0:
            original(segment, spec, index_dir)
            return
        from milvus_lite.index.factory import build_index_from_spec

        vectors, _ = segment.vector_data(spec.field_name)
        segment.attach_index(build_index_from_spec(spec, vectors), field_name=spec.field_name)

    return build_or_load


def _ip_without_copy(original: Callable[..., tuple[np.ndarray, np.ndarray]]) -> Callable[..., tuple[np.ndarray, np.ndarray]]:
    """BruteForceIndex.search for inner product over every row with masked rows set to +inf, instead
    of first copying the valid rows (a copy of all vectors on every search); other metrics as before."""

    def search(index: Any, queries: np.ndarray, top_k: int, valid_mask: np.ndarray | None = None,
               params: dict[str, Any] | None = None) -> tuple[np.ndarray, np.ndarray]:
        if index.metric != "IP" or index.num_vectors == 0 or top_k <= 0:
            return original(index, queries, top_k, valid_mask, params)
        queries = np.asarray(queries, dtype=np.float32).reshape(-1, index.dim)
        dists = -(queries @ index._vectors.T)
        valid = index.num_vectors
        if valid_mask is not None:
            if valid_mask.shape[0] != index.num_vectors:
                return original(index, queries, top_k, valid_mask, params)  # its own error
            dists[:, ~valid_mask] = np.inf
            valid = int(valid_mask.sum())
        ids = np.full((len(queries), top_k), -1, dtype=np.int64)
        out = np.full((len(queries), top_k), np.inf, dtype=np.float32)
        k = min(top_k, valid)
        for q in range(len(queries) if k else 0):
            row = dists[q]
            part = np.argpartition(row, k - 1)[:k] if k < len(row) else np.arange(len(row))
            best = part[np.argsort(row[part], kind="stable")][:k]
            ids[q, : len(best)], out[q, : len(best)] = best, row[best]
        return ids, out

    return search


def _compact_class(base: type) -> type:
    """CompactBM25Index as a subclass of Milvus Lite's own, so its isinstance checks still hold."""
    return type("CompactBM25Index", (CompactBM25Index, base), {})


class CompactBM25Index:
    """One segment's BM25 postings in CSR arrays; scores equal Milvus Lite's float32 arithmetic."""

    def __init__(self, k1: float = 1.5, b: float = 0.75) -> None:
        self.k1 = k1
        self.b = b
        self.doc_count = 0
        self.avgdl = 0.0
        self._terms = np.zeros(0, dtype=np.uint32)
        self._starts = np.zeros(1, dtype=np.int64)
        self._rows = np.zeros(0, dtype=np.int32)
        self._tfs = np.zeros(0, dtype=np.float32)
        self._doc_lengths = np.zeros(0, dtype=np.float32)

    def build(self, sparse_vectors: Sequence[dict[int, float]], valid_mask: np.ndarray | None = None) -> None:
        """Index N term→tf dicts (rows where `valid_mask` is False are left out)."""
        from milvus_lite.index.sparse_common import validate_mask

        n = len(sparse_vectors)
        mask = validate_mask(valid_mask, n)
        sizes = np.fromiter((len(v) for v in sparse_vectors), dtype=np.int64, count=n)
        total = int(sizes.sum())
        terms = np.fromiter(chain.from_iterable(sparse_vectors), dtype=np.uint32, count=total)
        tfs = np.fromiter(chain.from_iterable(v.values() for v in sparse_vectors), dtype=np.float64, count=total)
        rows = np.repeat(np.arange(n, dtype=np.int32), sizes)
        lengths = np.bincount(rows, weights=tfs, minlength=n)
        if mask is not None:
            keep = mask[rows]
            terms, tfs, rows = terms[keep], tfs[keep], rows[keep]
            lengths[~mask] = 0.0
        order = np.argsort(terms, kind="stable")
        terms, self._rows, self._tfs = terms[order], rows[order], tfs[order].astype(np.float32)
        self._terms, first = np.unique(terms, return_index=True)
        self._starts = np.append(first, len(terms)).astype(np.int64)
        self.doc_count = n if mask is None else int(mask.sum())
        self.avgdl = float(lengths.sum()) / self.doc_count if self.doc_count else 0.0
        self._doc_lengths = lengths.astype(np.float32)

    def search(self, query_sparse_vectors: Sequence[dict[int, float]], top_k: int,
               valid_mask: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(row ids, -score) per query, top_k wide, padded with -1 / +inf, ties in Milvus Lite's order."""
        from milvus_lite.index.sparse_common import empty_results, validate_mask

        mask = validate_mask(valid_mask, len(self._doc_lengths))
        all_ids, all_dists = empty_results(len(query_sparse_vectors), top_k)
        if self.doc_count == 0:
            return all_ids, all_dists
        for qi, query in enumerate(query_sparse_vectors):
            scores, first_term = self._scores(query, mask)
            hit = np.flatnonzero(first_term < len(query))
            if not hit.size:
                continue
            ranked = hit[np.lexsort((hit, first_term[hit], -scores[hit]))][:top_k]
            all_ids[qi, : len(ranked)] = ranked
            all_dists[qi, : len(ranked)] = -scores[ranked]
        return all_ids, all_dists

    def _scores(self, query: dict[int, float], mask: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
        """float32 scores per row and the index of the first query term that reached each row."""
        n = len(self._doc_lengths)
        scores = np.zeros(n, dtype=np.float32)
        first_term = np.full(n, len(query), dtype=np.int64)
        k1, b = self.k1, self.b
        avgdl = self.avgdl if self.avgdl > 0 else 1.0
        for t, (term, weight) in enumerate(query.items()):
            pos = int(np.searchsorted(self._terms, term))
            if pos >= len(self._terms) or int(self._terms[pos]) != term:
                continue
            lo, hi = int(self._starts[pos]), int(self._starts[pos + 1])
            df = hi - lo
            rows, tfs = self._rows[lo:hi], self._tfs[lo:hi]
            if mask is not None:
                keep = mask[rows]
                rows, tfs = rows[keep], tfs[keep]
            idf = math.log((self.doc_count - df + 0.5) / (df + 0.5) + 1.0)
            dl = self._doc_lengths[rows]
            numerator = (tfs.astype(np.float64) * (k1 + 1.0)).astype(np.float32)
            denominator = tfs + np.float32(k1) * (np.float32(1.0 - b) + np.float32(b) * dl / np.float32(avgdl))
            scores[rows] += np.float32(idf) * (numerator / denominator) * np.float32(weight)
            fresh = rows[first_term[rows] == len(query)]
            first_term[fresh] = t
        return scores, first_term

    def save(self, path: str) -> None:
        """Milvus Lite 3.2 never persists BM25 postings; refuse rather than write a format it cannot read."""
        raise NotImplementedError("CompactBM25Index is rebuilt from the segment, never saved")

    @classmethod
    def load(cls, path: str, k1: float = 1.5, b: float = 0.75) -> Any:
        """See save()."""
        raise NotImplementedError("CompactBM25Index is rebuilt from the segment, never loaded")
