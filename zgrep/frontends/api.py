"""What the MCP server and the HTTP API may ask of one workspace, each answer the CLI's `--json` document.

Operations go through `server.client.call` (the daemon when it answers, in-process otherwise), slices
through `zg read`'s reader, decision records through the ADR library `zg adr` uses: no feature is
implemented twice. Failures raise FrontendError carrying the CLI's one-line message.
"""

from __future__ import annotations

import posixpath
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from zgrep import telemetry
from zgrep.cli.output import with_mode
from zgrep.cli.read import ReadRefused, file_slice
from zgrep.config import Config, ConfigError
from zgrep.server.client import ClientError
from zgrep.service import IMPACT, INDEX, SEARCH, STATUS, ErrorCode, Operation, Scope, ZgError
from zgrep.progress import Progress

READ_TEXT_MAX_BYTES = 256 * 1024
"""The most text one MCP `read`/`read_hit` or HTTP `/read` returns; the rest is a further call away."""


class FrontendError(ZgError):
    """A request refused or failed; `str()` is the line `zg` would print on stderr."""


def _bad(message: str) -> FrontendError:
    return FrontendError(ErrorCode.BAD_REQUEST, f"zg: {message}")


def as_list(value: str | Sequence[str] | None) -> list[str]:
    """A repeatable option given once (a string) or several times (a list)."""
    if value is None:
        return []
    return [value] if isinstance(value, str) else list(value)


class Workspace:
    """One workspace as a front end sees it; `frontend` names it in telemetry ("mcp", "http")."""

    def __init__(self, root: Path, cfg: Config, frontend: str) -> None:
        self.root = root
        self.cfg = cfg
        self.frontend = frontend

    # --- the operations table ------------------------------------------------------------------------

    def call(self, op: Operation, args: dict[str, Any], on_progress: Progress | None = None) -> dict[str, Any]:
        """`op`'s result with `mode` added as `--json` places it; FrontendError with the CLI's line."""
        try:  # (calls run concurrently: the daemon, or dispatch's direct mode, lets reads pass an index job)
            result, used = telemetry.recorded_call(self.cfg, op.name, str(self.root), args, self.cfg.mode,
                                                   self.frontend, on_progress)
        except ClientError as exc:
            raise FrontendError(exc.code, f"zg: {exc}") from None
        return with_mode(result, used, lead=op is not INDEX)

    def search(self, queries: list[str], limit: int | None = None, globs: str | Sequence[str] | None = None,
               types: str | Sequence[str] | None = None, symbol_types: str | Sequence[str] | None = None,
               paths: str | Sequence[str] | None = None, search_mode: str = "hybrid", min_score: float | None = None,
               preview: str = "short", *, iglobs: Sequence[str] = (), types_not: Sequence[str] = (),
               min_score_diff: float | None = None, modified_after: float | None = None,
               modified_before: float | None = None) -> dict[str, Any]:
        """`zg search --json` for these queries and filters (the CLI's flags by their argument names)."""
        args = {"queries": queries, "limit": limit, "globs": as_list(globs), "iglobs": list(iglobs),
                "types": as_list(types), "types_not": list(types_not), "symbol_types": as_list(symbol_types),
                "paths": as_list(paths), "min_score": min_score, "min_score_diff": min_score_diff, "preview": preview,
                "search_mode": search_mode, "refresh": None, "no_index": False, "modified_after": modified_after,
                "modified_before": modified_before}
        return self.call(SEARCH, args)

    def status(self) -> dict[str, Any]:
        """`zg status --json`: the index, the daemon and the hooks."""
        from zgrep.status import workspace_status

        return workspace_status(self.root, self.call(STATUS, {}))

    def index(self, paths: list[str] | None = None, full: bool = False,
              on_progress: Progress | None = None) -> dict[str, Any]:
        """`zg index --json` (of `paths` only, when given)."""
        if full and paths:
            raise _bad("--full rebuilds everything; it cannot be combined with paths")
        return self.call(INDEX, {"full": full, "dry_run": False, "paths": paths or None}, on_progress)

    def relations(self, op: Operation, args: dict[str, Any]) -> dict[str, Any]:
        """A relations op (`zg callers`, `trace`, `impact` `--json`) with `args` named as its contract names them;
        `impact` with `staged` adds the staged hunks' targets, as `zg impact --staged` does."""
        if op.scope is not Scope.RELATIONS:
            raise _bad(f"{op.name} is not a relations operation")
        if op is IMPACT and args.get("staged"):
            from zgrep.git import GitError
            from zgrep.relations.changes import staged_targets

            try:
                args = {**args, "targets": list(args.get("targets") or []) + staged_targets(self.root)}
            except GitError as exc:
                raise _bad(f"--staged needs a git repository: {exc}") from None
        return self.call(op, args)

    # --- files ---------------------------------------------------------------------------------------

    def read(self, location: str, start: int | None = None, end: int | None = None) -> dict[str, Any]:
        """Lines of `PATH[:START[-END]]` (or of PATH from `start` to `end`, 1-based and inclusive, when either is
        given), confined to the workspace exactly as `zg read` is."""
        if start or end:
            location += f":{start or 1}-{end or ''}"
        try:
            rel, lines, first, last = file_slice(self.root, location)
        except ReadRefused as exc:
            raise _bad(str(exc)) from None
        out: list[str] = []
        size, end = 0, first - 1
        for line in lines[first - 1:last]:
            size += len(line.encode("utf-8", "replace")) + 1
            if size > READ_TEXT_MAX_BYTES and out:
                break
            out.append(line + "\n")
            end += 1
        doc: dict[str, Any] = {"path": posixpath.normpath(rel), "start_line": first, "end_line": end,
                               "total_lines": len(lines), "text": "".join(out)}
        if end < last:
            doc["truncated"] = True
            doc["note"] = (f"zg: cut at line {end}: a read returns at most {READ_TEXT_MAX_BYTES // 1024} KiB; "
                           f"read again from start={end + 1}")
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
        """The live ADRs governing `paths` (`zg adr for PATH --json`), or every live ADR with constraints."""
        from zgrep.adr.check import Governing, governing

        _, adrs = self._adrs()
        rels = {posixpath.normpath(p.replace("\\", "/")).lstrip("/") for p in paths or []}
        if rels:
            found = governing(adrs, rels)
        else:
            found = [Governing(a) for a in sorted(adrs.adrs, key=lambda a: a.id) if a.live and a.constraints]
        return {"root": str(self.root), "paths": sorted(rels), "adrs": [g.to_json() for g in found]}

    def adr_search(self, query: str, limit: int = 10) -> dict[str, Any]:
        """`zg adr search QUERY --json`: the normal search over ADR and spec/plan documents, labelled."""
        from zgrep.adr.search import label_hits, search_args

        settings, adrs = self._adrs()
        if not query.strip():
            raise _bad("give a query: what the decision is about")
        result = self.call(SEARCH, search_args(settings, query, limit))
        hits = label_hits(settings, adrs, result.get("hits", []), None)
        return {"query": query, "root": str(settings.root), "mode": result["mode"], "took_ms": result.get("took_ms"),
                "hits": hits}

    def adr_check(self, paths: list[str] | None = None) -> dict[str, Any]:
        """`zg adr check --json` over the working copy (or `paths`): problems and governing ADRs; never fixes."""
        from zgrep.adr.report import run_check
        from zgrep.adr.trees import UnsafeRead

        settings, _ = self._adrs()
        try:
            return run_check(settings, False, paths or None, False).to_json()
        except UnsafeRead as exc:
            raise FrontendError(ErrorCode.BAD_REQUEST, f"zg adr: error: {exc}") from None
