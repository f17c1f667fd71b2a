"""Markdown: one chunk per #, ## or ### section (front matter stays in the first chunk)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from zgrep.chunking.windows import Lines, Piece, split_range

_HEADING = re.compile(r"^ {0,3}(#{1,3})[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")


@dataclass(frozen=True)
class Heading:
    """A section heading: its line, level (1-3) and text."""

    line: int
    level: int
    text: str


def _front_matter_end(lines: Lines) -> int:
    """Last line of YAML front matter at the top, or 0 when there is none."""
    if lines.count < 2 or lines.line(1).rstrip() != "---":
        return 0
    for number in range(2, lines.count + 1):
        if lines.line(number).rstrip() in ("---", "..."):
            return number
    return 0


def headings(lines: Lines) -> list[Heading]:
    """ATX headings of levels 1-3 outside front matter and fenced code blocks."""
    found: list[Heading] = []
    fence = ""
    for number in range(_front_matter_end(lines) + 1, lines.count + 1):
        text = lines.line(number)
        opener = _FENCE.match(text)
        if opener:
            marker = opener.group(1)
            if not fence:
                fence = marker
            elif marker[0] == fence[0] and len(marker) >= len(fence):
                fence = ""
            continue
        match = None if fence else _HEADING.match(text)
        if match and match.group(2).strip():
            found.append(Heading(number, len(match.group(1)), match.group(2).strip()))
    return found


def sections(lines: Lines) -> list[tuple[Heading, int]]:
    """Each heading with the last line of its section (up to the next heading of its level)."""
    found = headings(lines)
    result: list[tuple[Heading, int]] = []
    stack: list[Heading] = []
    ends: dict[int, int] = {}
    for heading in found:
        while stack and stack[-1].level >= heading.level:
            ends[stack.pop().line] = heading.line - 1
        stack.append(heading)
    for heading in found:
        end = ends.get(heading.line, lines.count)
        trimmed = lines.trim(heading.line, end)
        result.append((heading, trimmed[1] if trimmed else heading.line))
    return result


def markdown_pieces(lines: Lines) -> list[Piece]:
    """Heading sections (large ones windowed), each with its parent headings as outline."""
    found = headings(lines)
    first = found[0].line if found else lines.count + 1
    if found and lines.trim(_front_matter_end(lines) + 1, first - 1) is None:
        starts: list[tuple[int, Heading | None]] = [(1, found[0])]
    else:
        starts = [(1, None)] + ([(found[0].line, found[0])] if found else [])
    starts.extend((h.line, h) for h in found[1:])
    pieces: list[Piece] = []
    parents: list[Heading] = []
    for index, (start, heading) in enumerate(starts):
        end = starts[index + 1][0] - 1 if index + 1 < len(starts) else lines.count
        if heading is not None:
            parents = [p for p in parents if p.level < heading.level]
        outline = tuple(p.line for p in parents)
        if heading is not None:
            parents.append(heading)
        trimmed = lines.trim(start, end)
        if trimmed is None:
            continue
        symbol = heading.text if heading is not None else ""
        for number, (low, high) in enumerate(split_range(lines, *trimmed)):
            own = outline + (heading.line,) if number and heading is not None else outline
            pieces.append(Piece(low, high, symbol, "module", "", weight=1, outline=own))
    return pieces
