"""Search filters: which indexed paths and chunks a query may return, as a Milvus expression."""

from __future__ import annotations

from dataclasses import dataclass
from collections.abc import Iterable

from zgrep.contracts import SearchArgs
from zgrep.filetypes import GlobFilter, path_has_type, type_globs
from zgrep.service import ErrorCode, FixedCodeError
from zgrep.store.expr import in_list
from zgrep.vocab import HIT_KINDS

MAX_PATHS_IN_EXPR = 4000


class FilterError(FixedCodeError, ValueError):
    """A filter argument is invalid (unknown type, symbol kind, ...)."""

    CODE = ErrorCode.BAD_REQUEST


@dataclass
class SearchFilter:
    """Parsed filters of one search request."""

    globs: list[str]
    iglobs: list[str]
    types: list[str]
    types_not: list[str]
    paths: list[str]
    symbol_types: list[str]
    modified_after: float | None
    modified_before: float | None
    glob_filter: GlobFilter | None = None

    @classmethod
    def from_args(cls, args: SearchArgs) -> SearchFilter:
        """Validate the filter fields of search args."""
        f = cls(
            globs=list(args.get("globs") or []),
            iglobs=list(args.get("iglobs") or []),
            types=list(args.get("types") or []),
            types_not=list(args.get("types_not") or []),
            paths=[
                p.rstrip("/") for p in args.get("paths") or [] if p.rstrip("/") not in ("", ".")
            ],
            symbol_types=list(args.get("symbol_types") or []),
            modified_after=args.get("modified_after"),
            modified_before=args.get("modified_before"),
        )
        for name in f.types + f.types_not:
            try:
                type_globs(name)
            except ValueError as exc:
                raise FilterError(str(exc)) from None
        for kind in f.symbol_types:
            if kind not in HIT_KINDS:
                raise FilterError(
                    f"unknown symbol type {kind!r}; choose from {', '.join(HIT_KINDS)}"
                )
        if f.globs or f.iglobs:
            try:
                f.glob_filter = GlobFilter(f.globs, f.iglobs)
            except ValueError as exc:
                raise FilterError(str(exc)) from None
        return f

    def admits_path(self, path: str) -> bool:
        """Whether a workspace-relative path passes the path-level filters."""
        if self.paths and not any(path == p or path.startswith(p + "/") for p in self.paths):
            return False
        if self.types and not any(path_has_type(path, t) for t in self.types):
            return False
        if any(path_has_type(path, t) for t in self.types_not):
            return False
        return self.glob_filter is None or self.glob_filter.matches(path)

    def expression(self, indexed_paths: Iterable[str]) -> tuple[str, bool, bool]:
        """(Milvus expr, whether anything can match, whether hits must still pass `admits_path`).

        Path filters become `path in [...]` when that list is short; past MAX_PATHS_IN_EXPR
        admitted files they are applied to the candidates instead.
        """
        clauses: list[str] = []
        post_filter = False
        all_paths = list(indexed_paths)
        if self.paths or self.types or self.types_not or self.globs or self.iglobs:
            admitted = [p for p in all_paths if self.admits_path(p)]
            if not admitted:
                return "", False, False
            if len(admitted) > MAX_PATHS_IN_EXPR:
                post_filter = True
            elif len(admitted) < len(all_paths):
                clauses.append(in_list("path", admitted))
        if self.symbol_types:
            clauses.append(_kinds_expression(self.symbol_types))
        if self.modified_after is not None:
            clauses.append(f"mtime >= {int(self.modified_after)}")
        if self.modified_before is not None:
            clauses.append(f"mtime <= {int(self.modified_before)}")
        return " and ".join(clauses), True, post_filter


def _kinds_expression(kinds: list[str]) -> str:
    """The chunks of these hit kinds: `section` and `module` tell markdown's module chunks from the
    rest."""
    parts = (
        [in_list("symbol_kind", [k for k in kinds if k not in ("module", "section")])]
        if set(kinds) - {"module", "section"}
        else []
    )
    for kind, test in (("module", "!="), ("section", "==")):
        if kind in kinds:
            parts.append(f'(symbol_kind == "module" and language {test} "markdown")')
    return "(" + " or ".join(parts) + ")"
