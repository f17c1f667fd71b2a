"""`zg adr check`: validate every record, resolve live anchors, report the ADRs a change touches."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from zgrep.adr.anchors import outside_repo, resolve
from zgrep.adr.model import Adr, Anchor
from zgrep.adr.store import AdrSet, anchor_covers


@dataclass
class Problem:
    """One finding, located at an ADR file line."""

    code: str
    file: str
    line: int
    message: str
    adr: str = ""
    anchor: Anchor | None = None
    severity: str = "error"
    hint: str = ""
    found: tuple[int, int] | None = None

    def render(self) -> str:
        """`file:line: [severity] ADR-x: message` plus the hint on its own line."""
        who = f"{self.adr}: " if self.adr else ""
        text = f"{self.file}:{self.line}: {self.severity}: {who}{self.message}"
        return text + (f"\n    {self.hint}" if self.hint else "")

    def to_json(self) -> dict[str, Any]:
        """JSON-ready view."""
        return {
            "code": self.code,
            "severity": self.severity,
            "adr": self.adr,
            "file": self.file,
            "line": self.line,
            "anchor": self.anchor.to_yaml() if self.anchor else None,
            "message": self.message,
            "hint": self.hint,
        }


STRICT_FIELDS = (("id", "ADR-NNNN"), ("code_anchors", "[]"))


def validate_records(adrs: AdrSet, strict: bool = False) -> list[Problem]:
    """Front matter, unique ids, supersession links both ways, no cycles, paths inside the repo;
    `strict`: every record also writes zg's own fields (not inferred from its file name or format).
    """
    out = [
        Problem(err.code, path, err.line, str(err), severity=err.severity)
        for path, err in adrs.errors
    ]
    if strict:
        out += [
            Problem(
                f"strict_{key}",
                adr.path,
                1,
                f"`{key}` is not written in the record ({adr.format} format)",
                adr.id,
                hint=f"run: zg adr import (or add `{key}: {example}`)",
            )
            for adr in [*adrs.adrs, *adrs.unnamed]
            for key, example in STRICT_FIELDS
            if key not in adr.declared
        ]
    by_id: dict[str, list[Adr]] = defaultdict(list)
    for adr in adrs.adrs:
        by_id[adr.id].append(adr)
    for adr_id, group in by_id.items():
        if len(group) > 1:
            for adr in group:
                others = ", ".join(o.path for o in group if o is not adr)
                out.append(
                    Problem(
                        "duplicate_id",
                        adr.path,
                        adr.line_of("id"),
                        f"duplicate id {adr_id} (also used by {others})",
                        adr_id,
                        hint="give each ADR its own id (zg adr new numbers them for you)",
                    )
                )
    ids = set(by_id)
    for adr in [*adrs.adrs, *adrs.unnamed]:
        if adr.id:
            out += _link_problems(adr, by_id, ids)
        for anchor in adr.anchors:
            if outside_repo(anchor.path):
                out.append(
                    Problem(
                        "anchor_outside",
                        adr.path,
                        adr.line_of_anchor(anchor),
                        f"anchor {anchor.path!r} is outside the repository (use a repo-relative path)",
                        adr.id,
                        anchor,
                    )
                )
    out += _cycles(adrs.adrs, ids)
    return out


def _link_problems(adr: Adr, by_id: dict[str, list[Adr]], ids: set[str]) -> list[Problem]:
    out = [
        *_one_way_links(
            adr,
            by_id,
            ids,
            "superseded_by",
            "supersedes",
            lambda other: f"add {adr.id} to `supersedes` of {other} ({by_id[other][0].path})",
        ),
        *_one_way_links(
            adr,
            by_id,
            ids,
            "supersedes",
            "superseded_by",
            lambda other: f"run: zg adr update {other} --superseded-by {adr.id}",
        ),
    ]
    out += [
        Problem(
            "unknown_link",
            adr.path,
            adr.line_of(attr),
            f"{attr} names {other}, which does not exist",
            adr.id,
        )
        for attr in ("amends", "amended_by")
        for other in getattr(adr, attr)
        if other not in ids
    ]
    if adr.status == "superseded" and not adr.superseded_by:
        out.append(
            Problem(
                "no_successor",
                adr.path,
                adr.line_of("status"),
                "status is superseded but `superseded_by` names no successor",
                adr.id,
                hint=f"run: zg adr update {adr.id} --superseded-by ADR-NNNN",
            )
        )
    if adr.superseded_by and adr.status != "superseded":
        out.append(
            Problem(
                "status_mismatch",
                adr.path,
                adr.line_of("status"),
                f"has superseded_by {', '.join(adr.superseded_by)} but status is {adr.status}",
                adr.id,
                hint="set status: superseded, or remove superseded_by",
            )
        )
    return out


def _one_way_links(
    adr: Adr,
    by_id: dict[str, list[Adr]],
    ids: set[str],
    attr: str,
    back: str,
    hint: Callable[[str], str],
) -> list[Problem]:
    """Links in `adr.<attr>` that name no ADR, or whose target does not link back in `<back>`."""
    out = []
    line = adr.line_of(attr)
    for other in getattr(adr, attr):
        if other not in ids:
            out.append(
                Problem(
                    "unknown_link",
                    adr.path,
                    line,
                    f"{attr} names {other}, which does not exist",
                    adr.id,
                )
            )
        elif adr.id not in getattr(by_id[other][0], back):
            verb = "list" if back == "supersedes" else "name"
            out.append(
                Problem(
                    "link_mismatch",
                    adr.path,
                    line,
                    f"{attr} {other}, but {other} does not {verb} {adr.id} in `{back}`",
                    adr.id,
                    hint=hint(other),
                )
            )
    return out


def _cycles(adrs: list[Adr], ids: set[str]) -> list[Problem]:
    succ: dict[str, set[str]] = defaultdict(set)
    for adr in adrs:
        succ[adr.id] |= {s for s in adr.superseded_by if s in ids}
        for old in adr.supersedes:
            if old in ids:
                succ[old].add(adr.id)
    first = {adr.id: adr for adr in reversed(adrs)}
    out, seen_cycles, done = [], set(), set()

    def visit(node: str, stack: list[str]) -> None:
        if node in stack:
            cycle = stack[stack.index(node) :]
            key = frozenset(cycle)
            if key not in seen_cycles:
                seen_cycles.add(key)
                start = min(cycle)
                i = cycle.index(start)
                ring = cycle[i:] + cycle[:i] + [start]
                adr = first[start]
                out.append(
                    Problem(
                        "supersession_cycle",
                        adr.path,
                        adr.line_of("supersedes"),
                        f"supersession cycle: {' -> '.join(ring)}",
                        start,
                        hint="an ADR cannot (indirectly) supersede itself: fix supersedes/superseded_by",
                    )
                )
            return
        if node in done:
            return
        for nxt in sorted(succ[node]):
            visit(nxt, [*stack, node])
        done.add(node)

    for adr_id in sorted(succ):
        visit(adr_id, [])
    return out


HINT = (
    "fix: update the anchor (zg adr update {id} --remove-anchor '{spec}' --add-anchor NEW), "
    "supersede the ADR (zg adr update {id} --superseded-by ADR-NNNN), or run: zg adr check --fix"
)


def check_anchors(adrs: AdrSet, tree: Any, scope: set[str] | None) -> list[Problem]:
    """Resolve anchors of live ADRs; `scope` limits it to anchors on those paths and ADRs in those
    files."""
    out = []
    for adr in [*adrs.adrs, *adrs.unnamed]:
        if not adr.live:
            continue
        whole = scope is None or adr.path in scope
        for anchor in adr.anchors:
            if outside_repo(anchor.path):
                continue
            if not whole and not any(anchor_covers(anchor.path, p) for p in scope or ()):
                continue
            res = resolve(anchor, tree)
            if res.code == "ok":
                continue
            hint = (
                HINT.format(id=adr.id, spec=anchor.spec())
                if res.severity == "error"
                else "run: zg adr check --fix"
            )
            out.append(
                Problem(
                    res.code,
                    adr.path,
                    adr.line_of_anchor(anchor),
                    f"anchor {anchor.spec()}: {res.message}",
                    adr.id,
                    anchor,
                    res.severity,
                    hint,
                    res.found,
                )
            )
    return out


@dataclass
class Governing:
    """A live ADR that anchors some of the changed paths."""

    adr: Adr
    paths: list[str] = field(default_factory=list)
    symbols: list[str] = field(default_factory=list)
    # `PATH:START-END` of each line-range anchor concerned
    lines: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        """JSON-ready view."""
        return {
            **self.adr.summary(),
            "files": self.paths,
            "symbols": self.symbols,
            "lines": self.lines,
            "constraints": self.adr.constraints,
        }


def governing(adrs: AdrSet, paths: set[str]) -> list[Governing]:
    """Live ADRs anchoring any of `paths`, with the files and symbols concerned."""
    out = []
    for adr in adrs.adrs:
        if not adr.live:
            continue
        hits = [(p, a) for a in adr.anchors for p in sorted(paths) if anchor_covers(a.path, p)]
        if hits:
            out.append(
                Governing(
                    adr,
                    sorted({p for p, _ in hits}),
                    sorted({a.symbol for _, a in hits if a.symbol}),
                    sorted({f"{a.path}:{a.lines[0]}-{a.lines[1]}" for _, a in hits if a.lines}),
                )
            )
    return out
