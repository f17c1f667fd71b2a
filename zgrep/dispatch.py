"""Serve one request with a workspace's Engine: the op's handler from the table, every failure
one error response. The daemon's workers and direct mode both come through here."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from zgrep import service
from zgrep.config import Config
from zgrep.engine import Engine
from zgrep.progress import Progress
from zgrep.server import protocol
from zgrep.service import ErrorCode, Scope, ZgError
from zgrep.workspace import redact


def handle(engine: Engine, op: str, args: Any, progress: Progress | None = None) -> Any:
    """Run workspace op `op` with `engine`; ZgError when it fails (or is not a workspace op)."""
    operation = service.operation(op)
    if operation.scope is Scope.DAEMON:
        raise ZgError(ErrorCode.UNKNOWN_OP, f"op {op!r} is answered by the daemon only")
    return service.handler(operation)(engine, args, progress)


def error_response(exc: BaseException) -> dict[str, Any]:
    """The error response for a failure: a ZgError's code and line, anything else `internal`."""
    if isinstance(exc, ZgError):
        return protocol.error(exc.code, redact(str(exc)))
    return protocol.error(ErrorCode.INTERNAL, redact(f"{type(exc).__name__}: {exc}"))


def serve(engine: Engine, request: dict[str, Any], progress: Progress | None = None) -> dict[str, Any]:
    """Answer one request with `engine`, turning failures into error responses."""
    try:
        return protocol.ok(handle(engine, request["op"], request.get("args") or {}, progress))
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
