"""The per-file CPU work of an index run (chunking, BM25 text, relations, static-model vectors), on
both cores when it pays.

Batches of `(path, text)` go to `prepare_batch`; a big run spreads them over worker processes
(started fresh, never forked: the daemon and Milvus Lite run threads) while the calling process
writes earlier batches to Milvus. Workers import no store or network code; they load the static
model and the vector cache when the recipe names them.
"""

from __future__ import annotations

import os
import pickle
import signal
import struct
import subprocess
import sys
import threading
from collections import deque
from dataclasses import dataclass
from collections.abc import Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from functools import cache
from pathlib import Path
from typing import IO, Any, cast

from zgrep.chunking import chunk_file, detect_language
from zgrep.index.filestats import FileTerms, file_terms
from zgrep.index.generated import is_generated
from zgrep.index.timing import PhaseClock
from zgrep.relations.extract import FileRelations, extract
from zgrep.search.text import lexical_document
from zgrep.types import Chunk

POOL_MIN_FILES = 400  # below this, starting workers costs more than it saves
IN_FLIGHT_PER_WORKER = 2  # batches queued per worker: keeps both cores busy, bounds memory


@dataclass
class PreparedFile:
    """One file's chunks with their BM25 texts and content hashes, its relations, language, whether
    it is generated and its whole-file term counts."""

    path: str
    language: str
    chunks: list[Chunk]
    lexical: list[str]
    hashes: list[str]
    relations: FileRelations
    generated: bool
    terms: FileTerms


def lexical_text(chunk: Chunk) -> str:
    """The BM25 field: path, scope and symbol (identifiers split), then the code."""
    head = " ".join(
        (chunk.path.replace("/", " ").replace(".", " "), chunk.scope, chunk.symbol, chunk.symbol)
    )
    return lexical_document(f"{head}\n{chunk.content}")


@dataclass(frozen=True)
class Recipe:
    """How to prepare: chunk context lines, and the static model's (folder, id) when vectors are
    made here too (a worker process embeds and caches its own batches; an HTTP model stays with the
    caller)."""

    context_lines: int
    model: tuple[str, str | None] | None = None
    cache: str | None = None  # the vector cache the model's vectors are written to


@dataclass
class PreparedBatch:
    """Prepared files in input order, the seconds each step took (summed over the batch), and with a
    recipe's model, the vector of every chunk."""

    files: list[PreparedFile]
    seconds: dict[str, float]
    vectors: dict[str, Any] | None = None  # by content hash
    embedded: int = 0  # vectors the model computed (the rest came from the cache)


def prepare_file(path: str, text: str, context_lines: int, clock: PhaseClock) -> PreparedFile:
    """Everything an index run derives from one file's text (one parse serves chunks and relations)."""
    with clock.phase("chunk"):
        chunks = chunk_file(path, text, context_lines=context_lines)
    with clock.phase("lexical"):
        lexical = [lexical_text(c) for c in chunks]
        hashes = [c.content_hash for c in chunks]
        counts = file_terms(text)
    with clock.phase("relations"):
        relations = extract(path, text)
    language = chunks[0].language if chunks else detect_language(path)
    return PreparedFile(
        path, language, chunks, lexical, hashes, relations, is_generated(text, language), counts
    )


def prepare_batch(items: list[tuple[str, str]], recipe: Recipe) -> PreparedBatch:
    """`prepare_file` for each `(path, text)`, in order (embedded too when the recipe names a
    model)."""
    clock = PhaseClock()
    files = [prepare_file(path, text, recipe.context_lines, clock) for path, text in items]
    vectors, embedded = None, 0
    if recipe.model is not None:
        vectors, embedded = _embed(files, recipe, clock)
    return PreparedBatch(files, clock.seconds, vectors, embedded)


def _embed(
    files: list[PreparedFile], recipe: Recipe, clock: PhaseClock
) -> tuple[dict[str, Any], int]:
    """`cached_vectors` for every chunk of `files` with the recipe's model and cache."""
    assert recipe.model is not None
    texts = {h: c.embed_text for f in files for h, c in zip(f.hashes, f.chunks)}
    return cached_vectors(
        _model(*recipe.model), _cache(recipe.cache) if recipe.cache else None, texts, clock
    )


def cached_vectors(
    model: Any, store: Any, texts: dict[str, str], clock: PhaseClock
) -> tuple[dict[str, Any], int]:
    """Vectors by content hash for `{hash: embed text}`, embedding (and caching in `store`, a
    VectorCache or None) only what the cache lacks; with the number the model embedded."""
    with clock.phase("cache_read"):
        found = store.get_many(model.model_id, list(texts)) if store else {}
    missing = [h for h in texts if h not in found]
    if missing:
        with clock.phase("embed"):
            fresh = dict(zip(missing, model.embed([texts[h] for h in missing])))
        if store:
            with clock.phase("cache_write"):
                store.put_many(model.model_id, fresh)
        found.update(fresh)
    return found, len(missing)


@cache
def _cache(path: str) -> Any:
    """The vector cache, opened once per process."""
    from zgrep.embedding.cache import VectorCache

    return VectorCache(Path(path))


@cache
def _model(folder: str, model_id: str | None) -> Any:
    """The static model, loaded once per process."""
    from zgrep.embedding.static import StaticEmbedder

    return StaticEmbedder.from_dir(folder, model_id)


def worker_count(files: int) -> int:
    """Worker processes for a run over `files` files: none for small runs, else one per core (at
    most 4). ZG_INDEX_WORKERS=N asks for N (0: none; benches compare counts with it)."""
    asked = os.environ.get("ZG_INDEX_WORKERS", "")
    if files < POOL_MIN_FILES or asked == "0":
        return 0
    if asked.isdigit():
        return min(int(asked), 8)
    cores = (
        len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    )
    return 0 if cores < 2 else min(cores, 4)


class _Worker:
    """One worker process (`serve`) fed pickled batches over its pipes, length-prefixed. Plain
    pipes, not multiprocessing: nothing to clean up when a run is killed or interrupted. `-P` keeps
    the workspace (the working directory) off the worker's import path. Its stderr is dropped: a
    batch whose worker failed is prepared again in the indexing process, which reports any error
    once."""

    def __init__(self) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-P", "-c", "from zgrep.index.prepare import serve; serve()"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )

    def run(self, items: list[tuple[str, str]], recipe: Recipe) -> PreparedBatch:
        """Prepare one batch in the worker; OSError/EOFError when the worker is gone."""
        assert self.proc.stdin is not None and self.proc.stdout is not None
        _send(self.proc.stdin, (items, recipe))
        return cast(PreparedBatch, _receive(self.proc.stdout))

    def stop(self) -> None:
        self.proc.kill()
        self.proc.wait()


def _send(stream: IO[bytes], obj: object) -> None:
    data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    stream.write(struct.pack("<Q", len(data)) + data)
    stream.flush()


def _receive(stream: IO[bytes]) -> object:
    head = stream.read(8)
    if len(head) < 8:
        raise EOFError("the index worker exited")
    (size,) = struct.unpack("<Q", head)
    data = stream.read(size)
    if len(data) < size:
        raise EOFError("the index worker exited")
    return pickle.loads(data)


def prepared_batches(
    batches: Iterable[list[tuple[str, str]]], recipe: Recipe, workers: int
) -> Iterator[PreparedBatch]:
    """Each batch prepared, in order; with `workers`, a bounded number of batches run ahead in
    worker processes (a batch whose worker failed is prepared here instead)."""
    if workers <= 0:
        for items in batches:
            yield prepare_batch(items, recipe)
        return
    local = threading.local()
    started: list[_Worker] = []

    def on_worker(items: list[tuple[str, str]]) -> PreparedBatch:
        if not hasattr(local, "worker"):
            local.worker = _Worker()
            started.append(local.worker)
        try:
            return cast(PreparedBatch, local.worker.run(items, recipe))
        except (
            OSError,
            EOFError,
            pickle.UnpicklingError,
        ):  # this batch in-process; the caller embeds it with
            # its own model and cache, not a second copy
            return prepare_batch(items, Recipe(recipe.context_lines))

    threads = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="index-worker")
    pending: deque[Future[PreparedBatch]] = deque()
    try:
        for items in batches:
            pending.append(threads.submit(on_worker, items))
            if len(pending) > workers * IN_FLIGHT_PER_WORKER:
                yield pending.popleft().result()
        while pending:
            yield pending.popleft().result()
    finally:
        for worker in started:  # no batch is left to wait for, or the run stopped (error, Ctrl-C)
            worker.stop()
        threads.shutdown(wait=False, cancel_futures=True)


def serve() -> None:
    """The worker process: prepare batches from stdin until it closes; Ctrl-C is the parent's to
    handle."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    while True:
        try:
            items, recipe = cast(tuple[list[tuple[str, str]], Recipe], _receive(sys.stdin.buffer))
        except EOFError:
            return
        _send(sys.stdout.buffer, prepare_batch(items, recipe))
