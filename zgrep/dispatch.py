"""Serve one request with a workspace's Engine: the op's handler from the table, every failure
one error response. The daemon's workers and direct mode both come through here."""

from __future__ import annotations

import threading
from pathlib import Path
from zgrep import service
from zgrep.config import Config
from zgrep.contracts import Args, JSONObject
from zgrep.engine import Engine
from zgrep.progress import Progress
from zgrep.server import protocol
from zgrep.service import ErrorCode, Scope, ZgError
from zgrep.workspace import redact


def handle(engine: Engine, op: str, args: Args, progress: Progress | None = None) -> JSONObject:
    """Run workspace op `op` with `engine`; ZgError when it fails (or is not a workspace op)."""
    operation = service.operation(op)
    if operation.scope is Scope.DAEMON:
        raise ZgError(ErrorCode.UNKNOWN_OP, f"op {op!r} is answered by the daemon only")
    result: JSONObject = service.handler(operation)(engine, args, progress)
    return result


def error_response(exc: BaseException) -> protocol.Reply:
    """The error response for a failure: a ZgError's code and line, anything else `internal`."""
    if isinstance(exc, ZgError):
        return protocol.error(exc.code, redact(str(exc)))
    return protocol.error(ErrorCode.INTERNAL, redact(f"{type(exc).__name__}: {exc}"))


def serve(
    engine: Engine, request: protocol.Request, progress: Progress | None = None
) -> protocol.Reply:
    """Answer one request with `engine`, turning failures into error responses."""
    try:
        return protocol.ok(handle(engine, request["op"], request.get("args") or {}, progress))
    except Exception as exc:  # every failure becomes one line for the user
        return error_response(exc)


class _Direct:
    """This process's direct-mode calls of each workspace, for front ends that serve many (`zg mcp`,
    `zg serve`): one engine at a time, except that while a write op (index) holds it, reads borrow a
    snapshot of it, as the daemon serves reads during a job, rather than wait; relations ops read
    their database and never wait."""

    def __init__(self) -> None:
        self.cond = threading.Condition()
        self.open: set[Path] = set()
        self.writers: dict[Path, Engine] = {}
        self.borrowers: dict[Path, int] = {}

    def enter(self, root: Path, op: service.Operation) -> Engine | None:
        """Wait until `root` is free (then it is this call's: None) or a write op's engine can be
        read."""
        with self.cond:
            while root in self.open:
                writer = self.writers.get(root)
                if op.read_only and writer is not None and writer.manifest() is not None:
                    view = writer.snapshot()
                    self.borrowers[root] = self.borrowers.get(root, 0) + 1
                    return view
                self.cond.wait()
            self.open.add(root)
            return None

    def give_back(self, root: Path) -> None:
        with self.cond:
            self.borrowers[root] -= 1
            self.cond.notify_all()

    def lend(self, root: Path, engine: Engine) -> None:
        with self.cond:
            self.writers[root] = engine
            self.cond.notify_all()

    def unlend(self, root: Path) -> None:
        """No new borrower; wait for the current ones (the engine closes next)."""
        with self.cond:
            self.writers.pop(root, None)
            while self.borrowers.get(root):
                self.cond.wait()

    def leave(self, root: Path) -> None:
        with self.cond:
            self.open.discard(root)
            self.cond.notify_all()


_direct = _Direct()


def run_direct(request: protocol.Request, progress: Progress | None = None) -> protocol.Reply:
    """Open the workspace's engine in this process, serve one request, close it (see `_Direct`)."""
    try:
        if request["root"] is None:
            raise ZgError(ErrorCode.BAD_REQUEST, "a workspace op needs a workspace root")
        root = Path(request["root"])
        op = service.operation(request["op"])
        if op.scope is Scope.RELATIONS:
            return _serve_new(root, request, progress)
        lent = _direct.enter(root, op)
    except Exception as exc:
        return error_response(exc)
    if lent is not None:
        try:  # the index job in progress refreshes; the borrowed view must not
            args: Args = (
                {**(request.get("args") or {}), "refresh": "off"}
                if op.refreshes
                else request.get("args") or {}
            )
            return serve(lent, {**request, "args": args}, progress)
        finally:
            _direct.give_back(root)
    try:
        return _serve_new(root, request, progress, lend=not op.read_only)
    finally:
        _direct.leave(root)


def _serve_new(
    root: Path, request: protocol.Request, progress: Progress | None, lend: bool = False
) -> protocol.Reply:
    try:
        engine = Engine(root, Config.load(root, request.get("args", {}).get("config")))
    except Exception as exc:
        return error_response(exc)
    if lend:
        _direct.lend(root, engine)
    try:
        return serve(engine, request, progress)
    finally:
        if lend:
            _direct.unlend(root)
        engine.close()
