"""Turn a file's definition tree into chunk pieces: whole definitions when they fit, class
headers plus members when they do not, overlapping pieces for long bodies, tiny siblings merged."""

from __future__ import annotations

from collections.abc import Sequence

from zgrep.chunking.definitions import DefinitionNode, outermost_first
from zgrep.chunking.windows import MERGE_BELOW_LINES, Lines, Piece, split_range

HEADER_WEIGHT = 1 << 30  # a class header names the chunk it is merged into
# a container header this short (`module Rails`, `namespace X\n{`) leads its first member
SHORT_HEADER_LINES = 2


def code_pieces(lines: Lines, definitions: Sequence[DefinitionNode]) -> list[Piece]:
    """Pieces covering every non-blank line of a parsed file."""
    if lines.count == 0:
        return []
    return _level(lines, definitions, 1, lines.count, None)


def _level(
    lines: Lines,
    definitions: Sequence[DefinitionNode],
    first: int,
    last: int,
    owner: DefinitionNode | None,
) -> list[Piece]:
    """Pieces for one body (the file, or a class too large for one chunk)."""
    pieces: list[Piece] = []
    cursor = first
    for definition in sorted(definitions, key=lambda d: d.lead):
        if definition.end < cursor:
            continue
        lead = max(definition.lead, cursor)
        _gap(lines, cursor, lead - 1, owner, pieces)
        pieces.extend(_definition_pieces(lines, definition, lead, owner))
        cursor = definition.end + 1
    _gap(lines, cursor, last, owner, pieces)
    return _merge(lines, pieces)


def _gap(
    lines: Lines, start: int, end: int, owner: DefinitionNode | None, pieces: list[Piece]
) -> None:
    """Code between definitions: module code, or a class header/attributes."""
    trimmed = lines.trim(start, end) if start <= end else None
    if trimmed is None:
        return
    start, end = trimmed
    if pieces and lines.trivial(start, end):
        pieces[-1].end = max(pieces[-1].end, end)
        return
    ranges = split_range(lines, start, end)
    for low, high in ranges:
        mergeable = len(ranges) == 1 and high - low + 1 < MERGE_BELOW_LINES
        if owner is None:
            pieces.append(Piece(low, high, mergeable=mergeable))
        # the header line: it names the container
        elif start <= owner.head and low <= owner.head <= high:
            pieces.append(
                Piece(low, high, owner.name, owner.kind, owner.scope, 0, HEADER_WEIGHT, mergeable)
            )
        else:
            # a body line between members (`include Helpers`), or a window of a doc comment too long
            # to share a chunk with the header (340 lines above `class Engine < Railtie`): the
            # container's, not defining it
            pieces.append(
                Piece(
                    low,
                    high,
                    "",
                    owner.kind,
                    owner.qualname,
                    owner.head if start > owner.head else 0,
                    0,
                    mergeable,
                    merged_names=[owner.name],
                )
            )


def _definition_pieces(
    lines: Lines, definition: DefinitionNode, lead: int, owner: DefinitionNode | None
) -> list[Piece]:
    """One piece when the definition fits; else its header and members, or split pieces."""
    ctx = owner.head if owner is not None else 0
    name, kind, scope = definition.name, definition.kind, definition.scope
    size = definition.end - lead + 1
    weight = 1 if definition.is_value else size + 1
    if lines.fits(lead, definition.end):
        small = size < MERGE_BELOW_LINES
        return [
            Piece(
                lead,
                definition.end,
                name,
                kind,
                scope,
                ctx,
                weight,
                mergeable=small,
                merged_names=_nested_names(definition),
            )
        ]
    if definition.children:
        members = _level(lines, definition.children, lead, definition.end, definition)
        for member in members:
            member.mergeable = False
        return members
    ranges = split_range(lines, lead, definition.end)
    return [
        Piece(low, high, name, kind, scope, ctx if index == 0 else definition.head, weight)
        for index, (low, high) in enumerate(ranges)
    ]


def _nested_names(definition: DefinitionNode) -> list[str]:
    """The definitions inside one that fits a chunk whole (a small class's methods), outermost
    first."""
    return [
        child.name
        for child in outermost_first(definition.children)
        if child.is_symbol and child.name
    ]


def _merge(lines: Lines, pieces: list[Piece]) -> list[Piece]:
    """Merge runs of adjacent small pieces up to the chunk size limits."""
    merged: list[Piece] = []
    for piece in pieces:
        last = merged[-1] if merged else None
        if (
            last is not None
            and last.mergeable
            and piece.mergeable
            and lines.fits(last.start, piece.end)
        ):
            last.merged_names.extend(n for n in (piece.symbol, *piece.merged_names) if n)
            if piece.weight > last.weight:
                if last.symbol:
                    last.merged_names.append(last.symbol)
                last.symbol, last.kind, last.scope = piece.symbol, piece.kind, piece.scope
                last.weight = piece.weight
            last.end = piece.end
        elif last is not None and _short_header(last) and lines.fits(last.start, piece.end):
            merged[-1] = _lead(last, piece)
        else:
            merged.append(piece)
    return merged


def _short_header(piece: Piece) -> bool:
    """A container's opening lines with nothing of its own before its members (`module Rails`,
    `class Engine`, `impl Inner {`): alone they would be a chunk of a line or two."""
    return piece.weight == HEADER_WEIGHT and piece.end - piece.start + 1 <= SHORT_HEADER_LINES


def _lead(header: Piece, piece: Piece) -> Piece:
    """`piece` extended up to start with `header`, labelled by the header unless `piece` opens a
    container nested in it (`module Rails` / `class Engine` / `class Configuration`: the innermost
    one names the chunk)."""
    piece.start, piece.ctx, piece.mergeable = header.start, header.ctx, False
    if piece.weight < HEADER_WEIGHT:
        if piece.symbol:
            piece.merged_names.insert(0, piece.symbol)
        piece.merged_names[:0] = header.merged_names
        piece.symbol, piece.kind, piece.scope, piece.weight = (
            header.symbol,
            header.kind,
            header.scope,
            header.weight,
        )
    return piece
