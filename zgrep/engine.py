"""One Engine per workspace: index, search and status. Direct mode and the daemon both use it."""

from __future__ import annotations

import copy
import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from zgrep.server import protocol
from zgrep.config import Config, ConfigError, user_config_path
from zgrep.git import head_commit
from zgrep.workspace import FORMAT_VERSION, SCHEMA_VERSION, Workspace, WorkspaceError, atomic_write, read_json
from zgrep.locking import ENGINE_LOCK, LockBusy, WorkspaceLock
from zgrep.progress import Progress

FILES_STATE = "files.json"
VECTOR_CACHE = "vectors.sqlite"
MILVUS_LITE = "milvus.db"
EMBED_BATCH_CHUNKS = 256

class EngineError(RuntimeError):
    """A failure to report as one line (with a stable code)."""

    def __init__(self, message: str, code: str = "engine_error") -> None:
        super().__init__(message)
        self.code = code


@dataclass
class FileRecord:
    """What the index knows about one file."""

    sha256: str
    size: int
    mtime_ns: int
    language: str
    chunks: int

    def to_json(self) -> list[Any]:
        return [self.sha256, self.size, self.mtime_ns, self.language, self.chunks]

    @classmethod
    def from_json(cls, raw: list[Any]) -> "FileRecord":
        return cls(*raw)


def load_embedder(config: Config, root: Path) -> Any:
    """The configured embedding model; a remote provider needs the workspace's opt-in."""
    from zgrep.embedding.factory import make_embedder

    provider = config["embedding.provider"]
    opted_in = config["embedding.allow_remote"] and config.source("embedding.allow_remote") != str(user_config_path())
    if provider != "local" and not opted_in:
        raise EngineError(
            f"embedding provider {provider!r} sends code off this machine; opt in for this workspace with "
            f"`allow_remote = true` under [embedding] in {root / '.zgrep.toml'} (the user-wide config cannot opt in "
            "every workspace)", code="remote_not_allowed")
    return make_embedder(
        provider, config["embedding.model"] or None, config["embedding.url"] or None,
        api_key_env=config["embedding.api_key_env"] or None, batch_size=config["embedding.batch_size"],
        timeout=config["embedding.timeout"], max_retries=config["embedding.max_retries"])


def root_hash(files: dict[str, FileRecord]) -> str:
    """Merkle-style hash over (path, sha256) of every indexed file."""
    h = hashlib.sha256()
    for rel in sorted(files):
        h.update(f"{rel}\0{files[rel].sha256}\n".encode("utf-8", "surrogateescape"))
    return h.hexdigest()


def chunk_id(path: str, start: int, end: int, content_hash: str) -> str:
    """A stable primary key for a chunk."""
    return hashlib.sha256(f"{path}\0{start}\0{end}\0{content_hash}".encode("utf-8", "surrogateescape")).hexdigest()[:40]


class Engine:
    """Indexes and searches one workspace; holds its model, store and state while open."""

    def __init__(self, root: Path, config: Config | None = None, embedder: Any = None) -> None:
        self.ws = Workspace(root)
        self.config = config or Config.load(root)
        self._embedder = embedder
        self._store: Any = None
        self._cache: Any = None
        self._lock = WorkspaceLock(self.ws.path(ENGINE_LOCK))
        self._files: dict[str, FileRecord] | None = None
        self._relations: Any = None

    # ----- lifecycle -------------------------------------------------------------------
    @property
    def milvus_uri(self) -> str:
        return self.config["milvus.uri"] or str(self.ws.path(MILVUS_LITE))

    @property
    def embedder(self) -> Any:
        if self._embedder is None:
            self._embedder = load_embedder(self.config, self.ws.root)
        return self._embedder

    def open_store(self, create: bool) -> Any:
        """The workspace's Milvus store, opened (and created when `create`) under the workspace lock."""
        if self._store is not None:
            return self._store
        from zgrep.store.milvus import MilvusStore, collection_name

        self._lock.acquire(timeout=float(os.environ.get("ZG_LOCK_TIMEOUT", "10")))
        self.ws.ensure_state_dir()
        key = hashlib.sha256(str(self.ws.root).encode()).hexdigest()[:10]
        store = MilvusStore(self.milvus_uri, collection_name(self.embedder.model_id, key), self.embedder.dim,
                            token=os.environ.get("ZG_MILVUS_TOKEN"))
        if not store.exists():
            if not create:
                store.close()
                raise EngineError("the index is missing its Milvus collection; rebuild with: zg index --full", "not_indexed")
            store.create()
        self._store = store
        return store

    @property
    def cache(self) -> Any:
        if self._cache is None:
            from zgrep.embedding.cache import VectorCache

            self.ws.ensure_state_dir()
            self._cache = VectorCache(self.ws.path(VECTOR_CACHE))
        return self._cache

    def relations(self) -> Any:
        """The writer of the workspace's relations database (definitions, references, imports)."""
        if self._relations is None:
            from zgrep.relations.store import RELATIONS_DB, RelationsStore

            self.ws.ensure_state_dir()
            self._relations = RelationsStore(self.ws.path(RELATIONS_DB))
        return self._relations

    def close(self) -> None:
        """Release Milvus, the vector cache, the relations database and the workspace lock."""
        if self._store is not None:
            self._store.close()
            self._store = None
        if self._cache is not None:
            self._cache.close()
            self._cache = None
        if self._relations is not None:
            self._relations.close()
            self._relations = None
        self._lock.release()

    # ----- state -----------------------------------------------------------------------
    def files(self) -> dict[str, FileRecord]:
        """The per-file index state (loaded once per engine)."""
        if self._files is None:
            raw = read_json(self.ws.path(FILES_STATE)) or {}
            self._files = {rel: FileRecord.from_json(v) for rel, v in raw.get("files", {}).items()}
        return self._files

    def save_files(self) -> None:
        """Persist the per-file state atomically."""
        data = {"files": {rel: rec.to_json() for rel, rec in sorted(self.files().items())}}
        atomic_write(self.ws.path(FILES_STATE), json.dumps(data, separators=(",", ":")))

    def reset_files(self) -> None:
        """Forget the recorded file state (a full rebuild starts from nothing)."""
        self._files = {}

    def snapshot(self) -> "Engine":
        """A read-only view sharing model, store and cache, with its own copy of the file table."""
        view = copy.copy(self)
        view._files = dict(self.files())
        return view

    def has_store(self) -> bool:
        """Whether the Milvus store is open."""
        return self._store is not None

    def manifest(self) -> dict[str, Any] | None:
        return self.ws.read_manifest()

    def check_manifest(self) -> dict[str, Any] | None:
        """The manifest, refused (WorkspaceError) when built with another format, model or URI."""
        manifest = self.manifest()
        if manifest is not None:
            self.ws.check_manifest(manifest, self.embedder.model_id, self.embedder.dim, self.milvus_uri)
        return manifest

    # ----- requests --------------------------------------------------------------------
    def handle(self, op: str, args: dict[str, Any], progress: Progress | None = None) -> dict[str, Any]:
        """Serve one protocol op."""
        if op == "index":
            from zgrep.index.run import run_index

            return run_index(self, args, progress)
        if op == "search":
            from zgrep.search.run import run_search

            return run_search(self, args, progress)
        if op == "status":
            return self.status()
        if op in ("callers", "trace"):
            from zgrep.relations.query import run_relations

            return run_relations(self, op, args)
        if op == "ping":
            return {"pong": True}
        raise EngineError(f"op {op!r} is not served here", code="unknown_op")

    def status(self) -> dict[str, Any]:
        """What is indexed, with which model, where, and how fresh it is."""
        manifest = self.manifest()
        root = str(self.ws.root)
        if manifest is None:
            return {"root": root, "indexed": False, "files": 0, "chunks": 0, "languages": {}}
        files = self.files()
        languages: dict[str, int] = {}
        for rec in files.values():
            languages[rec.language] = languages.get(rec.language, 0) + 1
        head = head_commit(self.ws.root)
        problem = self.index_problem(manifest)
        changed = None if problem else self.changed_files()
        return {
            "root": root, "indexed": True, "files": len(files), "chunks": sum(r.chunks for r in files.values()),
            "languages": dict(sorted(languages.items(), key=lambda kv: -kv[1])),
            "model": manifest.get("model_id"), "dim": manifest.get("dim"), "milvus_uri": manifest.get("milvus_uri"),
            "collection": manifest.get("collection"), "last_indexed": manifest.get("last_indexed"),
            "root_hash": manifest.get("root_hash"), "indexed_commit": manifest.get("commit"), "head_commit": head,
            "stale_vs_head": bool(head and manifest.get("commit") != head),
            "changed_files": changed, "fresh": changed == 0 and manifest.get("complete", True), "problem": problem,
            "run_unfinished": not manifest.get("complete", True),
        }

    def index_problem(self, manifest: dict[str, Any]) -> str | None:
        """Why the index cannot be used as it is (with the command that fixes it), or None."""
        try:
            self.ws.check_manifest(manifest, self.embedder.model_id, self.embedder.dim, self.milvus_uri)
        except WorkspaceError as exc:
            return str(exc)
        return None

    def changed_files(self) -> int:
        """How many files differ from the index (new, edited, deleted, or newly ignored)."""
        from zgrep.index.run import plan

        work = plan(self, None, full=False)
        return len(work.changed) + len(work.deleted)

    def new_manifest(self, collection: str) -> dict[str, Any]:
        """A manifest describing the current configuration."""
        return {"format_version": FORMAT_VERSION, "schema_version": SCHEMA_VERSION, "root": str(self.ws.root),
                "model_id": self.embedder.model_id, "dim": self.embedder.dim, "milvus_uri": self.milvus_uri,
                "collection": collection}


def error_response(exc: BaseException) -> dict[str, Any]:
    from zgrep.embedding.base import EmbeddingError

    if isinstance(exc, EngineError):
        return protocol.error(exc.code, str(exc))
    if isinstance(exc, LockBusy):
        return protocol.error("workspace_busy", str(exc))
    if isinstance(exc, WorkspaceError):
        return protocol.error("workspace", str(exc))
    if isinstance(exc, ConfigError):
        return protocol.error("config", str(exc))
    if isinstance(exc, EmbeddingError):
        return protocol.error("embedding", str(exc))
    from zgrep.search.filters import FilterError
    from zgrep.store.milvus import StoreError

    if isinstance(exc, (FilterError, ValueError)):
        return protocol.error("bad_request", str(exc))
    if isinstance(exc, StoreError):
        return protocol.error("store", str(exc))
    from pymilvus.exceptions import MilvusException

    if isinstance(exc, MilvusException):
        return protocol.error("store", f"Milvus: {exc.message}")
    return protocol.error("internal", f"{type(exc).__name__}: {exc}")


def serve(engine: Engine, request: dict[str, Any], progress: Progress | None = None) -> dict[str, Any]:
    """Answer one request with `engine`, turning failures into error responses."""
    try:
        return protocol.ok(engine.handle(request["op"], request.get("args") or {}, progress))
    except Exception as exc:  # every failure becomes one line for the user
        return error_response(exc)


def run_direct(request: dict[str, Any], progress: Progress | None = None) -> dict[str, Any]:
    """Open the workspace's engine in this process, serve one request, close it."""
    try:
        root = Path(request["root"])
        engine = Engine(root, Config.load(root, request.get("args", {}).get("config")))
    except Exception as exc:
        return error_response(exc)
    try:
        return serve(engine, request, progress)
    finally:
        engine.close()
