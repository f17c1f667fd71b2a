"""The one table of operations (name, handler, typed arguments and result, read-only, progress,
scope) and the one error family with its codes. The protocol, the client, the daemon and
direct mode all derive from here; no other module names an op.

Standard library only (the thin client imports it); handlers are "module:function" strings
resolved on first use, so importing the table loads no engine.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from enum import StrEnum
from functools import cache
from collections.abc import Callable
from typing import Any, ClassVar

from zgrep import contracts as c


class ErrorCode(StrEnum):
    """The stable machine names of failures (the wire's `error.code`)."""

    BAD_REQUEST = "bad_request"  # an argument's value is wrong (the message names the flag)
    NOT_INDEXED = "not_indexed"  # nothing (or no relations, no collection) to read yet
    INDEX_DAMAGED = "index_damaged"  # Milvus rows disagree with the recorded file state
    REMOTE_NOT_ALLOWED = "remote_not_allowed"  # a remote embedder without the workspace's opt-in
    WORKSPACE = "workspace"  # the workspace or its state cannot be used as is
    WORKSPACE_BUSY = "workspace_busy"  # another process holds the workspace
    CONFIG = "config"
    CONFIG_CHANGED = "config_changed"  # the settings changed under a running daemon job
    EMBEDDING = "embedding"
    STORE = "store"  # Milvus unreachable, damaged or refusing
    INTERNAL = "internal"  # a bug: the message names the exception
    MALFORMED = "malformed"  # protocol: not a valid message
    TOO_LARGE = "too_large"
    VERSION_MISMATCH = "version_mismatch"
    UNKNOWN_OP = "unknown_op"
    UNAUTHORIZED = "unauthorized"
    SHUTTING_DOWN = "shutting_down"
    NEEDS_DAEMON = "needs_daemon"  # client: what was asked needs `zg server on`
    NO_DAEMON = "no_daemon"
    DAEMON_LOST = "daemon_lost"


class ZgError(Exception):
    """A failure reported as one line with a stable code; every layer raises this family."""

    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.code = code


class FixedCodeError(ZgError):
    """A ZgError whose subclass fixes the code (`CODE`): raised with the message alone."""

    CODE: ClassVar[ErrorCode]

    def __init__(self, message: str) -> None:
        super().__init__(self.CODE, message)


class Scope(StrEnum):
    """What serving an op needs."""

    WORKSPACE = "workspace"  # the workspace's engine (model, store, state)
    RELATIONS = "relations"  # the workspace's relations database only (no model, no Milvus)
    DAEMON = "daemon"  # the daemon itself (no workspace)


@dataclass(frozen=True)
class Operation:
    """One op: `handler(target, args, progress) -> result`, target an Engine (workspace and
    relations scope) or the Daemon (daemon scope)."""

    name: str
    handler: str  # "module:function"
    args: type
    result: Any  # a TypedDict (or a union of them)
    scope: Scope
    read_only: bool  # the client gives it a deadline and may retry it in-process if the daemon dies
    progress: bool = False  # streams progress messages (index batches) before its result


INDEX = Operation("index", "zgrep.index.run:run_index", c.IndexArgs, c.IndexReport, Scope.WORKSPACE,
                  read_only=False, progress=True)
SEARCH = Operation("search", "zgrep.search.run:run_search", c.SearchArgs, c.SearchResult, Scope.WORKSPACE,
                   read_only=True, progress=True)
STATUS = Operation("status", "zgrep.index.status:run_status", c.NoArgs, c.Status, Scope.WORKSPACE, read_only=True)
CALLERS = Operation("callers", "zgrep.relations.query:run_callers", c.CallersArgs, c.CallersResult,
                    Scope.RELATIONS, read_only=True)
TRACE = Operation("trace", "zgrep.relations.query:run_trace", c.TraceArgs, c.TraceResult, Scope.RELATIONS,
                  read_only=True)
IMPACT = Operation("impact", "zgrep.relations.impact:run_impact", c.ImpactArgs, c.ImpactResult, Scope.RELATIONS,
                   read_only=True)
PING = Operation("ping", "zgrep.server.daemon:ping", c.NoArgs, c.Pong, Scope.DAEMON, read_only=True)
SERVER_STATUS = Operation("server_status", "zgrep.server.daemon:server_status", c.NoArgs, c.ServerStatus,
                          Scope.DAEMON, read_only=True)
SHUTDOWN = Operation("shutdown", "zgrep.server.daemon:shutdown", c.NoArgs, c.Stopping, Scope.DAEMON,
                     read_only=False)

OPERATIONS: dict[str, Operation] = {op.name: op for op in (INDEX, SEARCH, STATUS, CALLERS, TRACE, PING,
                                                           SERVER_STATUS, SHUTDOWN, IMPACT)}


def operation(name: str) -> Operation:
    """The op called `name`; ZgError(UNKNOWN_OP) when there is none."""
    try:
        return OPERATIONS[name]
    except KeyError:
        raise ZgError(ErrorCode.UNKNOWN_OP, f"unknown op {name!r}") from None


@cache
def handler(op: Operation) -> Callable[..., Any]:
    """The function serving `op`, imported on first use."""
    module, _, function = op.handler.partition(":")
    return getattr(importlib.import_module(module), function)
