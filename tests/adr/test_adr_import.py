"""`zg adr import`: existing records gain zg's fields by added lines only; then `check --strict` passes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from test_adr_formats import fixture_repo
from test_adr_kit import Repo


def removed_lines(repo: Repo) -> list[str]:
    """Lines `git diff` shows as removed or changed (must stay empty)."""
    numstat = repo.git("diff", "--numstat").stdout.splitlines()
    assert numstat, "import changed nothing"
    return [row for row in numstat if row.split("\t")[1] != "0"]


@pytest.mark.parametrize("name", ["adr_tools", "madr"])
def test_import_adds_lines_only_and_makes_strict_pass(tmp_path: Path, name: str) -> None:
    repo = fixture_repo(name, tmp_path / name)
    assert repo.zg("check", "--all", "--strict").returncode == 1
    dry = repo.zg("import", "--dry-run")
    assert dry.returncode == 0 and "    + id: ADR-0001\n" in dry.stdout
    assert repo.git("status", "--porcelain").stdout == ""  # a dry run writes nothing
    proc = repo.zg("import")
    assert proc.returncode == 0, proc.stderr
    assert removed_lines(repo) == []
    strict = repo.zg("check", "--all", "--strict")
    assert strict.returncode == 0, strict.stdout
    again = repo.zg("import")
    assert again.returncode == 0 and again.stdout == "" and "nothing to do" in again.stderr


def test_imported_anchors_come_from_the_code_each_record_mentions(tmp_path: Path) -> None:
    repo = fixture_repo("adr_tools", tmp_path / "r")
    assert repo.zg("import").returncode == 0
    found = json.loads(repo.zg("for", "src/sessions/store.py", "--json").stdout)
    assert [(f["id"], f["symbols"]) for f in found] == [("ADR-0005", ["PostgresSessionStore"])]
    text = repo.read("doc/architecture/decisions/0002-retry-idempotent-http-requests.md")
    assert (
        "```zg\nid: ADR-0002\ncode_anchors:\n  - {path: src/net/client.py, symbol: fetch_with_retry}\n"
        in text
    )


def test_import_of_awkward_records(tmp_path: Path) -> None:
    """No final newline, no number in the file name, a zg record without code_anchors, an unreadable file."""
    repo = Repo(tmp_path)
    repo.write("src/a.py", "def load():\n    pass\n")
    repo.write(
        "doc/adr/0001-no-newline.md", "# 1. No newline\n\n## Status\n\nAccepted\n\nUses `load`."
    )
    repo.write(
        "doc/adr/use-a-queue.md",
        "# Use a queue\n\n* Status: proposed\n\n## Decision Outcome\n\nQueue.\n",
    )
    repo.write(
        "doc/adr/0003-zg.md", "---\nid: ADR-0003\ntitle: Own format\nstatus: accepted\n---\nBody\n"
    )
    repo.write("doc/adr/0004-broken.md", "---\nid: [unclosed\n---\n")
    repo.commit("records")
    proc = repo.zg("import")
    assert proc.returncode == 1 and "doc/adr/0004-broken.md: not imported" in proc.stderr
    assert removed_lines(repo) == []
    assert repo.read("doc/adr/0001-no-newline.md") == (
        "# 1. No newline\n\n```zg\nid: ADR-0001\ncode_anchors:\n  - {path: src/a.py, symbol: load}\n```\n"
        "\n## Status\n\nAccepted\n\nUses `load`."
    )
    assert "```zg\nid: ADR-0005\ncode_anchors: []\n```\n" in repo.read("doc/adr/use-a-queue.md")
    assert (
        repo.read("doc/adr/0003-zg.md")
        == "---\nid: ADR-0003\ntitle: Own format\nstatus: accepted\ncode_anchors: []\n---\nBody\n"
    )
    (repo.path / "doc/adr/0004-broken.md").unlink()
    assert repo.zg("check", "--all", "--strict").returncode == 0
