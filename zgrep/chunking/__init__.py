"""Split source files into searchable chunks and list their definitions.

Code is chunked at definition boundaries with tree-sitter (one node-type table per language
in its `zgrep.languages` record, one generic walker in `definitions.py`, shaping in `shaping.py`);
markdown by heading; anything else, or a file whose chunking fails, by line windows.

Chunk context: for a piece inside a class (or a continuation piece of a split function)
the first `context_lines` lines of the enclosing definition (its signature line first);
for a sub-section of markdown, its parent heading; otherwise the non-blank lines just above.
"""

from __future__ import annotations

from zgrep.chunking.definitions import parse, symbols, walk_definitions
from zgrep.chunking.markdown import markdown_pieces, sections
from zgrep.chunking.shaping import code_pieces
from zgrep.chunking.windows import Lines, Piece, window_pieces
from zgrep.languages.registry import chunk_spec, detect_language
from zgrep.types import Chunk, Definition

__all__ = ["chunk_file", "detect_language", "extract_symbols"]


def chunk_file(path: str, text: str, *, context_lines: int = 2) -> list[Chunk]:
    """Chunks of one file (`path` workspace-relative); never raises, [] for blank text."""
    if not text.strip():
        return []
    language = detect_language(path, text)
    lines = Lines(text)
    try:
        if chunk_spec(language) is not None:
            tree = parse(text, language)
            pieces = code_pieces(lines, walk_definitions(tree, language))
        elif language == "markdown":
            pieces = markdown_pieces(lines)
        else:
            pieces = window_pieces(lines)
    except Exception:  # a grammar or walker failure must not lose the file
        pieces = window_pieces(lines)
    return [_chunk(path, language, lines, piece, context_lines) for piece in pieces]


def extract_symbols(text: str, language: str) -> list[Definition]:
    """Every definition the chunker sees, outermost first; markdown gives its heading sections."""
    if language == "markdown":
        return [Definition(h.text, "module", h.line, end) for h, end in sections(Lines(text))]
    if chunk_spec(language) is None or not text.strip():
        return []
    return symbols(walk_definitions(parse(text, language), language))


def _chunk(path: str, language: str, lines: Lines, piece: Piece, context_lines: int) -> Chunk:
    return Chunk(
        path=path,
        language=language,
        start_line=piece.start,
        end_line=piece.end,
        content=lines.content(piece.start, piece.end),
        symbol=piece.symbol,
        symbol_kind=piece.kind,
        scope=piece.scope,
        names=tuple(dict.fromkeys(n for n in (piece.symbol, *piece.merged_names) if n)),
        context=_context(lines, piece, context_lines),
    )


def _context(lines: Lines, piece: Piece, context_lines: int) -> str:
    """The enclosing definition's first lines, else the non-blank lines just above."""
    if context_lines <= 0:
        return ""
    if piece.outline:
        return "\n".join(lines.line(n) for n in piece.outline[-context_lines:])
    if 0 < piece.ctx < piece.start:
        last = min(piece.ctx + context_lines - 1, piece.start - 1)
        return lines.content(piece.ctx, last).rstrip()
    above = lines.trim(max(1, piece.start - context_lines), piece.start - 1)
    return lines.content(*above) if above and not lines.trivial(*above) else ""
