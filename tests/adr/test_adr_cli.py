"""`zg adr list/show/for/constraints/anchor/search` on a real repository."""

from __future__ import annotations

import json
import pytest

from test_adr_kit import ZG, Repo, adr_text
from zgrep.adr.search import label_hits, search_args
from zgrep.adr.settings import AdrSettings
from zgrep.adr.store import load
from zgrep.adr.trees import WorkTree

NET = "def fetch_with_retry(url):\n    return url\n\n\nclass Session:\n    def get(self, url):\n        return url\n"


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Repo:
    r = Repo(tmp_path_factory.mktemp("adrcli"))
    r.write("src/net.py", NET)
    r.write("src/other.py", "def get():\n    return 2\n")
    r.write(
        "docs/adr/0001-retries.md",
        adr_text(
            "ADR-0001",
            title="Retry with backoff",
            anchors="  - {path: src/net.py, symbol: fetch_with_retry}\n",
        ),
    )
    r.write(
        "docs/adr/0002-dirs.md",
        adr_text(
            "ADR-0002", status="proposed", title="Own the src tree", anchors="  - {path: src}\n"
        ),
    )
    r.write(
        "docs/adr/0003-old.md",
        adr_text(
            "ADR-0003", status="deprecated", title="Old way", anchors="  - {path: src/net.py}\n"
        ),
    )
    r.write(
        "docs/specs/retries.md",
        "# Retries\n\nThe client in `src/net.py` calls `fetch_with_retry` and "
        "`Session.get`; `get` alone is ambiguous; `nowhere_defined` is not code.\n",
    )
    r.commit("init")
    return r


def test_list_and_show(repo: Repo) -> None:
    rows = repo.zg("list").stdout.splitlines()
    assert [r.split()[0] for r in rows] == ["ADR-0001", "ADR-0002", "ADR-0003"]
    listed = json.loads(repo.zg("list", "--status", "accepted", "--json").stdout)
    assert [a["id"] for a in listed] == ["ADR-0001"]
    assert repo.zg("show", "ADR-0001").stdout == repo.read("docs/adr/0001-retries.md")
    assert json.loads(repo.zg("show", "2", "--json").stdout)["title"] == "Own the src tree"


def test_for_lists_live_adrs_and_symbols(repo: Repo) -> None:
    found = json.loads(repo.zg("for", "src/net.py", "--json").stdout)
    assert [(f["id"], f["symbols"]) for f in found] == [
        ("ADR-0001", ["fetch_with_retry"]),
        ("ADR-0002", []),
    ]


def test_constraints_formats(repo: Repo) -> None:
    assert repo.zg("constraints").stdout.splitlines() == [
        "[ADR-0001] Keep the rule of ADR-0001",
        "[ADR-0002] Keep the rule of ADR-0002",
    ]
    md = repo.zg("constraints", "--for", "src/other.py", "--format", "markdown").stdout
    assert "### ADR-0002: Own the src tree (proposed)" in md and "ADR-0001" not in md
    data = json.loads(repo.zg("constraints", "ADR-0001", "--format", "json").stdout)
    assert data == [
        {
            "id": "ADR-0001",
            "title": "Retry with backoff",
            "status": "accepted",
            "constraint": "Keep the rule of ADR-0001",
        }
    ]


def test_anchor_proposes_and_writes(repo: Repo) -> None:
    proposal = json.loads(repo.zg("anchor", "docs/specs/retries.md", "--json").stdout)
    assert proposal["code_anchors"] == [
        {"path": "src/net.py"},
        {"path": "src/net.py", "symbol": "fetch_with_retry"},
        {"path": "src/net.py", "symbol": "Session.get"},
        {"path": "src/net.py", "symbol": "get"},
        {"path": "src/other.py", "symbol": "get"},
    ]
    assert proposal["unknown"] == ["nowhere_defined"]
    assert repo.zg("anchor", "docs/specs/retries.md", "--write").returncode == 0
    assert repo.zg("anchor", "docs/specs/retries.md", "--write").returncode == 0  # idempotent
    text = repo.read("docs/specs/retries.md")
    assert (
        text.startswith("---\ncode_anchors:\n  - {path: src/net.py}\n")
        and text.count("fetch_with_retry}") == 1
    )
    assert text.endswith(
        "# Retries\n\nThe client in `src/net.py` calls `fetch_with_retry` and "
        "`Session.get`; `get` alone is ambiguous; `nowhere_defined` is not code.\n"
    )
    repo.git("checkout", "--", "docs/specs/retries.md")


def test_search_hits_are_labelled_by_document_kind(repo: Repo) -> None:
    settings = AdrSettings(repo.path, "docs/adr", ("docs/specs", "docs/plans"))
    assert search_args(settings, "q", 5)["globs"] == [
        "docs/adr/**",
        "docs/specs/**",
        "docs/plans/**",
    ]
    adrs = load(WorkTree(repo.path), "docs/adr")
    hits = [
        {"path": "docs/adr/0001-retries.md", "start_line": 1, "end_line": 9},
        {"path": "docs/specs/retries.md", "start_line": 1, "end_line": 3},
        {"path": "docs/adr/0003-old.md", "start_line": 1, "end_line": 9},
    ]
    labelled = label_hits(settings, adrs, hits, None)
    assert [(h["doc_kind"], h.get("id"), h.get("status")) for h in labelled] == [
        ("adr", "ADR-0001", "accepted"),
        ("spec", None, None),
        ("adr", "ADR-0003", "deprecated"),
    ]
    assert [h["id"] for h in label_hits(settings, adrs, hits, "deprecated")] == ["ADR-0003"]


def test_search_through_the_real_index(repo: Repo) -> None:
    indexed = repo.run(ZG, "index")
    assert indexed.returncode == 0, indexed.stderr
    proc = repo.zg("search", "retry with backoff", "--json", "--mode", "direct")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["query"] == "retry with backoff" and data["mode"] == "direct"
    assert data["hits"] and all(h["doc_kind"] in ("adr", "spec") for h in data["hits"])
    assert all(h["path"].startswith(("docs/adr/", "docs/specs/")) for h in data["hits"])
    top = next(h for h in data["hits"] if h["doc_kind"] == "adr")
    assert {"id", "title", "status", "start_line", "end_line", "score"} <= set(top)
    human = repo.zg(
        "search", "retry with backoff", "--mode", "direct", "--status", "accepted"
    ).stdout
    assert "[ADR-0001 accepted: Retry with backoff]" in human
