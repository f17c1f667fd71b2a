"""What the MCP server and the HTTP API may ask of one workspace, each answer the CLI's `--json`
document.

Operations go through `server.client.call` (the daemon when it answers, in-process otherwise), each
a method built from its row in `zgrep.service`'s table (what MCP's tools and HTTP's routes call
too); slices through `zg read`'s reader, decision records through the ADR library `zg adr` uses: no
feature is implemented twice. Failures raise FrontendError carrying the CLI's one-line message."""

from __future__ import annotations

import functools
import inspect
import posixpath
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NotRequired, TypedDict, cast, get_type_hints

from zgrep import telemetry
from zgrep.cli.output import with_mode
from zgrep.cli.read import ReadRefused, file_slice
from zgrep.config import Config, ConfigError
from zgrep.contracts import Args, JSONObject, SearchResult
from zgrep.server import protocol
from zgrep.server.client import ClientError
from zgrep.service import OPERATIONS, SEARCH, ErrorCode, Operation, Scope, ZgError, resolve
from zgrep.progress import Progress

READ_TEXT_MAX_BYTES = 256 * 1024
"""The most text one MCP `read`/`read_hit` or HTTP `/read` returns; the rest is a further call away."""


class FrontendError(ZgError):
    """A request refused or failed; `str()` is the line `zg` would print on stderr."""


class FileText(TypedDict):
    """Lines of a workspace file (`Workspace.read`); `truncated` and `note` when the size limit cut
    them."""

    path: str
    start_line: int
    end_line: int
    total_lines: int
    text: str
    truncated: NotRequired[bool]
    note: NotRequired[str]


def _bad(message: str) -> FrontendError:
    return FrontendError(ErrorCode.BAD_REQUEST, f"zg: {message}")


def as_list(value: str | Sequence[str] | None) -> list[str]:
    """A repeatable option given once (a string) or several times (a list)."""
    if value is None:
        return []
    return [value] if isinstance(value, str) else list(value)


def kinds(op: Operation) -> dict[str, frozenset[type]]:
    """The JSON kinds of each of `op`'s contract arguments besides null (`protocol.kinds`)."""
    return {name: protocol.kinds(kind) for name, kind in get_type_hints(op.args).items()}


def _value(kind: frozenset[type], value: Any) -> Any:
    """A front end's value as the contract takes it: a list argument given one value or several is a
    list, None when it is empty (one that also takes a string, as `edges` does, as given)."""
    return (as_list(value) or None) if kind == {list} else value


def arguments(op: Operation, given: dict[str, Any]) -> Args:
    """`op`'s contract arguments from the values of its front-end parameters by `Param.name` (MCP's
    tool arguments, HTTP's query parameters): an absent one takes its default; list values sharing a
    key (MCP's `query` and `queries`) join in table order."""
    kind = kinds(op)
    args: JSONObject = {}
    for param in op.params:
        value = given.get(param.name, param.default)
        if param.one and not value:
            value = None
        if value is None and param.key in args:
            continue
        if kind[param.key] == {list} and param.key in args:
            value = cast("list[str]", args[param.key] or []) + as_list(value)
        args[param.key] = _value(kind[param.key], value)
    return cast(Args, args)  # keyed by the contract's names (`Param.key`)


def signature(op: Operation) -> inspect.Signature:
    """The `Workspace` method of `op`: its contract's arguments in table order, each with its first
    default (and `on_progress` for an op that reports progress)."""
    params = [inspect.Parameter("self", inspect.Parameter.POSITIONAL_ONLY)]
    for param in op.params:
        if param.key not in {p.name for p in params}:
            params.append(
                inspect.Parameter(
                    param.key, inspect.Parameter.POSITIONAL_OR_KEYWORD, default=param.default
                )
            )
    if op.progress:
        params.append(
            inspect.Parameter("on_progress", inspect.Parameter.KEYWORD_ONLY, default=None)
        )
    return inspect.Signature(params)


@functools.cache
def _method(op: Operation) -> Callable[..., JSONObject]:
    shape, kind = signature(op), kinds(op)

    def method(self: Workspace, *given: Any, **named: Any) -> JSONObject:
        bound = shape.bind(self, *given, **named)
        bound.apply_defaults()
        values = dict(bound.arguments)
        del values["self"]
        progress = values.pop("on_progress", None)
        return self.run(
            op,
            cast(Args, {key: _value(kind[key], value) for key, value in values.items()}),
            progress,
        )

    method.__name__ = method.__qualname__ = op.name
    method.__doc__ = op.about
    method.__signature__ = shape  # type: ignore[attr-defined]
    return method


class Workspace:
    """One workspace as a front end sees it; `frontend` names it in telemetry ("mcp", "http")."""

    def __init__(self, root: Path, cfg: Config, frontend: str) -> None:
        self.root = root
        self.cfg = cfg
        self.frontend = frontend

    # --- the operations table ------------------------------------------------------------------------

    def call(self, op: Operation, args: Args, on_progress: Progress | None = None) -> JSONObject:
        """`op`'s result with `mode` added as `--json` places it; FrontendError with the CLI's line."""
        try:  # (calls run concurrently: the daemon, or dispatch's direct mode, lets reads pass an index job)
            result, used = telemetry.recorded_call(
                self.cfg, op.name, str(self.root), args, self.cfg.mode, self.frontend, on_progress
            )
        except ClientError as exc:
            raise FrontendError(exc.code, f"zg: {exc}") from None
        # the result's values and a mode
        return cast(JSONObject, with_mode(result, used, lead=op.mode_leads))

    def run(self, op: Operation, args: Args, on_progress: Progress | None = None) -> JSONObject:
        """`op` as a front end serves it, `args` named as its contract names them: refused, expanded
        (`impact` with `staged` adds the staged hunks' targets, as `zg impact --staged` does) and
        presented (`status` adds the daemon's and the hooks' state) as its row says."""
        if op.refuse is not None and (why := op.refuse(args)):
            raise _bad(why)
        if op.expand is not None:
            try:
                args = resolve(op.expand)(self.root, args)
            except ZgError as exc:
                raise FrontendError(exc.code, f"zg: {exc}") from None
        result = self.call(op, args, on_progress)
        return resolve(op.present)(self.root, result) if op.present is not None else result

    def __getattr__(self, name: str) -> Callable[..., JSONObject]:
        """`search`, `index`, `status`, `callers`, `trace`, `impact`: each op a front end serves,
        its arguments those of its table row by their contract names (`Workspace.search(queries,
        limit, globs, ...)`)."""
        op = OPERATIONS.get(name)
        if op is None or not op.frontends or name.startswith("_"):
            raise AttributeError(name)
        return functools.partial(_method(op), self)

    def relations(self, op: Operation, args: Args) -> JSONObject:
        """A relations op (`zg callers`, `trace`, `impact` `--json`) with `args` named as its
        contract names them."""
        if op.scope is not Scope.RELATIONS:
            raise _bad(f"{op.name} is not a relations operation")
        return self.run(op, args)

    # --- files ---------------------------------------------------------------------------------------

    def read(self, location: str, start: int | None = None, end: int | None = None) -> FileText:
        """Lines of `PATH[:START[-END]]` (or of PATH from `start` to `end`, 1-based and inclusive,
        when either is given), confined to the workspace exactly as `zg read` is."""
        if start or end:
            location += f":{start or 1}-{end or ''}"
        try:
            rel, lines, first, last = file_slice(self.root, location)
        except ReadRefused as exc:
            raise _bad(str(exc)) from None
        out: list[str] = []
        size, end = 0, first - 1
        for line in lines[first - 1 : last]:
            size += len(line.encode("utf-8", "replace")) + 1
            if size > READ_TEXT_MAX_BYTES and out:
                break
            out.append(line + "\n")
            end += 1
        doc: FileText = {
            "path": posixpath.normpath(rel),
            "start_line": first,
            "end_line": end,
            "total_lines": len(lines),
            "text": "".join(out),
        }
        if end < last:
            doc["truncated"] = True
            doc["note"] = (
                f"zg: cut at line {end}: a read returns at most {READ_TEXT_MAX_BYTES // 1024} KiB; "
                f"read again from start={end + 1}"
            )
        return doc

    # --- decision records ----------------------------------------------------------------------------

    def _adrs(self) -> tuple[Any, Any]:
        from zgrep.adr.settings import load_settings
        from zgrep.adr.store import load
        from zgrep.adr.trees import WorkTree

        try:
            settings = load_settings(self.root)
            return settings, load(WorkTree(settings.root), settings.dir)
        except (ConfigError, ZgError, ValueError) as exc:  # (UnsafeRead is a ValueError)
            raise FrontendError(ErrorCode.CONFIG, f"zg adr: error: {exc}") from None

    def adr_constraints(self, paths: list[str] | None = None) -> dict[str, Any]:
        """The live ADRs governing `paths` (`zg adr for PATH --json`), or every live ADR with
        constraints."""
        from zgrep.adr.check import Governing, governing

        _, adrs = self._adrs()
        rels = {posixpath.normpath(p.replace("\\", "/")).lstrip("/") for p in paths or []}
        if rels:
            found = governing(adrs, rels)
        else:
            found = [
                Governing(a)
                for a in sorted(adrs.adrs, key=lambda a: a.id)
                if a.live and a.constraints
            ]
        return {"root": str(self.root), "paths": sorted(rels), "adrs": [g.to_json() for g in found]}

    def adr_search(self, query: str, limit: int = 10) -> dict[str, Any]:
        """`zg adr search QUERY --json`: the normal search over ADR and spec/plan documents,
        labelled."""
        from zgrep.adr.search import label_hits, search_args

        settings, adrs = self._adrs()
        if not query.strip():
            raise _bad("give a query: what the decision is about")
        result = self.call(SEARCH, search_args(settings, query, limit))
        found = cast(SearchResult, result)
        hits = label_hits(settings, adrs, found.get("hits", []), None)
        return {
            "query": query,
            "root": str(settings.root),
            "mode": result["mode"],
            "took_ms": found.get("took_ms"),
            "hits": hits,
        }

    def adr_check(self, paths: list[str] | None = None) -> dict[str, Any]:
        """`zg adr check --json` over the working copy (or `paths`): problems and governing ADRs;
        never fixes."""
        from zgrep.adr.report import run_check
        from zgrep.adr.trees import UnsafeRead

        settings, _ = self._adrs()
        try:
            return run_check(settings, False, paths or None, False).to_json()
        except UnsafeRead as exc:
            raise FrontendError(ErrorCode.BAD_REQUEST, f"zg adr: error: {exc}") from None
