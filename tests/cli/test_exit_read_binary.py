"""`zg read` refuses a binary file (the indexer's own test) instead of dumping its bytes."""

from __future__ import annotations

from pathlib import Path

import pytest

from corpus import assert_one_line_error, run_zg, user_env

PNG = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)) * 4


@pytest.fixture
def ws(tmp_path: Path) -> dict[str, object]:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "blob.bin").write_bytes(PNG)
    (root / "late.bin").write_bytes(
        b"text line\n" * 100 + b"\x00tail\n"
    )  # NUL within the indexer's sniff window
    (root / "notes.txt").write_text("first\nsecond\n")
    return {"root": root, "env": user_env(tmp_path / "user")}


@pytest.mark.parametrize("location", ["blob.bin", "blob.bin:1-2", "late.bin:1"])
def test_read_refuses_binary_files(ws, location):
    proc = run_zg("read", location, cwd=ws["root"], env=ws["env"])
    assert_one_line_error(proc, "binary", location.split(":")[0])
    assert proc.stdout == ""


def test_the_indexer_skips_the_same_files(ws):
    from zgrep.index.discovery import Skip, read_file

    for rel in ("blob.bin", "late.bin"):
        assert read_file(ws["root"], rel, max_bytes=1 << 20) == Skip(rel, "binary")


def test_read_still_prints_text(ws):
    proc = run_zg("read", "notes.txt:2", cwd=ws["root"], env=ws["env"])
    assert (proc.returncode, proc.stdout) == (0, "     2: second\n")


def test_a_file_name_holding_a_colon_is_read_whole_or_by_span(ws):
    """`PATH:SPAN` splits at the colon only when PATH names a file: `docs/a:b.md` is one (the MCP `read` tool
    and the HTTP `/read` add their start/end to the path the same way)."""
    (ws["root"] / "docs").mkdir()
    (ws["root"] / "docs" / "a:b.md").write_text("one\ntwo\nthree\n")
    whole = run_zg("read", "docs/a:b.md", cwd=ws["root"], env=ws["env"])
    assert (whole.returncode, whole.stdout) == (0, "     1: one\n     2: two\n     3: three\n"), (
        whole.stderr
    )
    span = run_zg("read", "docs/a:b.md:2-3", cwd=ws["root"], env=ws["env"])
    assert (span.returncode, span.stdout) == (0, "     2: two\n     3: three\n"), span.stderr
    bad = run_zg("read", "notes.txt:x-y", cwd=ws["root"], env=ws["env"])
    assert_one_line_error(bad, "bad line range")
