"""The typed arguments and results of the operations (`zgrep.service`): JSON objects on the wire.

Standard library only (the thin client imports it). Fields are only ever added, never renamed.
"""

from __future__ import annotations

from typing import TypeAlias, TypedDict

from zgrep.vocab import Direction, HitKind, Preview, Refresh, SearchMode

Setting = str | int | float | bool | list[str] | None
JSONValue: TypeAlias = "str | int | float | bool | None | list[JSONValue] | dict[str, JSONValue]"
# any JSON object, as a request or a reply carries it
JSONObject: TypeAlias = "dict[str, JSONValue]"


class CommonArgs(TypedDict, total=False):
    """What the client adds to every workspace request."""

    # settings from flags and ZG_* variables, applied over the workspace's
    config: dict[str, Setting]
    progress: bool  # stream progress messages before the final response


class NoArgs(CommonArgs, total=False):
    """An op that takes no arguments of its own (status, ping, server_status, shutdown)."""


class SearchArgs(CommonArgs, total=False):
    queries: list[str]
    limit: int | None
    globs: list[str] | None
    iglobs: list[str] | None
    types: list[str] | None
    types_not: list[str] | None
    symbol_types: list[HitKind] | None
    paths: list[str] | None
    min_score: float | None
    min_score_diff: float | None
    preview: Preview | None
    search_mode: SearchMode | None
    refresh: Refresh | None
    no_index: bool | None
    modified_after: float | None  # epoch seconds
    modified_before: float | None
    context_before: int | None  # -B: file lines shown before each hit's preview
    context_after: int | None  # -A: after it
    yes: bool | None  # index a first-time tree outside git of more than 2,000 files


class SearchHit(TypedDict):
    """One located chunk (SPEC's JSON contract)."""

    path: str
    start_line: int
    end_line: int
    score: float
    symbol: str | None
    symbol_kind: str | None
    scope: str | None
    language: str | None
    matched_by: list[str]
    preview: str
    preview_start_line: (
        int  # the file line `preview` starts at (the matched definition; -B moves it up)
    )


class SearchGroup(TypedDict):
    query: str
    hits: list[SearchHit]


class SearchResult(TypedDict, total=False):
    """One query: `query` and `hits`; several: `groups` and `distinct_locations` (the client adds
    `mode`)."""

    query: str
    root: str
    took_ms: float
    hits: list[SearchHit]
    groups: list[SearchGroup]
    distinct_locations: int


class IndexArgs(CommonArgs, total=False):
    full: bool | None
    dry_run: bool | None
    paths: list[str] | None  # workspace-relative; None = the whole tree


class IndexReport(TypedDict, total=False):
    root: str
    changed: int
    deleted: int
    unchanged: int
    skipped: dict[str, int]
    ignored: dict[str, int]  # paths each ignore layer kept out (a directory counts once)
    warnings: list[str]  # ignore-file lines skipped (git never matches them), one each
    dry_run: bool
    repaired: bool
    repair_reason: str
    changed_paths: list[str]  # dry runs only
    deleted_paths: list[str]
    chunks: int
    embedded: int
    files: int
    generated: int  # indexed files written by a program (generated code, minified code, dumps)
    took_s: float
    phases: dict[str, float]  # seconds per step of the run (worker steps summed over workers)


class Status(TypedDict, total=False):
    """The index's own status (an unindexed workspace has the first five fields and milvus_engine
    only)."""

    root: str
    indexed: bool
    files: int
    chunks: int
    languages: dict[str, int]
    model: str | None
    dim: int | None
    milvus_uri: str | None
    milvus_engine: str  # which engine serves it: "milvus-lite 2.5.1 (native)", "Milvus server"
    collection: str | None
    last_indexed: float | None
    root_hash: str | None
    indexed_commit: str | None
    head_commit: str | None
    stale_vs_head: bool
    changed_files: int | None
    fresh: bool
    problem: str | None
    run_unfinished: bool
    # {"tracked", "indexed"}: files git tracks in a parsed language, and indexed
    code_files: dict[str, int] | None


class CallersArgs(CommonArgs, total=False):
    symbol: str
    source_file: str | None
    limit: int | None
    # edge kinds (call, reference, import, annotation, decorator, inherit, all; a
    edges: list[str] | str | None
    # list or one comma-separated string); None = all


class TraceArgs(CommonArgs, total=False):
    entry: str
    direction: Direction | None
    depth: int | None
    source_file: str | None
    edges: list[str] | str | None  # edge kinds to follow; None = call


class ImpactArgs(CommonArgs, total=False):
    targets: list[str]  # PATH, PATH:SYMBOL or PATH:START-END
    staged: bool  # targets come from the staged change: files the relations do not know are skipped
    depth: int | None
    edges: list[str] | str | None  # None = every kind but annotation


class DefinitionDoc(TypedDict):
    """A definition as JSON: `callers`' definitions, `impact`'s changed ones, and the base of the
    entries below."""

    path: str
    start_line: int
    end_line: int
    symbol: str  # "" = module code
    scope: str | None
    kind: str


class Caller(DefinitionDoc):
    """A definition (or module code) that uses the symbol, and how."""

    line: int  # the using line
    resolved: bool
    via: str  # how the use was resolved (import, scope, unknown_receiver, ...)
    targets: list[str]  # the files of the definitions it uses
    edge: str  # the strongest of `edges`
    edges: list[str]


class TraceNode(TypedDict, total=False):
    """A trace tree's node: a definition (DefinitionDoc's fields) with the line and edge that
    reached it (the roots have none), its children and marks; or, for an ambiguous entry, `symbol`,
    `ambiguous` and one child per definition."""

    path: str
    start_line: int
    end_line: int
    symbol: str
    scope: str | None
    kind: str
    line: int
    resolved: bool
    via: str
    edge: str
    children: list[TraceNode]
    seen: bool  # expanded elsewhere in the tree
    truncated: bool  # the tree reached its node limit here
    cycle: bool  # an ancestor of itself
    ambiguous: bool


class Impacted(DefinitionDoc):
    """A definition that reaches a changed one."""

    line: int
    edge: str
    distance: int  # uses between it and the change
    reaches: str  # the qualified name of the definition it reaches
    resolved: bool
    test: bool  # in test code: listed under `tests`


class CallersResult(TypedDict):
    root: str
    symbol: str
    source_file: str | None
    definitions: list[DefinitionDoc]
    callers: list[Caller]
    total: int


class TraceResult(TypedDict):
    root: str
    entry: str
    direction: str
    depth: int
    edges: list[str]
    tree: TraceNode | None


class ImpactResult(TypedDict):
    root: str
    targets: list[str]
    depth: int
    edges: list[str]
    changed: list[DefinitionDoc]
    impacted: list[Impacted]  # not tests
    tests: list[Impacted]
    files: list[str]
    test_files: list[str]
    total: int
    truncated: bool  # more definitions reach the change than the 500 listed
    skipped: list[str]  # staged files the relations do not know (not indexed yet, or not code)


class Pong(TypedDict):
    pong: bool
    pid: int
    version: str


class HeldWorkspace(TypedDict):
    """A workspace the daemon holds, as `zg server status` lists it."""

    root: str
    idle_s: float
    active_requests: int
    job_running: bool
    job_queued: bool
    jobs_done: int
    watching: bool
    waiting_requests: int
    job_silent_s: float
    busy: bool  # its index job has been silent for the stall limit


class Models(TypedDict):
    """The embedding models the daemon has loaded."""

    models: list[str]
    model_instances: int


class ServerStatus(TypedDict):
    pid: int
    endpoint: str
    version: str
    protocol: int
    started: float
    uptime_s: float
    workspaces: list[HeldWorkspace]
    models: list[str]
    model_instances: int
    requests_served: int
    jobs_running: int
    jobs_queued: int
    idle_timeout_s: float
    max_rss_mb: float
    started_by: str  # "command" (zg server on / run) or "autostart" (an auto-mode search)


class Stopping(TypedDict):
    stopping: bool
    pid: int


class Args(SearchArgs, IndexArgs, CallersArgs, TraceArgs, ImpactArgs, total=False):
    """Any op's arguments: an argument's name means one kind of value whichever op a request names
    (`zgrep.server.protocol.arg_checks`)."""
