"""Hits of one file that overlap or adjoin (across blank lines only) come back as one span, so they take one
slot: its lines are the file's lines, its label the best chunk's own definition. A real repo, real Milvus Lite, the real `zg`; the paraphrase case of issue 14 too."""

from __future__ import annotations

from pathlib import Path

import pytest

from corpus import indexed_repo, search_hits
from zgrep.search.spans import add, span_of

# A long function split into overlapping pieces, then two small helpers merged into one chunk right below it.
_ROWS = "".join(
    f"        cells.append(pad_cell(row[{i}], widths[{i}], align))  # table column {i}\n"
    for i in range(60)
)
TABLE = f'''\
"""Plain-text tables."""


def render_table(rows, widths, align="left"):
    """Render table rows as lines of padded cells, with a table border around them."""
    lines = ["+" + "+".join("-" * w for w in widths) + "+"]
    for row in rows:
        cells = []
{_ROWS}        lines.append("|" + "|".join(cells) + "|")
    lines.append(lines[0])
    return lines


def pad_cell(text, width, align):
    """Pad one table cell to its column width."""
    return text.ljust(width) if align == "left" else text.rjust(width)


def table_width(widths):
    """Total width of a table with these column widths."""
    return sum(widths) + len(widths) + 1
'''

HELPERS = '''\
"""Helpers for views and responses."""

import os
import sys


def get_debug_flag():
    """Whether debug mode is on, read from the FLASK_DEBUG environment variable."""
    value = os.environ.get("FLASK_DEBUG")
    if not value:
        return False
    return value.lower() not in ("0", "false", "no")


def send_file_chunks(path, chunk_size=8192):
    """Yield a file's bytes in chunks for a streamed response."""
    with open(path, "rb") as handle:
        while True:
            data = handle.read(chunk_size)
            if not data:
                break
            yield data


def get_root_path(import_name):
    """Find the root path of a package or module, falling back to the working directory."""
    module = sys.modules.get(import_name)
    if module is not None and hasattr(module, "__file__"):
        return os.path.dirname(os.path.abspath(module.__file__))
    return os.getcwd()


def levenshtein_edit_distance(a: str, b: str) -> int:
    """Number of single-character insertions, deletions or substitutions."""
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        current = [i]
        for j, cb in enumerate(b, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (ca != cb)))
        previous = current
    return previous[-1]
'''

FILES: dict[str, str | bytes] = {"text/table.py": TABLE, "web/helpers.py": HELPERS}


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    return indexed_repo(tmp_path_factory.mktemp("spans"), FILES)


def test_pieces_of_one_file_come_back_as_one_span(repo):
    hits = search_hits(repo, "render table cells padded to column width", "--preview", "full")
    table = [h for h in hits if h["path"] == "text/table.py"]
    assert len(table) == 1, [(h["start_line"], h["end_line"]) for h in table]
    hit, lines = table[0], TABLE.split("\n")
    assert hit["preview"] == "\n".join(lines[hit["start_line"] - 1 : hit["end_line"]])
    assert hit["start_line"] <= lines.index('def render_table(rows, widths, align="left"):') + 1
    assert (
        hit["end_line"] >= lines.index("    return lines") + 1
    )  # the long function's last piece, joined
    assert (
        hit["symbol"] == "render_table" and hit["symbol_kind"] == "function"
    )  # the best chunk's own definition


def test_paraphrase_of_new_code_finds_it(repo):
    hits = search_hits(repo, "how many single character edits turn one string into another")
    assert ("web/helpers.py", "levenshtein_edit_distance") in [
        (h["path"], h["symbol"]) for h in hits[:3]
    ]


def test_a_chunk_between_two_hits_joins_them_but_a_code_gap_does_not():
    def chunk(start: int, end: int) -> dict[str, object]:
        return {
            "path": "a.py",
            "start_line": start,
            "end_line": end,
            "symbol": f"f{start}",
            "content": "\n".join(f"line {n}" for n in range(start, end + 1)),
        }

    def no_blank_gaps(path: str, first: int, last: int) -> bool:
        return False

    spans = [span_of(chunk(1, 10), 0.9, ["lexical"]), span_of(chunk(21, 30), 0.8, ["semantic"])]
    add(spans, span_of(chunk(40, 45), 0.7, ["lexical"]), no_blank_gaps)
    assert [(s.start, s.end) for s in spans] == [(1, 10), (21, 30), (40, 45)]
    add(spans, span_of(chunk(9, 22), 0.5, ["path"]), no_blank_gaps)
    assert [(s.start, s.end) for s in spans] == [(1, 30), (40, 45)]
    merged = spans[0]
    assert merged.content.split("\n") == [f"line {n}" for n in range(1, 31)]
    assert (merged.score, merged.fields["symbol"], merged.routes) == (
        0.9,
        "f1",
        {"lexical", "semantic", "path"},
    )
