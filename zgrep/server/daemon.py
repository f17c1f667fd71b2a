"""The resident daemon: a ZeroMQ ROUTER loop serving many workspaces with warm engines.

Threads: the main loop owns the ROUTER socket; requests run on a worker pool and send their
replies back through an inproc PUSH/PULL pair; each held workspace has at most one index-job
thread (requests coalesce) and one file watcher (inotify). Index jobs write through the real
Engine; searches and status read a snapshot view of it (shared store, model and cache, a
copy of the file table), so they never wait for a running job. No worker waits for a job either:
a request that needs one is a waiter, answered when the job ends, so a stuck workspace holds
nothing the others need. A job silent for STALL_S makes its workspace busy: searches waiting on it
are answered so. Stopping cancels jobs at their next batch and never waits on one for long.

A workspace is its identity (workspace.Identity: real path, inodes of the root and of `.zgrep/`):
`/ws/../ws` is `/ws`, and a workspace deleted or re-created under the daemon is dropped (its engine,
watcher and lock on the deleted files) and opened afresh by the next request.

Search freshness here: `--refresh wait` queues an incremental pass and waits for it; when no
`--refresh` is given the default is `off` once the workspace's watcher runs (edits reach the
index about a second after they are saved) and `wait` before that (first use).

A daemon started by an auto-mode search (`started_by` "autostart") opens that search's workspace as
soon as it listens and exits once it has held nothing and heard nothing for its idle timeout.
"""

from __future__ import annotations

import contextlib
import errno
import gc
import hmac
import json
import logging
import logging.handlers
import os
import resource
import signal
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from collections.abc import Callable
from typing import Any

import zmq

from zgrep import __version__, service
from zgrep.config import Config, ConfigError, env_name
from zgrep.contracts import NoArgs, Pong, ServerStatus, Stopping
from zgrep.dispatch import error_response, serve
from zgrep.engine import Engine, load_embedder
from zgrep.server import protocol, runtime
from zgrep.server.client import env_config
from zgrep.search.run import refuse_unasked_tree
from zgrep.service import ErrorCode, Job, Scope
from zgrep.fsutil import atomic_write
from zgrep.locking import ENGINE_LOCK, FileLock, lock_holder
from zgrep.server.watcher import Watcher
from zgrep.service import ZgError
from zgrep.workspace import STATE_DIR, Identity

log = logging.getLogger("zgrep.server.daemon")

REPLIES = "inproc://zgrep-replies"
WORKERS = 4
LOOP_TICK_MS = 250
SETTLE_DELAY_S = 0.2  # after the first search of an index, its reply goes out before settle_heap runs
SHUTDOWN_GRACE_S = 5.0  # for every running job together, once the daemon is asked to stop
STALL_S = 20.0  # a job that reported no progress this long is stuck: searches waiting on it are answered busy
OPEN_WAIT_S = 30.0  # a request's longest wait for an index job opening the store (a big one loads for seconds)
MAX_WAITERS = 64  # requests waiting on one workspace's jobs; more are answered busy


class JobCancelled(ZgError):
    """An index job stopped at a batch boundary: the daemon is stopping or the workspace is gone."""


@dataclass
class Waiter:
    """A request waiting for the job that covers `generation`; `reply` gets that job's response once."""

    generation: int
    reply: Callable[[dict[str, Any]], None]
    listener: list[bytes] | None = None  # its envelope, when it asked for progress events
    patient: bool = True  # an index request waits out a stuck job; a search is answered busy


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
        consent = ("", "") if provider == "local" else (str(config.embedding.allow_remote),
                                                        config.source("embedding.allow_remote"))
        return (provider, config.embedding.model, config.embedding.url, config.embedding.api_key_env, *consent)

    def get(self, config: Config, root: Path) -> Any:
        """The shared model for `config`, loaded on first use (ZgError without a remote opt-in)."""
        with self._lock:
            key = self.key(config)
            if key not in self._models:
                self._models[key] = load_embedder(config, root)
            return self._models[key]

    def describe(self) -> dict[str, Any]:
        with self._lock:
            return {"models": sorted({m.model_id for m in self._models.values()}), "model_instances": len(self._models)}


class Held:
    """One workspace the daemon serves: its engine, index-job queue and watcher."""

    def __init__(self, identity: Identity, key: str, flags: dict[str, Any], pool: EmbedderPool,
                 send: Callable[[list[bytes], dict[str, Any]], None], predecessor: threading.Event | None = None) -> None:
        self.root = identity.real
        self.identity = identity
        self.predecessor = predecessor  # set once a dropped Held of this path has closed its store
        self.key = key
        self.flags = flags
        self.pool = pool
        self.send = send
        self.engine: Any = None
        self.lock = threading.Lock()  # guards engine creation and store opening
        self.cond = threading.Condition()
        self.pending: Job | None = None
        self.requested = 0
        self.completed = 0
        self.running = False
        self.job_started = 0.0
        self.progressed = 0.0  # when the running job last reported progress
        self.jobs_done = 0
        self.waiters: list[Waiter] = []
        self.watcher: Watcher | None = None
        self.active = 0
        self.last_used = time.monotonic()
        self.closed = False
        self.settled = False  # its index's long-lived objects are out of the cyclic GC's way (settle_heap)

    # ----- engine ------------------------------------------------------------------------
    def prepare(self, open_store: bool, request: bool = True) -> Any:
        """The engine, created with the shared model, file table loaded; store opened if asked. For a
        `request` (on a worker), busy rather than a wait on another process's workspace lock (the index job
        may be waiting on it), or a wait longer than OPEN_WAIT_S."""
        deadline = time.monotonic() + OPEN_WAIT_S
        while not self.lock.acquire(timeout=0.1):
            if request and (self.other_holder() or time.monotonic() > deadline):
                raise ZgError(ErrorCode.WORKSPACE_BUSY, f"{self.root} is busy: its index is held by "
                              f"{self.other_holder() or 'an index job opening it'}; retry once it is free")
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
                    raise ZgError(ErrorCode.WORKSPACE_BUSY, f"{self.root} is busy: its index is held by {holder}; "
                                  "retry once it is free")
                self.after_predecessor()
                self.open_store(create=False)
            return self.engine
        finally:
            self.lock.release()

    def after_predecessor(self) -> None:
        """Wait for the store of the workspace this one replaced to close: a Milvus Lite engine's socket is one
        per data-file path, so a store opened before would take over the deleted directory's."""
        if self.predecessor is not None and not self.predecessor.wait(SHUTDOWN_GRACE_S + 1):
            raise ZgError(ErrorCode.WORKSPACE_BUSY, f"the index of the workspace deleted at {self.root} is still "
                          "closing (its job does not stop); retry shortly, or restart: zg server off; zg server on")
        self.predecessor = None

    def other_holder(self) -> str | None:
        """Who holds this workspace's lock when it is another process (as it names itself), else None."""
        holder = lock_holder(self.root / STATE_DIR / ENGINE_LOCK)
        return holder if holder is not None and not holder.startswith(f"pid {os.getpid()} ") and holder != f"pid {os.getpid()}" else None

    def open_store(self, create: bool) -> None:
        """Open the engine's store (taking the workspace lock), then record this daemon as the workspace's
        holder, so a client with another runtime dir finds it (caller holds self.lock)."""
        if not self.engine.has_store():
            self.engine.open_store(create=create)
            runtime.record_holder(self.root)

    def view(self) -> Any:
        """A read-only snapshot of the engine for one search/status request."""
        return self.engine.snapshot()

    def consent_is_per_request(self) -> bool:
        """Whether code goes to a remote embedder only on the sending command's opt-in (a forwarded flag)."""
        config = self.engine.config
        return config.embedding.provider != "local" and config.source("embedding.allow_remote") == "flag"

    def start_watcher(self) -> None:
        """Watch for edits, unless indexing them would outlive a one-command remote opt-in."""
        if self.watcher is None and not self.closed and not self.consent_is_per_request():
            self.watcher = Watcher(self.root, bool(self.engine.config.index.include_hidden), self.on_change)
            self.watcher.start()

    def watching(self) -> bool:
        """Whether a watcher runs (one that stopped on an error leaves refreshing to the searches)."""
        return self.watcher is not None and self.watcher.is_alive()

    def on_change(self, paths: list[str] | None) -> None:
        """Watcher callback: queue an incremental refresh of `paths` (None = everything)."""
        if not self.closed:
            log.info("watcher: %s changed in %s", "files" if paths is None else f"{len(paths)} file(s)", self.root)
            self.submit(Job(paths=None if paths is None else frozenset(paths)))

    # ----- index jobs --------------------------------------------------------------------
    def submit(self, work: Job, reply: Callable[[dict[str, Any]], None] | None = None,
               listener: list[bytes] | None = None, patient: bool = True) -> None:
        """Queue index work (coalescing with what is pending: `Job.merge`); `reply` gets the response of the job that
        covers it (at once: busy, when MAX_WAITERS requests wait already)."""
        with self.cond:
            if reply is not None and len(self.waiters) >= MAX_WAITERS:
                busy = protocol.error(ErrorCode.WORKSPACE_BUSY, f"{len(self.waiters)} requests wait for the index "
                                      f"jobs of {self.root} (busy); retry once they end")
            else:
                busy = None
                self.pending = work if self.pending is None else self.pending.merge(work)
                self.requested += 1
                if reply is not None:
                    self.waiters.append(Waiter(self.requested, reply, listener, patient))
                if not self.running:
                    self.running = True
                    self.job_started = self.progressed = time.monotonic()
                    threading.Thread(target=self._job_loop, name=f"index {self.root.name}", daemon=True).start()
        if busy is not None and reply is not None:
            reply(busy)

    def busy(self) -> bool:
        with self.cond:
            return self.running

    def stalled_for(self) -> float:
        """Seconds the running job has gone without progress (0 when none runs)."""
        with self.cond:
            return time.monotonic() - self.progressed if self.running else 0.0

    def busy_error(self) -> dict[str, Any]:
        return protocol.error(ErrorCode.WORKSPACE_BUSY, f"{self.root} is busy: its index job has reported no progress "
                              f"for {self.stalled_for():.0f}s; retry once it ends (zg server status shows it), or "
                              "search the index as it is with --refresh off")

    def expire(self) -> None:
        """Answer the searches waiting on a job stuck for STALL_S: busy (index requests wait on)."""
        if self.stalled_for() < STALL_S:
            return
        with self.cond:
            impatient = [w for w in self.waiters if not w.patient]
            self.waiters = [w for w in self.waiters if w.patient]
        for waiter in impatient:
            waiter.reply(self.busy_error())

    def _progress(self, event: dict[str, Any]) -> None:
        """A job's progress: a cancellation point, then the event for every waiter that asked for it."""
        if self.closed:
            raise JobCancelled(ErrorCode.SHUTTING_DOWN, "the daemon stopped the index job; run it again")
        if not self.current():
            raise JobCancelled(ErrorCode.WORKSPACE, f"{self.root} was deleted or re-created during its index job; "
                               "run the command again")
        with self.cond:
            self.progressed = time.monotonic()
            listeners = [w.listener for w in self.waiters if w.listener is not None]
        for envelope in listeners:
            self.send(envelope, protocol.progress(event))

    def _job_loop(self) -> None:
        while True:
            with self.cond:
                work, self.pending = self.pending, None
                covered = self.requested
                if work is None or self.closed:
                    self.running = False
                    self.cond.notify_all()
                    return
                self.progressed = time.monotonic()
            started = time.monotonic()
            response = self._run_job(work)
            log.info("index job %s: %s in %.2fs", self.root, "ok" if response["ok"] else response["error"]["code"],
                     time.monotonic() - started)
            with self.cond:
                self.completed = covered
                self.jobs_done += 1
                done = [w for w in self.waiters if w.generation <= covered]
                self.waiters = [w for w in self.waiters if w.generation > covered]
            for waiter in done:
                waiter.reply(response)
            result = response.get("result") or {}
            if result.get("changed") or result.get("deleted"):
                self.settled = False

    def _run_job(self, work: Job) -> dict[str, Any]:
        """Run one index pass with the engine, unless the workspace's settings changed since it was built."""
        if self.stale():  # e.g. remote consent withdrawn: this engine must not embed another file
            return protocol.error(ErrorCode.CONFIG_CHANGED, f"the settings of {self.root} changed; run the command again")
        if not self.current():  # e.g. a watcher's event from a deleted tree: never write into its successor
            return protocol.error(ErrorCode.WORKSPACE, f"{self.root} was deleted or re-created; run the command again")
        try:
            engine = self.prepare(open_store=False, request=False)
            with self.lock:
                self.after_predecessor()
                self.open_store(create=True)
            self.start_watcher()
            request = protocol.make_request(service.job_operation().name, str(self.root), work.args())
            return serve(engine, request, self._progress)
        except Exception as exc:  # engine construction failures become the job's error reply
            return error_response(exc)

    def stale(self) -> bool:
        """Whether the settings this Held was built from (workspace file, its trust, user file) changed."""
        try:
            return settings_key(self.root, self.flags) != self.key
        except ConfigError:
            return True

    def current(self) -> bool:
        """Whether the directory at this root is still this workspace (its identity adopts a new `.zgrep/`)."""
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

    def stop(self, why: dict[str, Any]) -> None:
        """Stop taking work: the watcher ends, the running job stops at its next batch, waiters get `why`."""
        self.closed = True
        if self.watcher is not None:
            self.watcher.stop()
        with self.cond:
            self.pending = None
            waiters, self.waiters = self.waiters, []
        for waiter in waiters:
            waiter.reply(why)

    def close(self, deadline: float | None = None) -> bool:
        """Stop (if not yet), wait for a running job until `deadline` (default: SHUTDOWN_GRACE_S from now),
        then release the engine; False when the job still runs (its engine stays open)."""
        if not self.closed:
            self.stop(protocol.error(ErrorCode.SHUTTING_DOWN, "the daemon stopped before the index job finished; run it again"))
        deadline = deadline if deadline is not None else time.monotonic() + SHUTDOWN_GRACE_S
        with self.cond:
            while self.running and time.monotonic() < deadline:
                self.cond.wait(0.1)
            still_running = self.running
        if self.engine is not None and not still_running:
            self.engine.close()
            runtime.forget_holder(self.root)
        return not still_running

    def describe(self) -> dict[str, Any]:
        with self.cond:
            queued = self.pending is not None
            silent = time.monotonic() - self.progressed if self.running else 0.0
            return {"root": str(self.root), "idle_s": round(self.idle_for(), 1), "active_requests": self.active,
                    "job_running": self.running, "job_queued": queued, "jobs_done": self.jobs_done,
                    "watching": self.watching(), "waiting_requests": len(self.waiters),
                    "job_silent_s": round(silent, 1), "busy": silent >= STALL_S}


class Daemon:
    """The ROUTER loop and the workspaces it holds."""

    def __init__(self, endpoint: str, token: str, idle_timeout: float, embedders: EmbedderPool,
                 started_by: str = "command") -> None:
        self.token = token
        self.idle_timeout = idle_timeout
        self.started_by = started_by
        self.ctx = zmq.Context()
        self.router = self.ctx.socket(zmq.ROUTER)
        self.router.setsockopt(zmq.LINGER, 0)
        self.router.setsockopt(zmq.MAXMSGSIZE, protocol.MAX_MESSAGE_BYTES)
        self.router.bind(endpoint)
        self.endpoint = self.router.getsockopt_string(zmq.LAST_ENDPOINT)
        if self.endpoint.startswith("ipc://"):
            os.chmod(self.endpoint[len("ipc://"):], 0o600)
        self.replies = self.ctx.socket(zmq.PULL)
        self.replies.bind(REPLIES)
        self.local = threading.local()
        self.pool = ThreadPoolExecutor(WORKERS, thread_name_prefix="zg-worker")
        self.embedders = embedders
        self.held: dict[Path, Held] = {}
        self.closing: dict[Path, threading.Event] = {}  # dropped workspaces' stores, set once closed
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        self.started = time.time()
        self.served = 0
        self.heard = time.monotonic()  # when the last message arrived

    # ----- replies -----------------------------------------------------------------------
    def send(self, envelope: list[bytes], msg: dict[str, Any]) -> None:
        """Queue a reply from any thread (the main loop forwards it to the ROUTER)."""
        push = getattr(self.local, "push", None)
        if push is None:
            push = self.local.push = self.ctx.socket(zmq.PUSH)
            push.setsockopt(zmq.LINGER, 1000)
            push.connect(REPLIES)
        push.send_multipart([*envelope, protocol.encode(msg)])

    # ----- main loop ---------------------------------------------------------------------
    def run(self) -> bool:
        """Serve until asked to stop (shutdown request, SIGTERM or SIGINT); False when a job outlived the stop."""
        poller = zmq.Poller()
        poller.register(self.router, zmq.POLLIN)
        poller.register(self.replies, zmq.POLLIN)
        log.info("daemon %s (pid %d) listening on %s", __version__, os.getpid(), self.endpoint)
        while not self.stopping.is_set():
            try:
                events = dict(poller.poll(LOOP_TICK_MS))
            except zmq.ZMQError as exc:  # EINTR from a signal: the loop condition decides
                if exc.errno != errno.EINTR:
                    raise
                continue
            if self.replies in events:
                while self.replies.poll(0):
                    self.router.send_multipart(self.replies.recv_multipart())
            if self.router in events:
                while not self.stopping.is_set() and self.router.poll(0):
                    self.heard = time.monotonic()
                    self.on_message(self.router.recv_multipart())
            self.check_workspaces()
            self.release_idle()
            if self.started_by == "autostart" and self.idle():
                log.info("idle for %gs with no workspace held: exiting (started by autostart)", self.idle_timeout)
                break
        return self.close()

    def on_message(self, frames: list[bytes]) -> None:
        """Answer one message here (cheap ops, every rejection) or hand it to a worker thread."""
        envelope = frames[:-1]
        if not envelope:
            return
        try:
            reply = self.handle(frames)
        except protocol.ProtocolError as exc:
            log.warning("rejected a request: %s", exc.code)
            reply = protocol.error(exc.code, str(exc))
        except Exception as exc:  # a bug must cost one request, not the daemon
            log.exception("a request failed before reaching a worker")
            reply = protocol.error(ErrorCode.INTERNAL, f"{type(exc).__name__} while reading the request")
        if reply is not None:
            self.router.send_multipart([*envelope, protocol.encode(reply)])

    def handle(self, frames: list[bytes]) -> dict[str, Any] | None:
        """Validate a message (shape, size, fields, token) and run it; its reply, or None once a worker has it."""
        if sum(len(f) for f in frames) > protocol.MAX_MESSAGE_BYTES:
            raise protocol.ProtocolError(ErrorCode.TOO_LARGE, f"message exceeds the {protocol.MAX_MESSAGE_BYTES}-byte limit")
        if len(frames) > 3 or (len(frames) == 3 and frames[1]):
            raise protocol.ProtocolError(ErrorCode.MALFORMED, "a request is one frame (after an optional empty delimiter)")
        request = protocol.decode_request(frames[-1])
        if not hmac.compare_digest(request.get("token", "").encode(), self.token.encode()):
            log.warning("rejected a request with a wrong token")
            return protocol.error(ErrorCode.UNAUTHORIZED, "wrong or missing token (the daemon was restarted? run the command again)")
        operation = service.operation(request["op"])
        if operation.scope is not Scope.DAEMON:
            return self.dispatch(frames[:-1], request)
        return protocol.ok(service.handler(operation)(self, request.get("args") or {}, None))

    def warm(self, raw_root: str, config: dict[str, Any]) -> None:
        """Hold `raw_root` and open its index now, watcher included (the workspace of the search that
        autostarted this daemon, with its settings), so the next search finds it warm; failures wait for
        a real request."""
        identity = workspace_identity(raw_root)
        if identity is None:
            return
        root = identity.real
        flags: dict[str, Any] = {**env_config(), **config}  # what the next search from that shell sends
        try:
            key = settings_key(root, flags)
        except ConfigError:
            return
        with self.lock:
            if root in self.held:
                return
            held = self.held[root] = Held(identity, key, flags, self.embedders, self.send)
            held.active += 1
        try:
            if held.prepare(open_store=False).manifest() is not None:
                held.prepare(open_store=True)
                # Milvus loads the collection and its BM25 index on the first query, the ranker its caches
                for op in service.OPERATIONS.values():
                    if op.warm is not None:
                        serve(held.view(), protocol.make_request(op.name, str(root), dict(op.warm)))
                settle_heap()
                held.settled = True
                held.submit(Job())  # edits between the starting search's refresh and the watcher's start
            log.info("warmed workspace %s", root)
        except Exception as exc:  # e.g. the lock is still held: the next request opens it
            log.warning("could not warm %s: %s", root, exc)
        finally:
            with self.lock:
                held.active -= 1
                held.last_used = time.monotonic()

    def dispatch(self, envelope: list[bytes], request: dict[str, Any]) -> dict[str, Any] | None:
        """Find or create the workspace's Held and run the request on a worker (None), or refuse (an error)."""
        identity = workspace_identity(request.get("root"))
        if identity is None:
            return protocol.error(ErrorCode.BAD_REQUEST, "workspace root must be an existing absolute directory")
        root = identity.real
        flags = (request.get("args") or {}).get("config") or {}
        try:
            key = settings_key(root, flags)
        except ConfigError as exc:
            return error_response(exc)
        with self.lock:
            held = self.held.get(root)
            if held is not None and not held.current():
                self.drop(held)
                held = None
            if held is not None and held.key != key:
                if held.active or held.busy():
                    return protocol.error(ErrorCode.WORKSPACE_BUSY, f"the daemon is serving {root} with other settings right now; retry shortly")
                self.release(held)
                held = None
            if held is None:
                closing = self.closing.pop(root, None)
                held = self.held[root] = Held(identity, key, flags, self.embedders, self.send,
                                              None if closing is None or closing.is_set() else closing)
                log.info("holding workspace %s", root)
            held.active += 1
            held.last_used = time.monotonic()
        self.pool.submit(self.serve, held, envelope, request)
        return None

    def serve(self, held: Held, envelope: list[bytes], request: dict[str, Any]) -> None:
        """Worker: answer one workspace request, now or (waiting for an index job) once the job ends."""
        started = time.monotonic()
        answered = threading.Event()

        def finish(response: dict[str, Any]) -> None:
            if not answered.is_set():
                answered.set()
                self.finish(held, envelope, request, response, started)

        try:
            response = self.answer(held, envelope, request, finish)
        except Exception as exc:  # a bug must cost one request, not the daemon
            log.exception("request %s failed", request["op"])
            response = error_response(exc)
        if response is not None:
            finish(response)

    def finish(self, held: Held, envelope: list[bytes], request: dict[str, Any], response: dict[str, Any],
               started: float) -> None:
        """Queue an answered request's reply, account for it, and settle the heap after an index's first search."""
        log.info("%s %s: %s in %.1f ms", request["op"], held.root, "ok" if response["ok"] else response["error"]["code"],
                 (time.monotonic() - started) * 1000)
        settle = service.operation(request["op"]).settles and response["ok"] and not held.settled
        if settle:  # decided (and logged) before the reply, so the client knows whether a pass follows
            held.settled = True
            log.info("heap settle scheduled for %s", held.root)
        self.send(envelope, response)
        with self.lock:
            held.active -= 1
            held.last_used = time.monotonic()
            self.served += 1
        if settle:
            timer = threading.Timer(SETTLE_DELAY_S, settle_heap)  # once the reply is on its way
            timer.daemon = True
            timer.start()

    def answer(self, held: Held, envelope: list[bytes], request: dict[str, Any],
               finish: Callable[[dict[str, Any]], None]) -> dict[str, Any] | None:
        """Route one op: index work goes through the job queue (None: `finish` gets the answer once the job
        ends), reads use a snapshot."""
        operation = service.operation(request["op"])
        args = dict(request.get("args") or {})
        listener = envelope if args.pop("progress", False) and operation.progress else None
        if operation.scope is Scope.RELATIONS:  # the relations database only: no model, no Milvus
            reader = Engine(held.root, Config.load(held.root, held.flags))
            return serve(reader, protocol.make_request(operation.name, str(held.root), args))
        work = operation.job(args) if operation.job is not None else None
        if work is not None:
            held.submit(work, self.later(finish), listener)
            return None
        engine = held.prepare(open_store=False)
        if operation.refreshes:
            refresh = args.get("refresh") or ("off" if held.watching() else "wait")
            if engine.manifest() is None:  # build it first, unless --no-index (then the searcher says so)
                refresh = "off" if args.get("no_index") else "wait"
                if refresh == "wait":
                    try:
                        refuse_unasked_tree(engine, args)
                    except ZgError as exc:
                        return error_response(exc)
            args["refresh"] = "off"
            if refresh == "wait":
                if held.stalled_for() >= STALL_S:
                    return held.busy_error()

                def searched(response: dict[str, Any]) -> None:
                    finish(self.read(held, operation.name, args) if response["ok"] else response)

                held.submit(Job(), self.later(searched), listener, patient=False)
                return None
            if refresh == "background":
                held.submit(Job())
        return self.read(held, operation.name, args)

    def later(self, then: Callable[[dict[str, Any]], None]) -> Callable[[dict[str, Any]], None]:
        """A waiter's reply that runs `then` on a worker (never on the job thread or the main loop)."""
        def reply(response: dict[str, Any]) -> None:
            try:
                self.pool.submit(then, response)
            except RuntimeError:  # the pool is shut down: the daemon is exiting and so is this request
                pass
        return reply

    def read(self, held: Held, op: str, args: dict[str, Any]) -> dict[str, Any]:
        """A read-only op on a snapshot of the workspace (its store opened once it has an index)."""
        try:
            if held.prepare(open_store=False).manifest() is not None:
                held.prepare(open_store=True)
        except Exception as exc:
            return error_response(exc)
        return serve(held.view(), protocol.make_request(op, str(held.root), args))

    # ----- workspaces --------------------------------------------------------------------
    def release(self, held: Held) -> None:
        """Forget a workspace and close its engine (caller holds self.lock)."""
        self.held.pop(held.root, None)
        held.close()
        self.unsettle()
        log.info("released workspace %s", held.root)

    def drop(self, held: Held) -> None:
        """Forget a workspace that was deleted or re-created (caller holds self.lock): its engine, watcher and
        lock are on the deleted files; they close on a thread of their own, and the next request reopens it."""
        self.held.pop(held.root, None)
        held.stop(protocol.error(ErrorCode.WORKSPACE, f"{held.root} was deleted or re-created; run the command again"))
        closed = self.closing[held.root] = threading.Event()

        def close() -> None:
            try:
                while not held.close():  # a job that outlives the grace: its store closes once it ends
                    pass
                closed.set()
            except Exception:  # its files are gone: whatever closing them says, the successor may open its own
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

    def check_workspaces(self) -> None:
        """Drop the workspaces deleted or re-created since; answer the searches that wait on a stuck job."""
        with self.lock:
            for held in list(self.held.values()):
                if not held.current():
                    self.drop(held)
            held_now = list(self.held.values())
        for held in held_now:
            held.expire()

    def release_idle(self) -> None:
        """Release workspaces idle longer than the idle timeout (their Milvus Lite lock too)."""
        with self.lock:
            for held in list(self.held.values()):
                if not held.active and not held.busy() and held.idle_for() > self.idle_timeout:
                    self.release(held)

    def idle(self) -> bool:
        """Whether no workspace is held and no message arrived for the idle timeout."""
        with self.lock:
            return not self.held and time.monotonic() - self.heard > self.idle_timeout

    def status(self) -> ServerStatus:
        with self.lock:
            workspaces = [h.describe() for h in self.held.values()]
        models = self.embedders.describe()
        return {"pid": os.getpid(), "endpoint": self.endpoint, "version": __version__,
                "protocol": protocol.PROTOCOL_VERSION, "started": self.started,
                "uptime_s": round(time.time() - self.started, 1), "workspaces": workspaces,
                "models": models["models"], "model_instances": models["model_instances"],
                "requests_served": self.served,
                "jobs_running": sum(w["job_running"] for w in workspaces),
                "jobs_queued": sum(w["job_queued"] for w in workspaces),
                "idle_timeout_s": self.idle_timeout, "max_rss_mb": round(max_rss_mb(), 1),
                "started_by": self.started_by}

    def close(self) -> bool:
        """Release every workspace and the sockets, giving running jobs SHUTDOWN_GRACE_S in all; False
        when a job still runs (stuck where it cannot be cancelled)."""
        with self.lock:
            helds = list(self.held.values())
            self.held.clear()
        for held in helds:
            held.stop(protocol.error(ErrorCode.SHUTTING_DOWN, "the daemon stopped before the index job finished; run it again"))
        deadline = time.monotonic() + SHUTDOWN_GRACE_S
        stuck = [str(held.root) for held in helds if not held.close(deadline)]
        # the waiters' replies are on the workers: let them reach the ROUTER before it closes
        self.pool.shutdown(wait=False, cancel_futures=False)
        flush_until = time.monotonic() + 1.0
        while True:
            with self.lock:
                answering = sum(held.active for held in helds)  # a reply is queued before its request stops counting
            while self.replies.poll(0 if answering else 50):
                self.router.send_multipart(self.replies.recv_multipart())
            if not answering or time.monotonic() > flush_until:
                break
        self.router.close(0)
        self.replies.close(0)
        if stuck:
            log.warning("index jobs still running in %s: exiting without them", ", ".join(stuck))
        log.info("daemon stopped")
        return not stuck


def ping(daemon: Daemon, args: NoArgs, progress: Any = None) -> Pong:
    """The `ping` op: the readiness probe's answer."""
    return {"pong": True, "pid": os.getpid(), "version": __version__}


def server_status(daemon: Daemon, args: NoArgs, progress: Any = None) -> ServerStatus:
    """The `server_status` op: pid, uptime, held workspaces, models, jobs, memory."""
    return daemon.status()


def shutdown(daemon: Daemon, args: NoArgs, progress: Any = None) -> Stopping:
    """The `shutdown` op: stop after answering."""
    log.info("shutdown requested")
    daemon.stopping.set()
    return {"stopping": True, "pid": os.getpid()}


def settings_key(root: Path, flags: dict[str, Any]) -> str:
    """What a Held is built from: the workspace's settings under the request's flags, with their sources."""
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


def max_rss_mb() -> float:
    """Peak resident memory of this process in MiB."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def settle_heap() -> None:
    """Collect once, freeze what survives (file tables, the model: long-lived objects every full pass
    of the cyclic GC walked), and return what an index job freed to the system (glibc's malloc_trim)."""
    import ctypes.util

    started = time.monotonic()
    gc.collect()
    gc.freeze()
    libc = ctypes.util.find_library("c")
    if libc:
        with contextlib.suppress(OSError, AttributeError):  # not glibc: its allocator decides
            ctypes.CDLL(libc).malloc_trim(0)
    log.info("settled the heap: %d objects frozen, %.0f ms", gc.get_freeze_count(), (time.monotonic() - started) * 1000)


def warm_up(pool: EmbedderPool) -> None:
    """Import every use case and load the default model so the first request is fast."""
    try:
        for operation in service.OPERATIONS.values():
            if operation.scope is not Scope.DAEMON:
                service.handler(operation)
        config = Config.load(None)
        if config.embedding.provider == "local":
            pool.get(config, Path.cwd())
    except Exception:  # warm-up is an optimisation; requests report real failures
        log.exception("warm-up failed")


def setup_logging(foreground: bool) -> Path:
    """A rotating log file in the state dir (plus stderr in the foreground)."""
    path = runtime.state_dir(create=True) / runtime.LOG_FILE
    handler = logging.handlers.RotatingFileHandler(path, maxBytes=1_000_000, backupCount=3, encoding="utf-8")
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(threadName)s %(message)s"))
    root = logging.getLogger("zgrep")
    root.setLevel(logging.INFO)
    root.addHandler(handler)
    if foreground:
        root.addHandler(logging.StreamHandler())
    return path


class AlreadyRunning(RuntimeError):
    """Another daemon holds the runtime dir."""


def take_alive_lock() -> FileLock:
    """Lock the runtime dir's alive lock for this process's life; AlreadyRunning if taken."""
    lock = FileLock(runtime.runtime_dir(create=True) / runtime.ALIVE_LOCK, mode=0o600)
    if not lock.acquire(blocking=False):
        info = runtime.read_info() or {}
        raise AlreadyRunning(f"a zg daemon is already running (pid {info.get('pid', '?')})")
    return lock


def run_daemon(endpoint: str, idle_timeout: float, foreground: bool = False, started_by: str = "command",
               warm: str | None = None, start_lock_fd: int | None = None,
               warm_config: dict[str, Any] | None = None) -> None:
    """Run the daemon in this process until it is stopped; cleans its files on the way out. `warm`: a
    workspace to open once listening, with `warm_config` (the starting command's settings);
    `start_lock_fd`: the starter's start lock, closed once answering."""
    os.umask(0o077)
    # Remote consent comes from the workspace's record or from one command's environment (which
    # the client forwards with each request), never from the environment this daemon started in.
    os.environ.pop(env_name("embedding.allow_remote"), None)
    setup_logging(foreground)
    alive = take_alive_lock()
    runtime.remove_files(None)  # whatever is there belongs to a dead daemon
    pool = EmbedderPool()
    warm_up(pool)  # before binding: once the daemon answers, it answers fast
    try:
        token = runtime.new_token()
        daemon = Daemon(endpoint or runtime.default_endpoint(), token, idle_timeout, pool, started_by)
    except Exception:
        alive.release()
        raise
    rdir = runtime.runtime_dir()
    atomic_write(rdir / runtime.PID_FILE, f"{os.getpid()}\n")
    atomic_write(rdir / runtime.INFO_FILE, json.dumps(
        {"pid": os.getpid(), "endpoint": daemon.endpoint, **runtime.install(),
         "protocol": protocol.PROTOCOL_VERSION, "started": daemon.started, "started_by": started_by}))
    log.info("started by %s", started_by)
    if start_lock_fd is not None:
        os.close(start_lock_fd)  # answering from now on: the next starter sees this daemon
    if warm:
        daemon.pool.submit(daemon.warm, warm, warm_config or {})
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: daemon.stopping.set())
    clean = False
    try:
        clean = daemon.run()
    finally:
        runtime.remove_files(daemon.endpoint)
        alive.release()
    if not clean:  # a job blocked where no cancellation reaches (a lock, a pipe): end without waiting on it
        logging.shutdown()
        os._exit(0)
