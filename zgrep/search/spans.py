"""Merge the ranked chunks of one file that overlap or adjoin into one span (one hit, one slot); a
chunk that comes too late to merge stays apart, or out when it touches a span (its place is taken).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from zgrep.types import ChunkFields

# gap_blank(path, first, last): whether lines first..last of the indexed file are all blank
GapCheck = Callable[[str, int, int], bool]


@dataclass
class Span:
    """Lines of one file from ranked chunks; the first (best) chunk gives its label (`fields`).
    `lines` is None for a chunk whose stored content lacks some of its lines (clipped): it never
    merges."""

    fields: ChunkFields
    score: float
    routes: set[str]
    start: int
    end: int
    lines: dict[int, str] | None

    @property
    def path(self) -> str:
        return str(self.fields["path"])

    @property
    def content(self) -> str:
        if self.lines is None:
            return str(self.fields.get("content") or "")
        return "\n".join(self.lines[n] for n in range(self.start, self.end + 1))


def span_of(fields: ChunkFields, score: float, routes: list[str]) -> Span:
    """A chunk as a span."""
    start, end = int(fields["start_line"]), int(fields["end_line"])
    rows = str(fields.get("content") or "").split("\n")
    lines = dict(zip(range(start, end + 1), rows)) if len(rows) == end - start + 1 else None
    return Span(fields, score, set(routes), start, end, lines)


def add(spans: list[Span], new: Span, gap_blank: GapCheck) -> None:
    """Append `new`, or merge it into the spans of its file it overlaps or adjoins (across blank
    lines only), joining the spans it bridges into the best-placed one."""
    joined = [s for s in spans if s.path == new.path and _joins(s, new, gap_blank)]
    if not joined:
        spans.append(new)
        return
    keep = joined[0]
    assert keep.lines is not None and new.lines is not None
    for other in [*joined[1:], new]:
        keep.lines.update({n: t for n, t in (other.lines or {}).items() if n not in keep.lines})
        keep.start, keep.end = min(keep.start, other.start), max(keep.end, other.end)
        keep.routes |= other.routes
        keep.score = max(keep.score, other.score)
        if other is not new:
            spans.remove(other)
    for number in range(keep.start, keep.end + 1):
        keep.lines.setdefault(number, "")  # only blank gaps are left (checked by _joins)


def add_apart(spans: list[Span], new: Span, gap_blank: GapCheck) -> None:
    """Append `new` as a span of its own unless it overlaps or adjoins one of `spans` (then it is
    left out): no span changes, so the spans before it stay what they were."""
    if not any(s.path == new.path and _touches(s, new, gap_blank) for s in spans):
        spans.append(new)


def _touches(a: Span, b: Span, gap_blank: GapCheck) -> bool:
    low, high = (a, b) if a.start <= b.start else (b, a)
    return high.start <= low.end + 1 or gap_blank(a.path, low.end + 1, high.start - 1)


def _joins(a: Span, b: Span, gap_blank: GapCheck) -> bool:
    return a.lines is not None and b.lines is not None and _touches(a, b, gap_blank)
