"""ADR records: parsing with precise lines, and surgical front-matter edits through `zg adr new/update`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from test_adr_kit import Repo
from zgrep.adr.edit import FrontMatter
from zgrep.adr.model import AdrError, Anchor, parse_adr, parse_anchor_spec

HAND_WRITTEN = """---
# a comment the tools must keep
id: ADR-0007
title:   "Odd   spacing: kept"   # trailing comment
status: proposed
date: 2024-01-02
change_type: data
code_anchors:
    - path: src/a.py      # four-space indent, block mapping
      symbol: load
constraints: [ "flow style stays" ]
tags: [x, y]
---
Body line with trailing spaces   
## Context
unchanged
"""


def test_parse_reports_the_file_line_of_bad_yaml() -> None:
    with pytest.raises(AdrError) as err:
        parse_adr("---\nid: ADR-0001\nstatus: accepted\ntags: [a, b\n---\nbody\n", "x.md")
    assert err.value.line >= 4 and "malformed YAML" in str(err.value)


def test_parse_reads_every_field() -> None:
    adr = parse_adr(HAND_WRITTEN, "docs/adr/0007-x.md")
    assert (adr.id, adr.status, adr.change_type, adr.date) == (
        "ADR-0007",
        "proposed",
        "data",
        "2024-01-02",
    )
    assert adr.anchors == [Anchor("src/a.py", "load")]
    assert adr.constraints == ["flow style stays"] and adr.line_of("status") == 5


@pytest.mark.parametrize(
    "spec, anchor",
    [
        ("src/a.py", Anchor("src/a.py")),
        ("src/a.py:Session.get", Anchor("src/a.py", "Session.get")),
        ("src/a.py:10-20", Anchor("src/a.py", "", (10, 20))),
        ("src/a.py:load:3-9", Anchor("src/a.py", "load", (3, 9))),
    ],
)
def test_anchor_specs(spec: str, anchor: Anchor) -> None:
    assert parse_anchor_spec(spec) == anchor and anchor.spec() == spec


def test_edits_touch_only_the_changed_lines() -> None:
    fm = FrontMatter(HAND_WRITTEN)
    fm.set_scalar("status", "accepted")
    fm.add_items("code_anchors", [Anchor("src/b.py", "save").to_yaml()])
    out = fm.text()
    expected = HAND_WRITTEN.replace("status: proposed", "status: accepted").replace(
        "      symbol: load\n", "      symbol: load\n    - {path: src/b.py, symbol: save}\n"
    )
    assert out == expected


def test_new_and_update_preserve_everything_untouched(tmp_path: Path) -> None:
    repo = Repo(tmp_path)
    repo.write("src/a.py", "def load():\n    pass\n")
    repo.write("docs/adr/0007-hand.md", HAND_WRITTEN)
    proc = repo.zg(
        "new",
        "Cache vectors by content hash",
        "--anchor",
        "src/a.py:load",
        "--constraint",
        "Never re-embed unchanged chunks",
        "--status",
        "accepted",
        "--change-type",
        "performance",
    )
    assert (
        proc.returncode == 0
        and proc.stdout.strip() == "docs/adr/0008-cache-vectors-by-content-hash.md"
    )
    created = repo.read("docs/adr/0008-cache-vectors-by-content-hash.md")
    assert "# ADR-0008: Cache vectors by content hash" in created and "## Alternatives" in created
    shown = json.loads(repo.zg("show", "8", "--json").stdout)
    assert shown["code_anchors"] == [{"path": "src/a.py", "symbol": "load"}]
    assert (
        shown["constraints"] == ["Never re-embed unchanged chunks"]
        and shown["status"] == "accepted"
    )

    assert (
        repo.zg(
            "update",
            "ADR-0007",
            "--status",
            "accepted",
            "--add-anchor",
            "src/a.py:1-2",
            "--add-constraint",
            "second rule",
        ).returncode
        == 0
    )
    after = repo.read("docs/adr/0007-hand.md")
    assert after == HAND_WRITTEN.replace("status: proposed", "status: accepted").replace(
        "      symbol: load\n", "      symbol: load\n    - {path: src/a.py, lines: 1-2}\n"
    ).replace('constraints: [ "flow style stays" ]', "constraints: [flow style stays, second rule]")
    assert repo.zg("update", "7", "--remove-anchor", "src/a.py:load").returncode == 0
    assert "symbol: load" not in repo.read("docs/adr/0007-hand.md")
    assert repo.zg("update", "7", "--remove-anchor", "src/zzz.py").returncode == 2

    assert repo.zg("update", "7", "--superseded-by", "ADR-0008").returncode == 0
    assert "\nsuperseded_by: [ADR-0008]\n" in repo.read("docs/adr/0007-hand.md")
    assert "status: superseded" in repo.read("docs/adr/0007-hand.md")
    assert "\nsupersedes: [ADR-0007]\n" in repo.read(
        "docs/adr/0008-cache-vectors-by-content-hash.md"
    )
    assert repo.zg("check").returncode == 0, repo.zg("check").stdout


def test_new_rejects_anchors_outside_the_repo(tmp_path: Path) -> None:
    repo = Repo(tmp_path)
    proc = repo.zg("new", "X", "--anchor", "../etc/passwd")
    assert proc.returncode == 2 and "outside the repository" in proc.stderr


@pytest.mark.parametrize("title", ["", "   "])
def test_new_refuses_an_empty_title(tmp_path: Path, title: str) -> None:
    repo = Repo(tmp_path)
    proc = repo.zg("new", title)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.count("\n") == 1 and "title is empty" in proc.stderr
    assert not (tmp_path / "docs" / "adr").exists()


def test_new_warns_about_unresolved_anchors_and_still_writes(tmp_path: Path) -> None:
    repo = Repo(tmp_path)
    repo.write("src/a.py", "def load():\n    pass\n")
    proc = repo.zg(
        "new",
        "X",
        "--anchor",
        "nothere.py:foo",
        "--anchor",
        "src/a.py:load",
        "--anchor",
        "src/a.py:gone",
    )
    assert proc.returncode == 0 and proc.stdout.strip() == "docs/adr/0001-x.md"
    warnings = proc.stderr.splitlines()
    assert len(warnings) == 2, proc.stderr
    assert warnings[0].startswith(
        "zg adr: warning: anchor nothere.py:foo: file nothere.py does not exist"
    )
    assert warnings[1].startswith(
        "zg adr: warning: anchor src/a.py:gone: symbol gone is no longer defined"
    )
    assert "- {path: nothere.py, symbol: foo}" in repo.read("docs/adr/0001-x.md")
    assert repo.zg("check").returncode == 1  # the same anchors check flags
    quiet = repo.zg("new", "Y", "--anchor", "src/a.py:load")
    assert quiet.returncode == 0 and quiet.stderr == ""
    proc = repo.zg("update", "2", "--add-anchor", "src/b.py")
    assert proc.returncode == 0 and proc.stderr.startswith(
        "zg adr: warning: anchor src/b.py: file src/b.py does not"
    )


def test_supersession_keeps_the_template_yaml_shape(tmp_path: Path) -> None:
    repo = Repo(tmp_path)
    for title in ("Old way", "New way", "Newer way"):
        assert repo.zg("new", title, "--status", "accepted").returncode == 0
    old, new = "docs/adr/0001-old-way.md", "docs/adr/0002-new-way.md"
    before_old, before_new = repo.read(old), repo.read(new)
    assert repo.zg("update", "1", "--superseded-by", "2").returncode == 0
    assert repo.read(old) == before_old.replace("status: accepted", "status: superseded").replace(
        "superseded_by: []", "superseded_by: [ADR-0002]"
    )
    assert repo.read(new) == before_new.replace("supersedes: []", "supersedes: [ADR-0001]")
    assert repo.zg("update", "1", "--superseded-by", "2").returncode == 0  # idempotent
    assert repo.read(old).count("ADR-0002") == 1 and repo.read(new).count("ADR-0001") == 1
    assert repo.zg("check").returncode == 0, repo.zg("check").stdout

    # A key already written as a block list stays a block list.
    third = "docs/adr/0003-newer-way.md"
    repo.write(
        third, repo.read(third).replace("supersedes: []", "supersedes:\n  - ADR-0001  # kept\n")
    )
    repo.write(
        old, repo.read(old).replace("superseded_by: [ADR-0002]", "superseded_by:\n  - ADR-0002")
    )
    assert repo.zg("update", "2", "--superseded-by", "3").returncode == 0
    assert "supersedes:\n  - ADR-0001  # kept\n  - ADR-0002\n" in repo.read(third)
    assert "\nsuperseded_by: [ADR-0003]\n" in repo.read(new)
