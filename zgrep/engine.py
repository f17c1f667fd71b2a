"""One Engine per workspace: the session the use cases (index, search, status, relations) run in,
holding its store, model, vector cache, relations writer, lock and file state. Direct mode and
the daemon both hold one; `zgrep.dispatch` serves ops with it."""

from __future__ import annotations

import copy
import gc
import hashlib
import ipaddress
import json
import os
import re
import sys
import threading
import urllib.parse
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict

from zgrep.config import Config, user_config_path
from zgrep.locking import ENGINE_LOCK, LockBusy, WorkspaceLock
from zgrep.service import ErrorCode, ZgError
from zgrep.fsutil import atomic_write, stat_signature
from zgrep.store.native import engine_of, is_lite
from zgrep.workspace import (
    FORMAT_VERSION,
    MANIFEST,
    SCHEMA_VERSION,
    StateDir,
    WorkspaceError,
    read_object,
)

if TYPE_CHECKING:
    from zgrep.workspace import Manifest
    from zgrep.embedding.base import Embedder
    from zgrep.embedding.cache import VectorCache
    from zgrep.index.filestats import FileStatsReader
    from zgrep.relations.store import RelationsStore
    from zgrep.store.milvus import MilvusStore
    from zgrep.store.native import NativeEngine

FILES_STATE = "files.json"
# a full rebuild in progress: its collection, then the manifest it commits
REBUILD_STATE = "rebuild.json"
VECTOR_CACHE = "vectors.sqlite"
MILVUS_LITE = "milvus.db"
ENGINE_TIMEOUT_S = 30.0  # for the Milvus Lite engine to start (and a dying one to exit)
VERIFIED_STATE = "verified.json"  # signatures of the Milvus Lite file and the state files when their rows last agreed


@dataclass
class FileRecord:
    """What the index knows about one file."""

    sha256: str
    size: int
    mtime_ns: int
    language: str
    chunks: int
    # written by a program (index.generated): ranked below hand-written code
    generated: bool = False

    def to_json(self) -> list[Any]:
        return [self.sha256, self.size, self.mtime_ns, self.language, self.chunks, self.generated]

    @classmethod
    def from_json(cls, raw: Any) -> FileRecord:
        """A record from its JSON list; ValueError when it is not one."""
        if not (
            isinstance(raw, list)
            and len(raw) in (5, 6)
            and isinstance(raw[0], str)
            and isinstance(raw[3], str)
            and all(
                isinstance(v, int) and not isinstance(v, bool) for v in (raw[1], raw[2], raw[4])
            )
            and all(isinstance(v, bool) for v in raw[5:])
        ):
            raise ValueError(f"not a file record: {json.dumps(raw)[:80]}")
        return cls(*raw)


def load_embedder(config: Config, root: Path, timeout: float | None = None) -> Embedder:
    """The configured embedding model; a remote provider needs the workspace's opt-in (`timeout`
    caps the provider's own)."""
    from zgrep.embedding.factory import make_embedder

    provider = config.embedding.provider
    opted_in = (
        config.embedding.allow_remote
        and config.source("embedding.allow_remote") != user_config_path()
    )
    if provider != "local" and not opted_in:
        raise ZgError(
            ErrorCode.REMOTE_NOT_ALLOWED,
            f"embedding provider {provider!r} {_where_code_goes(provider, config)}; opt in for this workspace with "
            f"`allow_remote = true` under [embedding] in {root / '.zgrep.toml'} (the user-wide config cannot opt in "
            "every workspace)",
        )
    return make_embedder(
        provider,
        config.embedding.model or None,
        config.embedding.url or None,
        api_key_env=config.embedding.api_key_env or None,
        batch_size=config.embedding.batch_size,
        timeout=min(config.embedding.timeout, timeout or config.embedding.timeout),
        max_retries=config.embedding.max_retries,
    )


def _signature(path: Path) -> list[int] | None:
    """Size, mtime and inode of `path` (an atomic rewrite is a new inode), or None when it is
    missing."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return [st.st_size, st.st_mtime_ns, st.st_ino]


def _where_code_goes(provider: str, config: Config) -> str:
    """What an HTTP embedder does with the code: a loopback server is another program on this
    machine (it still needs the workspace's opt-in), any other host takes it off the machine."""
    from zgrep.embedding import http

    url = (
        config.embedding.url
        or (http.OllamaEmbedder if provider == "ollama" else http.OpenAIEmbedder).example_url
    )
    host = urllib.parse.urlsplit(url).hostname or ""
    try:
        loopback = host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        loopback = False
    if loopback:
        return f"sends code to the server at {url} (loopback: another program on this machine, not off it)"
    return f"sends code off this machine (to {url})"


def _store_class() -> type[MilvusStore]:
    """MilvusStore, its module imported with the cyclic GC paused (importing pymilvus, grpc and numpy
    runs collections that free nothing) and, the first time, everything then alive frozen out of the
    collector's walks (gc.freeze: the later collections of a search walked that module graph again)."""
    first = "zgrep.store.milvus" not in sys.modules
    collecting = gc.isenabled()
    gc.disable()
    try:
        from zgrep.store.milvus import MilvusStore
    finally:
        if collecting:
            if first:
                gc.freeze()
            gc.enable()
    return MilvusStore


def collection_name(model_id: str, root_key: str) -> str:
    """One collection per workspace and model: a valid Milvus name from both."""
    slug = re.sub(r"[^0-9a-zA-Z]+", "_", model_id).strip("_").lower()[:80]
    return f"zg_{root_key}_{slug}"


def root_hash(files: dict[str, FileRecord]) -> str:
    """Merkle-style hash over (path, sha256) of every indexed file."""
    h = hashlib.sha256()
    for rel in sorted(files):
        h.update(f"{rel}\0{files[rel].sha256}\n".encode("utf-8", "surrogateescape"))
    return h.hexdigest()


class _Stores(TypedDict):
    """An engine's open store and an opening begun ahead (prepare_store) that nobody took over yet."""

    live: MilvusStore | None
    pending: Future[tuple[MilvusStore, bool]] | None


class Engine:
    """One workspace open for index and search runs: its config, model, store, caches and state."""

    def __init__(
        self, root: Path, config: Config | None = None, embedder: Embedder | None = None
    ) -> None:
        self.ws = StateDir(root)
        self.config = config or Config.load(root)
        self._embedder = embedder
        # shared with snapshot views (they open it once for all); "pending": an opening begun by
        # prepare_store
        self._stores: _Stores = {"live": None, "pending": None}
        self._cache: VectorCache | None = None
        self._lock = WorkspaceLock(self.ws.path(ENGINE_LOCK))
        self._files: dict[str, FileRecord] | None = None
        self._files_collection: str | None = None
        self._relations: RelationsStore | None = None
        # the whole-file statistics reader, shared with snapshot views (a dict so that one a view
        # opens is the engine's too, and closed with it)
        self._filestats: dict[str, FileStatsReader] = {}
        self._opening = threading.Lock()
        # one model load when the opening thread and the caller both ask
        self._loading_model = threading.Lock()
        self._switching = threading.Lock()
        self.repaired: str | None = None  # why open_store recreated damaged Milvus Lite data
        self._view = False  # a snapshot: its file table may lag rows an index job is writing
        self._verified: dict[str, Any] = {}  # shared with views: the state last found consistent

    # ----- lifecycle -------------------------------------------------------------------
    @property
    def milvus_uri(self) -> str:
        return self.config.milvus.uri or str(self.ws.path(MILVUS_LITE))

    @property
    def embedder(self) -> Embedder:
        if self._embedder is None:
            with self._loading_model:
                if self._embedder is None:
                    self._embedder = load_embedder(self.config, self.ws.root)
        return self._embedder

    def prepare_query_model(self) -> None:
        """Begin loading the local model's query encoder on a thread (the default pair's transformer:
        its load overlaps importing pymilvus); its first query waits for it."""
        if self.config.embedding.provider == "local":
            from zgrep.embedding.deferred import DeferredStatic

            if isinstance(self.embedder, DeferredStatic):
                self.embedder.load_query_ahead()

    def model_identity(self) -> tuple[str, int]:
        """The configured model's id and dimension: read from its folder while the model is not
        loaded and is a local one read on first embedding (no numpy, no tokenizer), else the model's
        own."""
        if self._embedder is None and self.config.embedding.provider == "local":
            from zgrep.embedding.factory import local_identity

            known = local_identity(self.config.embedding.model or None)
            if known is not None:
                return known
        return self.embedder.model_id, self.embedder.dim

    @property
    def owns_milvus_data(self) -> bool:
        """Whether Milvus is the Milvus Lite file inside the state dir (zg may recreate it)."""
        return self.milvus_uri == str(self.ws.path(MILVUS_LITE))

    def base_collection(self) -> str:
        """The collection name for this workspace and model; rebuilds add a generation suffix."""
        key = hashlib.sha256(str(self.ws.root).encode()).hexdigest()[:10]
        return collection_name(self.embedder.model_id, key)

    def live_collection(self) -> str:
        """The collection the manifest points at (the base name when it names none of this model's)."""
        base = self.base_collection()
        try:
            name = (self.manifest() or {}).get("collection")
        except WorkspaceError:
            return base
        return (
            name
            if isinstance(name, str) and (name == base or name.startswith(base + "_g"))
            else base
        )

    def open_store(self, create: bool) -> MilvusStore:
        """The workspace's Milvus store, opened (and created when `create`) under the workspace
        lock. With `create`, damaged Milvus Lite data that zg owns is recreated empty
        (`self.repaired` says why)."""
        with self._opening:
            if self._stores["live"] is None:
                pending, self._stores["pending"] = self._stores["pending"], None
                if pending is None:
                    self._lock.acquire(timeout=float(os.environ.get("ZG_LOCK_TIMEOUT", "10")))
                    self.ws.ensure_state_dir()
                self._stores["live"] = self._connect(create, pending)
                self._verified["opened"] = self._verified.get("opened", 0) + 1
            live = self._stores["live"]
            assert live is not None
            return live

    def prepare_store(self) -> None:
        """Begin opening the Milvus Lite store: the engine starts and pymilvus is imported here
        (side by side), then a thread connects and has the engine load the collection while the
        caller goes on; open_store() takes it over, with the same outcome as opening it itself.
        Nothing when it is open or being opened, not Milvus Lite, or the workspace lock is held
        (open_store waits for it and names the holder)."""
        from zgrep.store.native import NativeEngine
        from zgrep.store.preload import load_ahead

        with self._opening:
            if (
                self._stores["live"] is not None
                or self._stores["pending"] is not None
                or not is_lite(self.milvus_uri)
            ):
                return
            try:
                self._lock.acquire(timeout=0)
            except LockBusy:
                return
            self.ws.ensure_state_dir()
            engine = NativeEngine(Path(self.milvus_uri), ENGINE_TIMEOUT_S)
            try:
                # the engine loads the collection while pymilvus imports, then the index refreshes
                preload = load_ahead(engine, self.live_collection())
            except ZgError:  # a model that cannot be loaded: the opening meets it again
                preload = None
            try:
                _store_class()
            except BaseException:
                if preload is not None:
                    preload.join()
                engine.close()
                raise
            pending: Future[tuple[MilvusStore, bool]] = Future()
            self._stores["pending"] = pending
            threading.Thread(
                target=self._open_ahead, args=(pending, engine, preload), name="zg-open-store"
            ).start()

    def _open_ahead(
        self,
        pending: Future[tuple[MilvusStore, bool]],
        engine: NativeEngine | None,
        preload: threading.Thread | None,
    ) -> None:
        try:
            if preload is not None:
                # its load done first: the attach's health checks (5 s deadlines) would wait behind
                # it (Django's load takes longer under load), and the store's own load finds it done
                preload.join()
            store, present = self._attach(engine)
        except BaseException as exc:
            pending.set_exception(exc)
            return
        if present:
            try:
                store.ensure_loaded()  # the engine loads the segments while the caller refreshes and embeds
            except Exception:  # open_store's caller meets it again on its first call
                pass
        pending.set_result((store, present))

    def _attach(self, engine: NativeEngine | None = None) -> tuple[MilvusStore, bool]:
        """The store connected (with its engine started first, unless `engine` was: its ~0.5 s
        start-up overlaps importing pymilvus), and whether its collection exists; StoreDamaged when
        the data cannot be read."""
        from zgrep.store.native import NativeEngine

        if engine is None and is_lite(self.milvus_uri):
            engine = NativeEngine(Path(self.milvus_uri), ENGINE_TIMEOUT_S)
        try:
            store_class = _store_class()
            store = store_class(
                self.milvus_uri,
                self.live_collection(),
                self.embedder.dim,
                token=os.environ.get("ZG_MILVUS_TOKEN"),
                engine=engine,
            )
        except BaseException:
            if engine is not None:
                engine.close()
            raise
        try:
            present = store.exists()
            # (a file as it was when its rows agreed is whole)
            if present and not self.known_consistent():
                store.count()  # damage inside the file shows first here (StoreDamaged)
            return store, present
        except BaseException:
            store.close()
            raise

    def _connect(
        self, create: bool, pending: Future[tuple[MilvusStore, bool]] | None = None
    ) -> MilvusStore:
        try:
            store, present = pending.result() if pending is not None else self._attach()
        except Exception as exc:
            from zgrep.store.milvus import (
                StoreDamaged,
            )  # (imported once the opening thread has imported it)
            from zgrep.store.native import remove_data

            if not (isinstance(exc, StoreDamaged) and create and self.owns_milvus_data):
                raise
            remove_data(self.ws.path(MILVUS_LITE))
            self.repaired = f"recreated damaged Milvus Lite data ({exc.detail})"
            store, present = self._attach()
        if not present:
            if not create:
                store.close()
                raise ZgError(
                    ErrorCode.NOT_INDEXED,
                    "the index is missing its Milvus collection; rebuild with: zg index --full",
                )
            store.create()
        return store

    def adopt(self, store: MilvusStore, files: dict[str, FileRecord], collection: str) -> None:
        """Serve from a rebuilt collection and its file table from now on (one switch for readers)."""
        with self._switching:
            self._stores["live"], self._files, self._files_collection = store, files, collection

    @property
    def cache(self) -> VectorCache:
        if self._cache is None:
            from zgrep.embedding.cache import VectorCache

            self.ws.ensure_state_dir()
            self._cache = VectorCache(self.ws.path(VECTOR_CACHE))
        return self._cache

    def relations(self) -> RelationsStore:
        """The writer of the workspace's relations database (definitions, references, imports)."""
        if self._relations is None:
            from zgrep.relations.store import RELATIONS_DB, RelationsStore

            self.ws.ensure_state_dir()
            self._relations = RelationsStore(self.ws.path(RELATIONS_DB))
        return self._relations

    def filestats(self) -> FileStatsReader:
        """The reader of the workspace's whole-file term statistics (index.filestats)."""
        reader = self._filestats.get("reader")
        if reader is None:
            from zgrep.index.filestats import FILESTATS_DB, FileStatsReader

            reader = self._filestats.setdefault(
                "reader", FileStatsReader(self.ws.path(FILESTATS_DB))
            )
        return reader

    def close(self) -> None:
        """Release Milvus, the vector cache, the relations database, the statistics reader and the
        workspace lock
        (recording, once the engine has exited, that the Milvus Lite rows agree with the file state
        when this session found so)."""
        pending, self._stores["pending"] = self._stores["pending"], None
        # an opening begun but never taken over (the op failed or was interrupted)
        if pending is not None:
            try:
                pending.result()[0].close()
            # its failure was nobody's: the op ended before it needed the store
            except BaseException:
                pass
        if self._stores["live"] is not None:
            self._stores["live"].close()
            self._stores["live"] = None
        if self._lock.held and self._verified.get("agrees") == self._state_files():
            self._record_agreement()
        if self._cache is not None:
            self._cache.close()
            self._cache = None
        if self._relations is not None:
            self._relations.close()
            self._relations = None
        reader = self._filestats.pop("reader", None)
        if reader is not None:
            reader.close()
        self._lock.release()

    # ----- state -----------------------------------------------------------------------
    def files(self) -> dict[str, FileRecord]:
        """The per-file index state (loaded once per engine); WorkspaceError when damaged."""
        if self._files is None:
            path = self.ws.path(FILES_STATE)
            raw = read_object(path) or {}
            try:
                self._files = {
                    rel: FileRecord.from_json(v) for rel, v in raw.get("files", {}).items()
                }
            except (AttributeError, ValueError) as exc:
                raise WorkspaceError(
                    f"{path} is damaged ({exc}); rebuild with: zg index --full"
                ) from None
            collection = raw.get("collection")
            self._files_collection = collection if isinstance(collection, str) else None
        return self._files

    def files_collection(self) -> str | None:
        """The collection the recorded file state was written for (None before the first rebuild)."""
        self.files()
        return self._files_collection

    def save_files(
        self, files: dict[str, FileRecord] | None = None, collection: str | None = None
    ) -> None:
        """Persist the per-file state atomically (a rebuild's own table and collection when given)."""
        if files is None:
            files, collection = self.files(), self._files_collection
        data: dict[str, Any] = {"files": {rel: rec.to_json() for rel, rec in sorted(files.items())}}
        if collection:
            data["collection"] = collection
        atomic_write(self.ws.path(FILES_STATE), json.dumps(data, separators=(",", ":")))

    def blank(self) -> Engine:
        """A view with an empty file table: what a full rebuild plans against."""
        view = copy.copy(self)
        view._files = {}
        return view

    def snapshot(self) -> Engine:
        """A read-only view sharing model, store and cache, with its own copy of the file table."""
        with self._switching:
            view = copy.copy(self)
            view._files = dict(self.files())
        view._view = True
        return view

    def has_store(self) -> bool:
        """Whether the Milvus store is open."""
        return self._stores["live"] is not None

    def manifest(self) -> Manifest | None:
        return self.ws.read_manifest()

    def check_manifest(self) -> Manifest | None:
        """The manifest, refused (WorkspaceError) when built with another format, model or URI."""
        manifest = self.manifest()
        if manifest is not None:
            problem = self.index_problem(manifest)
            if problem:
                raise WorkspaceError(problem)
        return manifest

    # ----- health ----------------------------------------------------------------------
    def index_problem(self, manifest: Manifest) -> str | None:
        """Why the index cannot be used as it is (with the command that fixes it), or None."""
        try:
            self.ws.check_manifest(
                manifest, *self.model_identity(), self.milvus_uri, engine_of(self.milvus_uri)
            )
        except WorkspaceError as exc:
            return self._unreachable() or str(exc)
        return None

    def _unreachable(self) -> str | None:
        """Why the configured Milvus server cannot be reached, or None (a Lite URI, or it answers)."""
        if is_lite(self.milvus_uri):
            return None
        from zgrep.store.milvus import MilvusStore, StoreError

        try:
            MilvusStore(
                self.milvus_uri, "zg_probe", 1, token=os.environ.get("ZG_MILVUS_TOKEN")
            ).close()
        except StoreError as exc:
            return str(exc)
        return None

    def verify_store(self) -> None:
        """Refuse (ZgError INDEX_DAMAGED) an index whose Milvus rows disagree with its file state.
        Once they agree, nothing is asked of Milvus again until the open store or a state file
        changes."""
        manifest = self.check_manifest()
        # the state this check sees: a job writing meanwhile is checked next time
        key = self._state_key()
        if manifest is None or self._verified.get("state") == key:
            return
        problem = self.store_problem(manifest)
        if problem:
            raise ZgError(ErrorCode.INDEX_DAMAGED, problem)
        if self.has_store():
            self._verified["state"] = key

    def _state_key(self) -> tuple[Any, ...]:
        """Which opening of the store, and the stat signatures of the manifest and file state."""
        signatures: list[tuple[int, int] | None] = []
        for name in (MANIFEST, FILES_STATE):
            try:
                signatures.append(stat_signature(os.stat(self.ws.path(name))))
            except OSError:
                signatures.append(None)
        return (self._verified.get("opened") if self.has_store() else None, *signatures)

    def _state_files(self) -> list[list[int] | None]:
        """The signatures of the manifest and the file state (None for one that is missing)."""
        return [_signature(self.ws.path(name)) for name in (MANIFEST, FILES_STATE)]

    def remember_agreement(self) -> None:
        """Note that Milvus holds exactly the rows the file state records, as the state files are
        now."""
        self._verified["agrees"] = self._state_files()

    def _record_agreement(self) -> None:
        """Write the signatures (data file last: the engine has exited) that known_consistent()
        compares."""
        if not is_lite(self.milvus_uri):
            return
        data = _signature(Path(self.milvus_uri))
        if data is not None:
            atomic_write(
                self.ws.path(VERIFIED_STATE),
                json.dumps({"state": self._state_files(), "data": data}),
            )

    def known_consistent(self) -> bool:
        """Whether the Milvus Lite file and the state files are exactly as when their rows last
        agreed (so no engine need start to check them); a change to any of them, damage included,
        says no."""
        if not is_lite(self.milvus_uri) or self.has_store():
            return False
        try:
            recorded = json.loads(self.ws.path(VERIFIED_STATE).read_text("utf-8"))
        except (OSError, ValueError):
            return False
        state = self._state_files()
        return None not in state and recorded == {
            "state": state,
            "data": _signature(Path(self.milvus_uri)),
        }

    def store_problem(self, manifest: Manifest) -> str | None:
        """Why Milvus disagrees with the recorded file state (damaged, missing, other row count),
        naming the fix; None when they agree or another process holds the workspace."""
        if manifest.get("complete", True) and self.known_consistent():
            return None
        from zgrep.store.milvus import (
            StoreBusy,
        )  # pymilvus (~1 s): only once the state files cannot answer

        try:
            store = self.open_store(create=False)
            count = store.count()
        except (LockBusy, StoreBusy):
            return None
        except ZgError as exc:  # damaged or unreachable Milvus, a missing collection
            return str(exc)
        expected = sum(rec.chunks for rec in self.files().values())
        differ = (count == 0) != (expected == 0) if self._view else count != expected
        if manifest.get("complete", True) and differ:
            return (
                f"the Milvus collection {store.collection} holds {count} chunks where the index records "
                f"{expected}; repair it with: zg index"
            )
        if not self._view and manifest.get("complete", True):
            self.remember_agreement()
        return None

    def new_manifest(self, collection: str) -> Manifest:
        """A manifest describing the current configuration."""
        return {
            "format_version": FORMAT_VERSION,
            "schema_version": SCHEMA_VERSION,
            "root": str(self.ws.root),
            "model_id": self.embedder.model_id,
            "dim": self.embedder.dim,
            "milvus_uri": self.milvus_uri,
            "milvus_engine": engine_of(self.milvus_uri),
            "collection": collection,
        }
