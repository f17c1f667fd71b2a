"""The daemon's workspace holder: each workspace it serves (`Held`: its engine, opened with a model
the `EmbedderPool` shares, its store, watcher and job runner) and the registry of them (`Holdings`),
by identity (workspace.Identity: real path, inodes of the root and of `.zgrep/`): `/ws/../ws` is
`/ws`, and a workspace deleted or re-created under the daemon is dropped (its engine, watcher and
lock on the deleted files) and opened afresh by the next request."""

from __future__ import annotations

import gc
import json
import logging
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from zgrep import service
from zgrep.config import Config, ConfigError
from zgrep.contracts import HeldWorkspace, Models, Setting
from zgrep.dispatch import error_response, serve
from zgrep.engine import Engine, load_embedder
from zgrep.locking import ENGINE_LOCK, lock_holder
from zgrep.progress import Progress
from zgrep.server import protocol, runtime
from zgrep.server.jobrunner import STALL_S, JobCancelled, JobRunner
from zgrep.server.watcher import Watcher
from zgrep.service import ErrorCode, Job, ZgError
from zgrep.workspace import STATE_DIR, Identity

log = logging.getLogger("zgrep.server.daemon")

SHUTDOWN_GRACE_S = 5.0  # for every running job together, once the daemon is asked to stop
OPEN_WAIT_S = 30.0  # a request's longest wait for an index job opening the store (a big one loads for seconds)
STOPPED = "the daemon stopped before the index job finished; run it again"


class EmbedderPool:
    """One embedding model instance per model settings, shared by every workspace."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._models: dict[tuple[str, ...], Any] = {}

    @staticmethod
    def key(config: Config) -> tuple[str, ...]:
        """Models are shared per settings; a remote one also per consent (value and source), so a
        model loaded under one request's opt-in is never handed to a request without it."""
        provider = config.embedding.provider
        consent = (
            ("", "")
            if provider == "local"
            else (str(config.embedding.allow_remote), config.source("embedding.allow_remote"))
        )
        return (
            provider,
            config.embedding.model,
            config.embedding.url,
            config.embedding.api_key_env,
            *consent,
        )

    def get(self, config: Config, root: Path) -> Any:
        """The shared model for `config`, loaded on first use (ZgError without a remote opt-in)."""
        with self._lock:
            key = self.key(config)
            if key not in self._models:
                self._models[key] = load_embedder(config, root)
            return self._models[key]

    def describe(self) -> Models:
        with self._lock:
            return {
                "models": sorted({m.model_id for m in self._models.values()}),
                "model_instances": len(self._models),
            }


class Held:
    """One workspace the daemon serves: its engine, its index jobs (`JobRunner`) and watcher."""

    def __init__(
        self,
        identity: Identity,
        key: str,
        flags: dict[str, Setting],
        pool: EmbedderPool,
        send: Callable[[list[bytes], protocol.Reply], None],
        predecessor: threading.Event | None = None,
    ) -> None:
        self.root = identity.real
        self.identity = identity
        self.predecessor = predecessor  # set once a dropped Held of this path has closed its store
        self.key = key
        self.flags = flags
        self.pool = pool
        self.engine: Any = None
        self.lock = threading.Lock()  # guards engine creation and store opening
        self.jobs = JobRunner(self.root, self._run_job, self._check, send, self._ran)
        self.watcher: Watcher | None = None
        self.active = 0
        self.last_used = time.monotonic()
        self.closed = False
        # its index's long-lived objects are out of the cyclic GC's way (settle_heap)
        self.settled = False

    # ----- engine ------------------------------------------------------------------------
    def prepare(self, open_store: bool, request: bool = True) -> Any:
        """The engine, created with the shared model, file table loaded; store opened if asked. For
        a `request` (on a worker), busy rather than a wait on another process's workspace lock (the
        index job may be waiting on it), or a wait longer than OPEN_WAIT_S."""
        deadline = time.monotonic() + OPEN_WAIT_S
        while not self.lock.acquire(timeout=0.1):
            if request and (self.other_holder() or time.monotonic() > deadline):
                raise ZgError(
                    ErrorCode.WORKSPACE_BUSY,
                    f"{self.root} is busy: its index is held by "
                    f"{self.other_holder() or 'an index job opening it'}; retry once it is free",
                )
        try:
            if self.engine is None:
                config = Config.load(self.root, self.flags)
                engine = Engine(self.root, config, embedder=self.pool.get(config, self.root))
                engine.files()
                self.engine = engine
                if engine.manifest() is not None:
                    self.start_watcher()
            if open_store and not self.engine.has_store():
                holder = self.other_holder() if request else None
                if holder:
                    raise ZgError(
                        ErrorCode.WORKSPACE_BUSY,
                        f"{self.root} is busy: its index is held by {holder}; "
                        "retry once it is free",
                    )
                self.after_predecessor()
                self.open_store(create=False)
            return self.engine
        finally:
            self.lock.release()

    def after_predecessor(self) -> None:
        """Wait for the store of the workspace this one replaced to close: a Milvus Lite engine's
        socket is one per data-file path, so a store opened before would take over the deleted
        directory's."""
        if self.predecessor is not None and not self.predecessor.wait(SHUTDOWN_GRACE_S + 1):
            raise ZgError(
                ErrorCode.WORKSPACE_BUSY,
                f"the index of the workspace deleted at {self.root} is still "
                "closing (its job does not stop); retry shortly, or restart: zg server off; zg server on",
            )
        self.predecessor = None

    def other_holder(self) -> str | None:
        """Who holds this workspace's lock when it is another process (as it names itself), else
        None."""
        holder = lock_holder(self.root / STATE_DIR / ENGINE_LOCK)
        return (
            holder
            if holder is not None
            and not holder.startswith(f"pid {os.getpid()} ")
            and holder != f"pid {os.getpid()}"
            else None
        )

    def open_store(self, create: bool) -> None:
        """Open the engine's store (taking the workspace lock), then record this daemon as the
        workspace's holder, so a client with another runtime dir finds it (caller holds self.lock).
        """
        if not self.engine.has_store():
            self.engine.open_store(create=create)
            runtime.record_holder(self.root)

    def view(self) -> Any:
        """A read-only snapshot of the engine for one search/status request."""
        return self.engine.snapshot()

    def consent_is_per_request(self) -> bool:
        """Whether code goes to a remote embedder only on the sending command's opt-in (a forwarded
        flag)."""
        config = self.engine.config
        return (
            config.embedding.provider != "local"
            and config.source("embedding.allow_remote") == "flag"
        )

    def start_watcher(self) -> None:
        """Watch for edits, unless indexing them would outlive a one-command remote opt-in."""
        if self.watcher is None and not self.closed and not self.consent_is_per_request():
            self.watcher = Watcher(
                self.root, bool(self.engine.config.index.include_hidden), self.on_change
            )
            self.watcher.start()

    def watching(self) -> bool:
        """Whether a watcher runs (one that stopped on an error leaves refreshing to the searches)."""
        return self.watcher is not None and self.watcher.is_alive()

    def on_change(self, paths: list[str] | None) -> None:
        """Watcher callback: queue an incremental refresh of `paths` (None = everything)."""
        if not self.closed:
            log.info(
                "watcher: %s changed in %s",
                "files" if paths is None else f"{len(paths)} file(s)",
                self.root,
            )
            self.jobs.submit(Job(paths=None if paths is None else frozenset(paths)))

    # ----- index jobs (run by self.jobs) --------------------------------------------------
    def _check(self) -> None:
        """A job's cancellation point: the workspace must still be this one."""
        if not self.current():
            raise JobCancelled(
                ErrorCode.WORKSPACE,
                f"{self.root} was deleted or re-created during its index job; "
                "run the command again",
            )

    def _ran(self, response: protocol.Reply) -> None:
        """A job changed the index: its first search settles the heap again."""
        result = response.get("result") or {}
        if result.get("changed") or result.get("deleted"):
            self.settled = False

    def _run_job(self, work: Job, progress: Progress) -> protocol.Reply:
        """Run one index pass with the engine, unless the workspace's settings changed since it was
        built."""
        if self.stale():  # e.g. remote consent withdrawn: this engine must not embed another file
            return protocol.error(
                ErrorCode.CONFIG_CHANGED,
                f"the settings of {self.root} changed; run the command again",
            )
        # e.g. a watcher's event from a deleted tree: never write into its successor
        if not self.current():
            return protocol.error(
                ErrorCode.WORKSPACE, f"{self.root} was deleted or re-created; run the command again"
            )
        try:
            engine = self.prepare(open_store=False, request=False)
            with self.lock:
                self.after_predecessor()
                self.open_store(create=True)
            self.start_watcher()
            request = protocol.make_request(
                service.job_operation().name, str(self.root), work.args()
            )
            return serve(engine, request, progress)
        except Exception as exc:  # engine construction failures become the job's error reply
            return error_response(exc)

    def stale(self) -> bool:
        """Whether the settings this Held was built from (workspace file, its trust, user file)
        changed."""
        try:
            return settings_key(self.root, self.flags) != self.key
        except ConfigError:
            return True

    def current(self) -> bool:
        """Whether the directory at this root is still this workspace (its identity adopts a new
        `.zgrep/`)."""
        try:
            now = Identity.of(self.root)
        except OSError:
            return False
        if not self.identity.same_as(now):
            return False
        self.identity = now
        return True

    # ----- lifecycle ---------------------------------------------------------------------
    def idle_for(self) -> float:
        return time.monotonic() - self.last_used

    def stop(self, why: protocol.Reply) -> None:
        """Stop taking work: the watcher ends, the running job stops at its next batch, waiters get
        `why`."""
        self.closed = True
        if self.watcher is not None:
            self.watcher.stop()
        self.jobs.stop(why)

    def close(self, deadline: float | None = None) -> bool:
        """Stop (if not yet), wait for a running job until `deadline` (default: SHUTDOWN_GRACE_S
        from now), then release the engine; False when the job still runs (its engine stays open).
        """
        if not self.closed:
            self.stop(protocol.error(ErrorCode.SHUTTING_DOWN, STOPPED))
        finished = self.jobs.wait(
            deadline if deadline is not None else time.monotonic() + SHUTDOWN_GRACE_S
        )
        if self.engine is not None and finished:
            self.engine.close()
            runtime.forget_holder(self.root)
        return finished

    def describe(self) -> HeldWorkspace:
        jobs = self.jobs.state()
        return {
            "root": str(self.root),
            "idle_s": round(self.idle_for(), 1),
            "active_requests": self.active,
            "job_running": jobs.running,
            "job_queued": jobs.queued,
            "jobs_done": jobs.done,
            "watching": self.watching(),
            "waiting_requests": jobs.waiting,
            "job_silent_s": round(jobs.silent_s, 1),
            "busy": jobs.silent_s >= STALL_S,
        }


class Holdings:
    """The workspaces the daemon holds, by real path; `lock` guards the table and each Held's
    `active` count."""

    def __init__(
        self, embedders: EmbedderPool, send: Callable[[list[bytes], protocol.Reply], None]
    ) -> None:
        self.embedders = embedders
        self.send = send
        self.held: dict[Path, Held] = {}
        # dropped workspaces' stores, set once closed
        self.closing: dict[Path, threading.Event] = {}
        self.lock = threading.Lock()

    def take(
        self, identity: Identity, key: str, flags: dict[str, Setting]
    ) -> Held | protocol.Reply:
        """The Held of `identity` under settings `key`, counted active (created, or reopened when it
        was re-created or its settings changed); an error response when it is busy with other
        settings."""
        root = identity.real
        with self.lock:
            held = self.held.get(root)
            if held is not None and not held.current():
                self.drop(held)
                held = None
            if held is not None and held.key != key:
                if held.active or held.jobs.busy():
                    return protocol.error(
                        ErrorCode.WORKSPACE_BUSY,
                        f"the daemon is serving {root} with other settings right now; retry shortly",
                    )
                self.release(held)
                held = None
            if held is None:
                closing = self.closing.pop(root, None)
                held = self.held[root] = Held(
                    identity,
                    key,
                    flags,
                    self.embedders,
                    self.send,
                    None if closing is None or closing.is_set() else closing,
                )
                log.info("holding workspace %s", root)
            held.active += 1
            held.last_used = time.monotonic()
        return held

    def take_new(self, identity: Identity, key: str, flags: dict[str, Setting]) -> Held | None:
        """A Held for a workspace not held yet, counted active (None when it is held already)."""
        with self.lock:
            if identity.real in self.held:
                return None
            held = self.held[identity.real] = Held(identity, key, flags, self.embedders, self.send)
            held.active += 1
        return held

    def done(self, held: Held) -> None:
        """A request on `held` is answered."""
        with self.lock:
            held.active -= 1
            held.last_used = time.monotonic()

    def release(self, held: Held) -> None:
        """Forget a workspace and close its engine (caller holds self.lock)."""
        self.held.pop(held.root, None)
        held.close()
        self.unsettle()
        log.info("released workspace %s", held.root)

    def drop(self, held: Held) -> None:
        """Forget a workspace that was deleted or re-created (caller holds self.lock): its engine,
        watcher and lock are on the deleted files; they close on a thread of their own, and the next
        request reopens it."""
        self.held.pop(held.root, None)
        held.stop(
            protocol.error(
                ErrorCode.WORKSPACE, f"{held.root} was deleted or re-created; run the command again"
            )
        )
        closed = self.closing[held.root] = threading.Event()

        def close() -> None:
            try:
                # a job that outlives the grace: its store closes once it ends
                while not held.close():
                    pass
                closed.set()
            # its files are gone: whatever closing them says, the successor may open its own
            except Exception:
                log.exception("closing the dropped workspace %s", held.root)
                closed.set()

        threading.Thread(target=close, name=f"drop {held.root.name}", daemon=True).start()
        self.unsettle()
        log.info("dropped workspace %s: deleted or re-created", held.root)

    def unsettle(self) -> None:
        """What a forgotten index froze can be collected now; the others settle again."""
        gc.unfreeze()
        for other in self.held.values():
            other.settled = False

    def check(self) -> None:
        """Drop the workspaces deleted or re-created since; answer the searches that wait on a stuck
        job."""
        with self.lock:
            for held in list(self.held.values()):
                if not held.current():
                    self.drop(held)
            held_now = list(self.held.values())
        for held in held_now:
            held.jobs.expire()

    def release_idle(self, idle_timeout: float) -> None:
        """Release workspaces idle longer than `idle_timeout` (their Milvus Lite lock too)."""
        with self.lock:
            for held in list(self.held.values()):
                if not held.active and not held.jobs.busy() and held.idle_for() > idle_timeout:
                    self.release(held)

    def empty(self) -> bool:
        with self.lock:
            return not self.held

    def describe(self) -> list[HeldWorkspace]:
        with self.lock:
            return [h.describe() for h in self.held.values()]

    def take_all(self) -> list[Held]:
        """Every Held, forgotten (the daemon is stopping)."""
        with self.lock:
            helds = list(self.held.values())
            self.held.clear()
        return helds


def settings_key(root: Path, flags: dict[str, Setting]) -> str:
    """What a Held is built from: the workspace's settings under the request's flags, with their
    sources."""
    config = Config.load(root, flags)
    return json.dumps([config.values, config.sources], sort_keys=True)


def workspace_identity(raw: Any) -> Identity | None:
    """The identity of `raw` when it names an existing absolute directory, else None (too long,
    unreadable, relative, missing); `..` and symlinks resolve to the one real path."""
    if not isinstance(raw, str) or not raw:
        return None
    try:
        if not Path(raw).is_absolute():
            return None
        identity = Identity.of(Path(raw))
        return identity if identity.real.is_dir() else None
    except (OSError, ValueError):
        return None
