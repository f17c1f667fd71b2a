"""The one table of operations and the one error family with its codes. An op's row holds its
handler, its typed arguments and result (`zgrep.contracts`), the arguments the agent front ends
offer (`Param`) and the policy the client and the daemon apply to it (autostart, a daemon-only
argument, index jobs, refreshing); the protocol's validation, the MCP tools, the HTTP routes and
`frontends.api.Workspace`'s methods are built from it. Outside this table, only a command, its
handler and its human output name an op.

Standard library only (the thin client imports it); handlers are "module:function" strings resolved
on first use, so importing the table loads no engine. Its records are plain classes: a dataclass
imports inspect (~45M instructions of a thin `zg` call, zgrep.cli.fast), a NamedTuple typing and the
compilation of each field's annotation; and `typing` itself is imported only for type checkers."""

from __future__ import annotations

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (~16M instructions of a thin call)
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from typing import Any, ClassVar, Final

    from zgrep import contracts as c


class ErrorCode:
    """The stable machine names of failures (the wire's `error.code`): str constants, not an enum
    (`enum` and what it imports cost ~14M instructions of a thin call)."""

    BAD_REQUEST: Final = "bad_request"  # an argument's value is wrong (the message names the flag)
    NOT_INDEXED: Final = "not_indexed"  # nothing (or no relations, no collection) to read yet
    INDEX_DAMAGED: Final = "index_damaged"  # Milvus rows disagree with the recorded file state
    REMOTE_NOT_ALLOWED: Final = "remote_not_allowed"  # a remote embedder without the workspace's opt-in
    WORKSPACE: Final = "workspace"  # the workspace or its state cannot be used as is
    WORKSPACE_BUSY: Final = "workspace_busy"  # another process holds the workspace
    CONFIG: Final = "config"
    CONFIG_CHANGED: Final = "config_changed"  # the settings changed under a running daemon job
    EMBEDDING: Final = "embedding"
    STORE: Final = "store"  # Milvus unreachable, damaged or refusing
    INTERNAL: Final = "internal"  # a bug: the message names the exception
    MALFORMED: Final = "malformed"  # protocol: not a valid message
    TOO_LARGE: Final = "too_large"
    VERSION_MISMATCH: Final = "version_mismatch"
    UNKNOWN_OP: Final = "unknown_op"
    UNAUTHORIZED: Final = "unauthorized"
    SHUTTING_DOWN: Final = "shutting_down"
    NEEDS_DAEMON: Final = "needs_daemon"  # client: what was asked needs `zg server on`
    NO_DAEMON: Final = "no_daemon"
    DAEMON_LOST: Final = "daemon_lost"


class ZgError(Exception):
    """A failure reported as one line with a stable code; every layer raises this family."""

    def __init__(self, code: str, message: str) -> None:  # code: an ErrorCode
        super().__init__(message)
        self.code = code


class FixedCodeError(ZgError):
    """A ZgError whose subclass fixes the code (`CODE`): raised with the message alone."""

    CODE: ClassVar[str]  # an ErrorCode

    def __init__(self, message: str) -> None:
        super().__init__(self.CODE, message)


class Scope:
    """What serving an op needs (str constants, as ErrorCode)."""

    WORKSPACE: Final = "workspace"  # the workspace's engine (model, store, state)
    RELATIONS: Final = "relations"  # the workspace's relations database only (no model, no Milvus)
    DAEMON: Final = "daemon"  # the daemon itself (no workspace)


class Param:
    """One argument as `zg mcp` and `zg serve` offer it and `frontends.api.Workspace` takes it (by
    `key`); its type is the contract's (`Operation.args`)."""

    __slots__ = ("key", "name", "help", "default", "required", "low", "high", "one", "listed", "http", "mcp")

    def __init__(
        self,
        key: str,  # the contract's argument
        name: str,  # the MCP tool's argument and the HTTP query parameter: the CLI's long flag without `--`
        help: str,  # what agents read (the MCP schema's description)
        default: Any = None,
        required: bool = False,  # the MCP tool's argument has no default
        # the bounds the MCP schema states (the handler checks them on every edge)
        low: float | None = None,
        high: float | None = None,
        one: bool = False,  # one value of a list argument (MCP's `query`); a list argument otherwise takes one or several
        listed: bool = False,  # a list argument that takes a list only
        # its HTTP query parameter when that is not `name` ("": `name`; None: not on HTTP)
        http: str | None = "",
        mcp: bool = True,  # an argument of the MCP tool
    ) -> None:
        self.key = key
        self.name = name
        self.help = help
        self.default = default
        self.required = required
        self.low = low
        self.high = high
        self.one = one
        self.listed = listed
        self.http = http
        self.mcp = mcp


class Job:
    """Index work the daemon's job runner coalesces: a full rebuild, or a pass over `paths` (None =
    all)."""

    __slots__ = ("full", "paths")

    def __init__(self, full: bool = False, paths: frozenset[str] | None = None) -> None:
        self.full = full
        self.paths = paths

    def merge(self, other: Job) -> Job:
        paths = None if self.paths is None or other.paths is None else self.paths | other.paths
        return Job(self.full or other.full, paths)

    def args(self) -> c.Args:
        """The job op's arguments for this work."""
        return {"full": self.full, "paths": None if self.paths is None else sorted(self.paths)}


class Operation:
    """One op: `handler(target, args, progress) -> result`, target an Engine (workspace and
    relations scope) or the Daemon (daemon scope); then how the front ends offer it and the policy
    the client and the daemon apply to it."""

    __slots__ = (
        "name", "handler", "args_name", "result_name", "scope", "read_only", "progress", "frontends",
        "params", "about", "mode_leads", "refuse", "expand", "present", "autostart", "daemon_only",
        "job", "refreshes", "settles", "warm",
    )  # fmt: skip

    def __init__(
        self,
        name: str,
        handler: str,  # "module:function"
        # the names of its contract's TypedDicts in zgrep.contracts (`args`, `result`)
        args_name: str,
        result_name: str,
        scope: str,  # a Scope
        read_only: bool,  # the client gives it a deadline and may retry it in-process if the daemon dies
        progress: bool = False,  # streams progress messages (index batches) before its result
        # served as an MCP tool ("mcp") and an HTTP route at /NAME ("http")
        frontends: frozenset[str] = frozenset(),
        params: tuple[Param, ...] = (),  # the arguments they offer
        about: str = "",  # what agents read: the MCP tool's description
        mode_leads: bool = True,  # `--json` puts the `mode` it adds first (else last)
        # a front end's refusal of its arguments
        refuse: Callable[[Mapping[str, Any]], str | None] | None = None,
        # "module:function"(root, args) -> args: what a front end adds to its arguments
        expand: str | None = None,
        # "module:function"(root, result) -> answer: what a front end answers with it
        present: str | None = None,
        autostart: bool = False,  # answered in-process in auto mode for want of a daemon, it starts one for the next call
        # what of its arguments only a daemon serves
        daemon_only: Callable[[Mapping[str, Any]], str | None] | None = None,
        # the daemon's job runner runs it (coalesced), or None
        job: Callable[[Mapping[str, Any]], Job | None] | None = None,
        refreshes: bool = False,  # reads after the index pass its `refresh` argument asks for (never on a borrowed view)
        settles: bool = False,  # the daemon settles its heap after the first answer of an index
        warm: c.Args | None = None,  # a daemon warming a workspace calls it so
    ) -> None:
        self.name = name
        self.handler = handler
        self.args_name = args_name
        self.result_name = result_name
        self.scope = scope
        self.read_only = read_only
        self.progress = progress
        self.frontends = frontends
        self.params = params
        self.about = about
        self.mode_leads = mode_leads
        self.refuse = refuse
        self.expand = expand
        self.present = present
        self.autostart = autostart
        self.daemon_only = daemon_only
        self.job = job
        self.refreshes = refreshes
        self.settles = settles
        self.warm = warm

    def __repr__(self) -> str:
        return f"Operation({self.name!r})"

    @property
    def args(self) -> type:
        """Its contract's TypedDict: the protocol validates requests by its field types."""
        return _contract(self.args_name)

    @property
    def result(self) -> type:
        """The TypedDict of its answer."""
        return _contract(self.result_name)


def _contract(name: str) -> type:
    """A TypedDict of zgrep.contracts, imported on first use: its classes cost ~30M instructions,
    which a thin client sending a request never needs."""
    import importlib

    cls: type = getattr(importlib.import_module("zgrep.contracts"), name)
    return cls


def _index_job(args: Mapping[str, Any]) -> Job | None:
    """An index request's work for the job runner; a dry run writes nothing and is answered at once
    (None)."""
    if args.get("dry_run"):
        return None
    paths = args.get("paths")
    return Job(bool(args.get("full")), None if paths is None else frozenset(paths))


def _whole_or_paths(args: Mapping[str, Any]) -> str | None:
    return (
        "--full rebuilds everything; it cannot be combined with paths"
        if args.get("full") and args.get("paths")
        else None
    )


def _background_refresh(args: Mapping[str, Any]) -> str | None:
    return (
        "--refresh background needs the daemon: zg server on"
        if args.get("refresh") == "background"
        else None
    )


MCP, HTTP = "mcp", "http"
EDGES = (
    "Edge kinds: call, reference, import, annotation, decorator, inherit, or all (a list, or one "
    "comma-separated string)."
)
SOURCE_FILE = Param("source_file", "source_file", "Only the definition in this file.")
DEFINITION = "A definition: name, Scope.name, or PATH:name."

INDEX = Operation(
    "index",
    "zgrep.index.run:run_index",
    "IndexArgs",
    "IndexReport",
    Scope.WORKSPACE,
    read_only=False,
    progress=True,
    frontends=frozenset({MCP}),
    mode_leads=False,
    refuse=_whole_or_paths,
    job=_index_job,
    params=(
        Param("paths", "paths", "Workspace-relative path(s) to refresh (default: all)."),
        Param(
            "full", "full", "Rebuild everything from scratch (slow; rarely needed).", default=False
        ),
    ),
    about="""Bring the index up to date with the working tree (only changed files are re-read), or just `paths`.
Search refreshes by itself, so call this after large edits or when `status` reports a problem.
Sends progress notifications (files done of files to index). Returns the `zg index --json` report.""",
)
SEARCH = Operation(
    "search",
    "zgrep.search.run:run_search",
    "SearchArgs",
    "SearchResult",
    Scope.WORKSPACE,
    read_only=True,
    progress=True,
    frontends=frozenset({MCP, HTTP}),
    autostart=True,
    daemon_only=_background_refresh,
    refreshes=True,
    settles=True,
    warm={
        "queries": ["warm_up the search index"],
        "refresh": "off",
    },  # every route, as a real search
    params=(
        Param(
            "queries",
            "query",
            "What the code does, in plain words, or an identifier.",
            one=True,
            http=None,
        ),
        Param(
            "queries",
            "queries",
            "Several queries at once; results come grouped.",
            listed=True,
            http="q",
        ),
        Param("limit", "limit", "Hits per query (default 10).", low=1, high=100),
        Param("globs", "glob", "Path glob(s) to include; '!GLOB' excludes."),
        Param("types", "type", "ripgrep file type(s): py, js, ts, go, rust, ..."),
        Param(
            "symbol_types",
            "symbol_type",
            "Only chunks defining this kind of symbol (one or several).",
        ),
        Param("paths", "path", "Only under this workspace-relative directory or file."),
        Param(
            "search_mode",
            "mode_search",
            "hybrid (default), semantic (meaning only) or lexical (words).",
            default="hybrid",
        ),
        Param("min_score", "min_score", "Drop hits scoring below this.", low=0, high=1),
        Param("preview", "preview", "Code shown per hit.", default="short"),
        Param("iglobs", "iglob", "Like glob, case-insensitive.", mcp=False),
        Param("types_not", "type_not", "File type(s) to exclude.", mcp=False),
        Param(
            "min_score_diff",
            "min_score_diff",
            "Drop hits more than this below the best hit.",
            mcp=False,
        ),
        Param(
            "modified_after",
            "modified_after",
            "Only files modified after this epoch time.",
            mcp=False,
        ),
        Param(
            "modified_before",
            "modified_before",
            "Only files modified before this epoch time.",
            mcp=False,
        ),
        Param(
            "context_before",
            "before_context",
            "File lines shown before each hit's preview (default 0).",
            low=0,
        ),
        Param(
            "context_after",
            "after_context",
            "File lines shown after each hit's preview (default 0).",
            low=0,
        ),
    ),
    about="""Search the workspace's code by meaning and keyword. Give `query` (one description such as "where
are failed requests retried with backoff", or an identifier such as `SessionStore`) or `queries` (several
at once). Each hit has `path`, `start_line`, `end_line` (1-based, inclusive), `score`, `symbol`,
`symbol_kind`, `language`, `matched_by`, a `preview`, and an `id` for `read_hit`. Narrow with `glob`,
`type`, `symbol_type` or `path` rather than by reading more hits. No hits is not an error.""",
)
STATUS = Operation(
    "status",
    "zgrep.index.status:run_status",
    "NoArgs",
    "Status",
    Scope.WORKSPACE,
    read_only=True,
    frontends=frozenset({MCP, HTTP}),
    present="zgrep.status:workspace_status",
    about="""What is indexed (files, chunks, languages, model, Milvus URI, last index time), whether it is fresh
against the working tree and HEAD, and the daemon's and git hooks' state: `zg status --json`.""",
)
CALLERS = Operation(
    "callers",
    "zgrep.relations.query:run_callers",
    "CallersArgs",
    "CallersResult",
    Scope.RELATIONS,
    read_only=True,
    frontends=frozenset({MCP, HTTP}),
    params=(
        Param("symbol", "symbol", DEFINITION, required=True),
        SOURCE_FILE,
        Param("limit", "limit", "At most this many callers.", low=1),
        Param("edges", "edges", EDGES),
    ),
    about="""Who references a definition: its `definitions` and the `callers` (path, line, enclosing symbol, edge
kinds, whether the reference resolved through imports). Use before changing a function's signature.
`edges` narrows the kinds of use (default: all).""",
)
TRACE = Operation(
    "trace",
    "zgrep.relations.query:run_trace",
    "TraceArgs",
    "TraceResult",
    Scope.RELATIONS,
    read_only=True,
    frontends=frozenset({MCP, HTTP}),
    params=(
        Param("entry", "entry", DEFINITION, required=True),
        Param(
            "direction",
            "direction",
            "backward: who calls it; forward: what it calls.",
            default="backward",
        ),
        Param("depth", "depth", "Levels to follow.", default=3, low=1, high=10),
        SOURCE_FILE,
        Param("edges", "edges", EDGES),
    ),
    about="""The call tree from a definition, `depth` levels backward (callers) or forward (callees); nodes say
when a reference is unresolved, a cycle, or expanded elsewhere. `edges` follows other kinds of use than
calls.""",
)
IMPACT = Operation(
    "impact",
    "zgrep.relations.impact:run_impact",
    "ImpactArgs",
    "ImpactResult",
    Scope.RELATIONS,
    read_only=True,
    frontends=frozenset({MCP, HTTP}),
    expand="zgrep.relations.changes:with_staged_targets",
    params=(
        Param(
            "targets",
            "targets",
            "What changes: PATH, PATH:SYMBOL or PATH:START-END (one or several).",
        ),
        Param(
            "staged", "staged", "Also every definition the staged change touches.", default=False
        ),
        Param("depth", "depth", "Levels of callers to follow.", default=3, low=1, high=10),
        Param("edges", "edges", EDGES),
    ),
    about="""What reaches changed definitions: the definitions and files to re-check after changing `targets` (or
the staged change), tests listed apart, `total` counting them. Call before a refactor to know what to
re-read and which tests to run. `edges` defaults to every kind but annotation.""",
)
PING = Operation("ping", "zgrep.server.daemon:ping", "NoArgs", "Pong", Scope.DAEMON, read_only=True)
SERVER_STATUS = Operation(
    "server_status",
    "zgrep.server.daemon:server_status",
    "NoArgs",
    "ServerStatus",
    Scope.DAEMON,
    read_only=True,
)
SHUTDOWN = Operation(
    "shutdown", "zgrep.server.daemon:shutdown", "NoArgs", "Stopping", Scope.DAEMON, read_only=False
)

OPERATIONS: dict[str, Operation] = {
    op.name: op
    for op in (SEARCH, INDEX, STATUS, CALLERS, TRACE, IMPACT, PING, SERVER_STATUS, SHUTDOWN)
}


def operation(name: str) -> Operation:
    """The op called `name`; ZgError(UNKNOWN_OP) when there is none."""
    try:
        return OPERATIONS[name]
    except KeyError:
        raise ZgError(ErrorCode.UNKNOWN_OP, f"unknown op {name!r}") from None


def job_operation() -> Operation:
    """The op the daemon's job runner runs (for index requests, refreshes before a read and the
    watcher's edits)."""
    return next(op for op in OPERATIONS.values() if op.job is not None)


def handler(op: Operation) -> Callable[..., Any]:
    """The function serving `op`, imported on first use."""
    return resolve(op.handler)


def resolve(target: str) -> Callable[..., Any]:
    """The function a "module:function" string names, imported now."""
    module, _, function = target.partition(":")
    import importlib

    found: Callable[..., Any] = getattr(importlib.import_module(module), function)
    return found
