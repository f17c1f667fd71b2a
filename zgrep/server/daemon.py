"""The resident daemon: a ZeroMQ ROUTER loop serving many workspaces with warm engines.

In pieces: `transport` (the sockets, frames, validation and token), `holder` (the workspaces held:
engine, store, watcher, shared models), `jobrunner` (each workspace's index jobs, coalesced, and the
requests waiting on them); this module is the loop that joins them and answers each request by its
op's row.

Threads: the main loop owns the ROUTER socket; requests run on a worker pool and send their
replies back through an inproc PUSH/PULL pair; each held workspace has at most one index-job
thread (requests coalesce) and one file watcher (inotify). Index jobs write through the real
Engine; searches and status read a snapshot view of it (shared store, model and cache, a
copy of the file table), so they never wait for a running job. No worker waits for a job either:
a request that needs one is a waiter, answered when the job ends, so a stuck workspace holds
nothing the others need. A job silent for STALL_S makes its workspace busy: searches waiting on it
are answered so. Stopping cancels jobs at their next batch and never waits on one for long.

Search freshness here: `--refresh wait` queues an incremental pass and waits for it; when no
`--refresh` is given the default is `off` once the workspace's watcher runs (edits reach the
index about a second after they are saved) and `wait` before that (first use).

A daemon started by an auto-mode search (`started_by` "autostart") opens that search's workspace as
soon as it listens and exits once it has held nothing and heard nothing for its idle timeout."""

from __future__ import annotations

import contextlib
import gc
import json
import logging
import logging.handlers
import os
import resource
import signal
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from zgrep import __version__, dispatch, service
from zgrep.config import Config, ConfigError, env_name
from zgrep.contracts import Args, NoArgs, Pong, ServerStatus, Setting, Stopping
from zgrep.engine import Engine
from zgrep.fsutil import atomic_write
from zgrep.locking import FileLock
from zgrep.search.run import refuse_unasked_tree
from zgrep.server import protocol, runtime
from zgrep.server.client import env_config
from zgrep.server.holder import (
    SHUTDOWN_GRACE_S,
    STOPPED,
    EmbedderPool,
    Held,
    Holdings,
    settings_key,
    workspace_identity,
)
from zgrep.server.jobrunner import STALL_S
from zgrep.server.transport import Transport
from zgrep.service import ErrorCode, Job, Scope, ZgError

log = logging.getLogger("zgrep.server.daemon")

WORKERS = 4
LOOP_TICK_MS = 250
# after the first search of an index, its reply goes out before settle_heap runs
SETTLE_DELAY_S = 0.2


class Daemon:
    """The daemon's loop: its transport's requests, admitted (the daemon's own ops answered at once,
    the others given to a worker with their workspace's Held) and answered by the op's row
    (`service.Operation`): a `job` op goes through the workspace's job runner, a `refreshes` op
    waits for the pass its `refresh` asks for, every read runs on a snapshot; no op is named here.
    """

    def __init__(
        self,
        endpoint: str,
        token: str,
        idle_timeout: float,
        embedders: EmbedderPool,
        started_by: str = "command",
    ) -> None:
        self.idle_timeout = idle_timeout
        self.started_by = started_by
        self.transport = Transport(endpoint, token)
        self.endpoint = self.transport.endpoint
        self.pool = ThreadPoolExecutor(WORKERS, thread_name_prefix="zg-worker")
        self.embedders = embedders
        self.holdings = Holdings(embedders, self.transport.send)
        self.stopping = threading.Event()
        self.started = time.time()
        self.served = 0

    def run(self) -> bool:
        """Serve until asked to stop (shutdown request, SIGTERM or SIGINT); False when a job
        outlived the stop."""
        log.info("daemon %s (pid %d) listening on %s", __version__, os.getpid(), self.endpoint)
        while not self.stopping.is_set():
            self.transport.pump(LOOP_TICK_MS, self.admit, self.stopping)
            self.holdings.check()
            self.holdings.release_idle(self.idle_timeout)
            if self.started_by == "autostart" and self.idle():
                log.info(
                    "idle for %gs with no workspace held: exiting (started by autostart)",
                    self.idle_timeout,
                )
                break
        return self.close()

    def admit(self, envelope: list[bytes], request: protocol.Request) -> protocol.Reply | None:
        """A checked request: a daemon op's reply now; a workspace op on a worker with its Held
        (None), or refused (an error)."""
        operation = service.operation(request["op"])
        if operation.scope is Scope.DAEMON:
            return protocol.ok(service.handler(operation)(self, request.get("args") or {}, None))
        identity = workspace_identity(request.get("root"))
        if identity is None:
            return protocol.error(
                ErrorCode.BAD_REQUEST, "workspace root must be an existing absolute directory"
            )
        flags = (request.get("args") or {}).get("config") or {}
        try:
            key = settings_key(identity.real, flags)
        except ConfigError as exc:
            return dispatch.error_response(exc)
        held = self.holdings.take(identity, key, flags)
        if not isinstance(held, Held):
            return held
        self.pool.submit(self.work, held, envelope, request)
        return None

    def warm(self, raw_root: str, config: dict[str, Setting]) -> None:
        """Hold `raw_root` and open its index now, watcher included (the workspace of the search
        that autostarted this daemon, with its settings), so the next search finds it warm; failures
        wait for a real request."""
        identity = workspace_identity(raw_root)
        if identity is None:
            return
        root = identity.real
        flags: dict[str, Setting] = {
            **env_config(),
            **config,
        }  # what the next search from that shell sends
        try:
            key = settings_key(root, flags)
        except ConfigError:
            return
        held = self.holdings.take_new(identity, key, flags)
        if held is None:
            return
        try:
            if held.prepare(open_store=False).manifest() is not None:
                held.prepare(open_store=True)
                # Milvus loads the collection and its BM25 index on the first query, the ranker its
                # caches
                for op in service.OPERATIONS.values():
                    if op.warm is not None:
                        dispatch.serve(
                            held.view(), protocol.make_request(op.name, str(root), op.warm.copy())
                        )
                settle_heap()
                held.settled = True
                # edits between the starting search's refresh and the watcher's start
                held.jobs.submit(Job())
            log.info("warmed workspace %s", root)
        except Exception as exc:  # e.g. the lock is still held: the next request opens it
            log.warning("could not warm %s: %s", root, exc)
        finally:
            self.holdings.done(held)

    def work(self, held: Held, envelope: list[bytes], request: protocol.Request) -> None:
        """Worker: answer one workspace request, now or (waiting for an index job) once the job
        ends."""
        started = time.monotonic()
        answered = threading.Event()

        def finish(response: protocol.Reply) -> None:
            if not answered.is_set():
                answered.set()
                self.finish(held, envelope, request, response, started)

        try:
            response = self.answer(held, envelope, request, finish)
        except Exception as exc:  # a bug must cost one request, not the daemon
            log.exception("request %s failed", request["op"])
            response = dispatch.error_response(exc)
        if response is not None:
            finish(response)

    def finish(
        self,
        held: Held,
        envelope: list[bytes],
        request: protocol.Request,
        response: protocol.Reply,
        started: float,
    ) -> None:
        """Queue an answered request's reply, account for it, and settle the heap after an index's
        first search."""
        log.info(
            "%s %s: %s in %.1f ms",
            request["op"],
            held.root,
            "ok" if response["ok"] else response["error"]["code"],
            (time.monotonic() - started) * 1000,
        )
        settle = service.operation(request["op"]).settles and response["ok"] and not held.settled
        # decided (and logged) before the reply, so the client knows whether a pass follows
        if settle:
            held.settled = True
            log.info("heap settle scheduled for %s", held.root)
        self.transport.send(envelope, response)
        with self.holdings.lock:
            held.active -= 1
            held.last_used = time.monotonic()
            self.served += 1
        if settle:
            timer = threading.Timer(SETTLE_DELAY_S, settle_heap)  # once the reply is on its way
            timer.daemon = True
            timer.start()

    def answer(
        self,
        held: Held,
        envelope: list[bytes],
        request: protocol.Request,
        finish: Callable[[protocol.Reply], None],
    ) -> protocol.Reply | None:
        """Route one op: index work goes through the job queue (None: `finish` gets the answer once
        the job ends), reads use a snapshot."""
        operation = service.operation(request["op"])
        args: Args = {**(request.get("args") or {})}
        listener = envelope if args.pop("progress", False) and operation.progress else None
        if operation.scope is Scope.RELATIONS:  # the relations database only: no model, no Milvus
            reader = Engine(held.root, Config.load(held.root, held.flags))
            return dispatch.serve(
                reader, protocol.make_request(operation.name, str(held.root), args)
            )
        work = operation.job(args) if operation.job is not None else None
        if work is not None:
            held.jobs.submit(work, self.later(finish), listener)
            return None
        engine = held.prepare(open_store=False)
        if operation.refreshes:
            refresh = args.get("refresh") or ("off" if held.watching() else "wait")
            # build it first, unless --no-index (then the searcher says so)
            if engine.manifest() is None:
                refresh = "off" if args.get("no_index") else "wait"
                if refresh == "wait":
                    try:
                        refuse_unasked_tree(engine, args)
                    except ZgError as exc:
                        return dispatch.error_response(exc)
            args["refresh"] = "off"
            if refresh == "wait":
                if held.jobs.stalled_for() >= STALL_S:
                    return held.jobs.busy_error()

                def searched(response: protocol.Reply) -> None:
                    finish(self.read(held, operation.name, args) if response["ok"] else response)

                held.jobs.submit(Job(), self.later(searched), listener, patient=False)
                return None
            if refresh == "background":
                held.jobs.submit(Job())
        return self.read(held, operation.name, args)

    def later(self, then: Callable[[protocol.Reply], None]) -> Callable[[protocol.Reply], None]:
        """A waiter's reply that runs `then` on a worker (never on the job thread or the main loop)."""

        def reply(response: protocol.Reply) -> None:
            try:
                self.pool.submit(then, response)
            # the pool is shut down: the daemon is exiting and so is this request
            except RuntimeError:
                pass

        return reply

    def read(self, held: Held, op: str, args: Args) -> protocol.Reply:
        """A read-only op on a snapshot of the workspace (its store opened once it has an index)."""
        try:
            if held.prepare(open_store=False).manifest() is not None:
                held.prepare(open_store=True)
        except Exception as exc:
            return dispatch.error_response(exc)
        return dispatch.serve(held.view(), protocol.make_request(op, str(held.root), args))

    def idle(self) -> bool:
        """Whether no workspace is held and no message arrived for the idle timeout."""
        return self.holdings.empty() and time.monotonic() - self.transport.heard > self.idle_timeout

    def status(self) -> ServerStatus:
        workspaces = self.holdings.describe()
        models = self.embedders.describe()
        return {
            "pid": os.getpid(),
            "endpoint": self.transport.endpoint,
            "version": __version__,
            "protocol": protocol.PROTOCOL_VERSION,
            "started": self.started,
            "uptime_s": round(time.time() - self.started, 1),
            "workspaces": workspaces,
            "models": models["models"],
            "model_instances": models["model_instances"],
            "requests_served": self.served,
            "jobs_running": sum(w["job_running"] for w in workspaces),
            "jobs_queued": sum(w["job_queued"] for w in workspaces),
            "idle_timeout_s": self.idle_timeout,
            "max_rss_mb": round(max_rss_mb(), 1),
            "started_by": self.started_by,
        }

    def close(self) -> bool:
        """Release every workspace and the sockets, giving running jobs SHUTDOWN_GRACE_S in all;
        False when a job still runs (stuck where it cannot be cancelled)."""
        helds = self.holdings.take_all()
        for held in helds:
            held.stop(protocol.error(ErrorCode.SHUTTING_DOWN, STOPPED))
        deadline = time.monotonic() + SHUTDOWN_GRACE_S
        stuck = [str(held.root) for held in helds if not held.close(deadline)]
        # the waiters' replies are on the workers: let them reach the ROUTER before it closes
        self.pool.shutdown(wait=False, cancel_futures=False)
        flush_until = time.monotonic() + 1.0
        while True:
            with self.holdings.lock:
                # a reply is queued before its request stops counting
                answering = sum(held.active for held in helds)
            self.transport.forward(0 if answering else 50)
            if not answering or time.monotonic() > flush_until:
                break
        self.transport.close()
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


def max_rss_mb() -> float:
    """Peak resident memory of this process in MiB."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def settle_heap() -> None:
    """Collect once, freeze what survives (file tables, the model: long-lived objects every full
    pass of the cyclic GC walked), and return what an index job freed to the system (glibc's
    malloc_trim)."""
    import ctypes.util

    started = time.monotonic()
    gc.collect()
    gc.freeze()
    libc = ctypes.util.find_library("c")
    if libc:
        with contextlib.suppress(OSError, AttributeError):  # not glibc: its allocator decides
            ctypes.CDLL(libc).malloc_trim(0)
    log.info(
        "settled the heap: %d objects frozen, %.0f ms",
        gc.get_freeze_count(),
        (time.monotonic() - started) * 1000,
    )


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
    handler = logging.handlers.RotatingFileHandler(
        path, maxBytes=1_000_000, backupCount=3, encoding="utf-8"
    )
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
        info = runtime.read_info()
        raise AlreadyRunning(f"a zg daemon is already running (pid {info['pid'] if info else '?'})")
    return lock


def run_daemon(
    endpoint: str,
    idle_timeout: float,
    foreground: bool = False,
    started_by: str = "command",
    warm: str | None = None,
    start_lock_fd: int | None = None,
    warm_config: dict[str, Setting] | None = None,
) -> None:
    """Run the daemon in this process until it is stopped; cleans its files on the way out. `warm`:
    a workspace to open once listening, with `warm_config` (the starting command's settings);
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
        daemon = Daemon(
            endpoint or runtime.default_endpoint(), token, idle_timeout, pool, started_by
        )
    except Exception:
        alive.release()
        raise
    rdir = runtime.runtime_dir()
    atomic_write(rdir / runtime.PID_FILE, f"{os.getpid()}\n")
    atomic_write(
        rdir / runtime.INFO_FILE,
        json.dumps(
            {
                "pid": os.getpid(),
                "endpoint": daemon.endpoint,
                **runtime.install(),
                "protocol": protocol.PROTOCOL_VERSION,
                "started": daemon.started,
                "started_by": started_by,
            }
        ),
    )
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
    # a job blocked where no cancellation reaches (a lock, a pipe): end without waiting on it
    if not clean:
        logging.shutdown()
        os._exit(0)
