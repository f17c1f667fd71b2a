"""Line bookkeeping, size limits and overlapping line windows (the fallback chunker)."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

MAX_CHUNK_LINES = 40
MAX_CHUNK_CHARS = 1600
SPLIT_OVERLAP_LINES = 4
MERGE_BELOW_LINES = 10
WINDOW_LINES = 40
WINDOW_OVERLAP_LINES = 5

_CLOSERS = re.compile(r"^\s*(end|[)\]};,]+)?\s*[;,]?\s*$")


class Lines:
    """A text's lines split on "\\n" only (as tree-sitter counts rows), 1-based."""

    def __init__(self, text: str) -> None:
        self.text = text
        parts = text.split("\n")
        if text.endswith("\n"):
            parts.pop()
        self.count = len(parts)
        self._blank = [not part.strip() for part in parts]
        self._starts: list[int] = []
        offset = 0
        for part in parts:
            self._starts.append(offset)
            offset += len(part) + 1
        self._parts = parts

    def content(self, start: int, end: int) -> str:
        """Exactly lines start..end (inclusive), without the final newline."""
        return self.text[
            self._starts[start - 1] : self._starts[end - 1] + len(self._parts[end - 1])
        ]

    def chars(self, start: int, end: int) -> int:
        """Characters in lines start..end."""
        return self._starts[end - 1] + len(self._parts[end - 1]) - self._starts[start - 1]

    def line(self, number: int) -> str:
        """One line's text."""
        return self._parts[number - 1]

    def trim(self, start: int, end: int) -> tuple[int, int] | None:
        """The range without leading/trailing blank lines; None when nothing is left."""
        while start <= end and self._blank[start - 1]:
            start += 1
        while end >= start and self._blank[end - 1]:
            end -= 1
        return (start, end) if start <= end else None

    def trivial(self, start: int, end: int) -> bool:
        """Whether lines hold only closing brackets/`end` (nothing worth its own chunk)."""
        return all(_CLOSERS.match(self._parts[i - 1]) for i in range(start, end + 1))

    def fits(self, start: int, end: int) -> bool:
        """Whether a range is within the chunk size limits."""
        return end - start + 1 <= MAX_CHUNK_LINES and self.chars(start, end) <= MAX_CHUNK_CHARS


def split_range(
    lines: Lines,
    start: int,
    end: int,
    *,
    max_lines: int = MAX_CHUNK_LINES,
    overlap: int = SPLIT_OVERLAP_LINES,
) -> list[tuple[int, int]]:
    """Cover start..end with overlapping windows of balanced size within the limits."""
    total = end - start + 1
    if total <= max_lines and lines.chars(start, end) <= MAX_CHUNK_CHARS:
        return [(start, end)]
    overlap = min(overlap, max_lines // 2)
    count = max(1, math.ceil((total - overlap) / (max_lines - overlap)))
    size = math.ceil((total + (count - 1) * overlap) / count)
    ranges: list[tuple[int, int]] = []
    low = start
    while True:
        high = min(end, low + size - 1)
        while high > low and lines.chars(low, high) > MAX_CHUNK_CHARS:
            high -= 1
        ranges.append((low, high))
        if high >= end:
            return ranges
        low = max(low + 1, high + 1 - min(overlap, (high - low + 1) // 3))


@dataclass
class Piece:
    """A chunk in the making: a line range with its symbol; `ctx` is a header line for context.

    `weight` ranks whose symbol a merged piece keeps: 0 none, 1 a value, else definition size.
    `outline` lists single lines to use as context instead (markdown parent headings).
    """

    start: int
    end: int
    symbol: str = ""
    kind: str = "module"
    scope: str = ""
    ctx: int = 0
    weight: int = 0
    mergeable: bool = False
    outline: tuple[int, ...] = ()
    merged_names: list[str] = field(default_factory=list)


def window_pieces(lines: Lines) -> list[Piece]:
    """Fallback: overlapping fixed-size line windows over the whole text."""
    trimmed = lines.trim(1, lines.count) if lines.count else None
    if trimmed is None:
        return []
    return [
        Piece(low, high)
        for low, high in split_range(
            lines, *trimmed, max_lines=WINDOW_LINES, overlap=WINDOW_OVERLAP_LINES
        )
    ]
