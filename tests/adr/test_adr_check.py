"""`zg adr check`: real repositories, real commits through an installed pre-commit hook."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from test_adr_kit import Repo, adr_text

NET = "def fetch_with_retry(url):\n    return url\n\n\nclass Session:\n    def get(self, url):\n        return url\n"
ANCHORS = "  - {path: src/net.py, symbol: fetch_with_retry}\n  - {path: src/net.py, symbol: Session.get}\n"


@pytest.fixture
def repo(tmp_path: Path) -> Repo:
    r = Repo(tmp_path)
    r.write("src/net.py", NET)
    r.write("src/util.py", "def helper():\n    return 1\n")
    r.write(
        "docs/adr/0001-retries.md",
        adr_text("ADR-0001", anchors=ANCHORS, title="Retry with backoff"),
    )
    assert r.commit("init").returncode == 0
    r.install_hook()
    return r


@pytest.mark.e2e
def test_renaming_an_anchored_function_blocks_the_commit_naming_the_adr(repo: Repo) -> None:
    repo.write("src/net.py", NET.replace("fetch_with_retry", "fetch"))
    proc = repo.commit("rename")
    assert proc.returncode != 0
    out = proc.stdout + proc.stderr
    assert "ADR-0001" in out and "src/net.py" in out and "fetch_with_retry" in out
    assert "--fix" in out and "supersede" in out
    assert "Keep the rule of ADR-0001" in out  # governing constraints reported
    assert repo.git("rev-list", "--count", "HEAD").stdout.strip() == "1"

    repo.write(
        "docs/adr/0001-retries.md",
        adr_text("ADR-0001", anchors=ANCHORS.replace("fetch_with_retry", "fetch")),
    )
    proc = repo.commit("rename, ADR updated")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert repo.git("rev-list", "--count", "HEAD").stdout.strip() == "2"


@pytest.mark.e2e
def test_deprecated_adr_dead_anchor_does_not_block(repo: Repo) -> None:
    repo.write(
        "docs/adr/0001-retries.md", adr_text("ADR-0001", status="deprecated", anchors=ANCHORS)
    )
    repo.write("src/net.py", "x = 1\n")
    proc = repo.commit("drop")
    assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.mark.e2e
def test_unstaged_fix_does_not_mask_broken_staged_state(repo: Repo) -> None:
    repo.write("src/net.py", NET.replace("fetch_with_retry", "fetch"))
    repo.git("add", "src/net.py")
    repo.write("src/net.py", NET)  # working copy fixed, index still broken
    proc = repo.git("commit", "-q", "-m", "broken", check=False)
    assert proc.returncode != 0
    assert "fetch_with_retry" in proc.stdout + proc.stderr
    assert repo.zg("check").returncode == 0  # the working copy itself is fine


def test_staged_check_reads_the_index_not_the_working_copy(repo: Repo) -> None:
    repo.write("src/net.py", NET.replace("fetch_with_retry", "fetch"))  # unstaged breakage
    assert repo.zg("check", "--staged").returncode == 0
    assert repo.zg("check").returncode == 1


def test_fix_after_git_mv_rewrites_the_path(repo: Repo) -> None:
    repo.git("mv", "src/net.py", "src/http.py")
    proc = repo.zg("check", "--staged")
    assert proc.returncode == 1 and "src/net.py does not exist in the staged tree" in proc.stdout
    proc = repo.zg("check", "--staged", "--fix")
    assert (
        proc.returncode == 1 and "git add" in proc.stdout
    )  # fixed in the working copy; must be staged
    original = adr_text("ADR-0001", anchors=ANCHORS, title="Retry with backoff")
    assert repo.read("docs/adr/0001-retries.md") == original.replace("src/net.py", "src/http.py")
    assert repo.commit("move").returncode == 0


def test_fix_moves_a_line_range_with_its_symbol(repo: Repo) -> None:
    repo.write(
        "docs/adr/0001-retries.md",
        adr_text(
            "ADR-0001", anchors="  - path: src/net.py\n    symbol: Session.get\n    lines: 6-7\n"
        ),
    )
    repo.commit("lines")
    repo.write("src/net.py", "import os\n\n" + NET)
    proc = repo.zg("check", "--json")
    assert proc.returncode == 0  # drift is a warning, not a violation
    assert json.loads(proc.stdout)["problems"][0]["code"] == "anchor_lines_stale"
    assert repo.zg("check", "--fix").returncode == 0
    assert "    symbol: Session.get\n    lines: 8-9\n" in repo.read("docs/adr/0001-retries.md")
    assert json.loads(repo.zg("check", "--json").stdout)["problems"] == []


def test_fix_explains_what_it_cannot_fix(repo: Repo) -> None:
    repo.write("src/net.py", NET.replace("fetch_with_retry", "fetch"))
    proc = repo.zg("check", "--fix")
    assert proc.returncode == 1
    assert "not fixed: ADR-0001: src/net.py:fetch_with_retry" in proc.stdout


def _case(repo: Repo, rel: str, text: str | bytes) -> str:
    repo.write(rel, text)
    proc = repo.zg("check")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    return proc.stdout


@pytest.mark.parametrize(
    "name, files, expected",
    [
        (
            "yaml",
            {
                "docs/adr/0002-bad.md": "---\nid: ADR-0002\ntitle: [unclosed\nstatus: accepted\n---\n"
            },
            "docs/adr/0002-bad.md:4: error: malformed YAML",
        ),
        (
            "missing id",
            {"docs/adr/0002-noid.md": "---\ntitle: x\nstatus: accepted\n---\n"},
            "docs/adr/0002-noid.md:1: error: missing required field `id`",
        ),
        (
            "duplicate",
            {"docs/adr/0002-dup.md": adr_text("ADR-0001")},
            "docs/adr/0002-dup.md:2: error: ADR-0001: duplicate id ADR-0001 (also used by docs/adr/0001-retries.md)",
        ),
        (
            "cycle",
            {
                "docs/adr/0002-a.md": adr_text(
                    "ADR-0002",
                    status="superseded",
                    extra="supersedes: [ADR-0003]\nsuperseded_by: ADR-0003\n",
                ),
                "docs/adr/0003-b.md": adr_text(
                    "ADR-0003",
                    status="superseded",
                    extra="supersedes: [ADR-0002]\nsuperseded_by: ADR-0002\n",
                ),
            },
            "supersession cycle: ADR-0002 -> ADR-0003 -> ADR-0002",
        ),
        (
            "disagree",
            {
                "docs/adr/0002-a.md": adr_text(
                    "ADR-0002", status="superseded", extra="superseded_by: ADR-0001\n"
                )
            },
            "ADR-0002: superseded_by ADR-0001, but ADR-0001 does not list ADR-0002 in `supersedes`",
        ),
        (
            "no successor",
            {"docs/adr/0002-a.md": adr_text("ADR-0002", status="superseded")},
            "docs/adr/0002-a.md:4: error: ADR-0002: status is superseded but `superseded_by` names no successor",
        ),
        (
            "binary",
            {
                "assets/logo.png": b"\x89PNG\r\n\x1a\n\0\0\0",
                "docs/adr/0002-a.md": adr_text("ADR-0002", anchors="  - {path: assets/logo.png}\n"),
            },
            "anchor assets/logo.png: assets/logo.png is a binary file",
        ),
        (
            "outside",
            {
                "docs/adr/0002-a.md": adr_text(
                    "ADR-0002", anchors="  - {path: ../secrets.py}\n  - {path: /etc/passwd}\n"
                )
            },
            "anchor '../secrets.py' is outside the repository",
        ),
        (
            "status",
            {"docs/adr/0002-a.md": adr_text("ADR-0002", status="done")},
            "docs/adr/0002-a.md:4: error: unknown status 'done' (expected one of proposed, accepted, deprecated, superseded)",
        ),
        (
            "change type",
            {
                "docs/adr/0002-a.md": adr_text("ADR-0002").replace(
                    "change_type: api", "change_type: vibes"
                )
            },
            "docs/adr/0002-a.md:6: error: unknown change_type 'vibes'",
        ),
        (
            "missing file",
            {"docs/adr/0002-a.md": adr_text("ADR-0002", anchors="  - {path: src/gone.py}\n")},
            "docs/adr/0002-a.md:8: error: ADR-0002: anchor src/gone.py: file src/gone.py does not exist in the working copy",
        ),
        (
            "line range",
            {
                "docs/adr/0002-a.md": adr_text(
                    "ADR-0002", anchors="  - {path: src/util.py, lines: 1-40}\n"
                )
            },
            "lines 1-40 lie outside src/util.py (2 lines)",
        ),
    ],
)
def test_each_malformed_case_gets_a_precise_error(
    repo: Repo, name: str, files: dict, expected: str
) -> None:
    for rel, text in files.items():
        repo.write(rel, text)
    proc = repo.zg("check")
    assert proc.returncode == 1, (name, proc.stdout, proc.stderr)
    assert expected in proc.stdout, (name, proc.stdout)


def test_outside_anchor_names_both_paths(repo: Repo) -> None:
    out = _case(
        repo,
        "docs/adr/0002-a.md",
        adr_text("ADR-0002", anchors="  - {path: ../x}\n  - {path: /etc/passwd}\n"),
    )
    assert "'../x' is outside" in out and "'/etc/passwd' is outside" in out


def test_usage_errors_exit_2(repo: Repo) -> None:
    assert repo.zg("check", "--staged", "--all").returncode == 2
    assert repo.zg("check", "--bogus").returncode == 2
    assert repo.zg("show", "ADR-0042").returncode == 2


def test_check_does_not_import_milvus_numpy_or_model(repo: Repo) -> None:
    code = (
        "import sys\nfrom zgrep.cli.adr import adr\n"
        "try:\n    adr(['check', '--staged'], standalone_mode=False)\nexcept SystemExit:\n    pass\n"
        "heavy = [m for m in sys.modules if m.split('.')[0] in ('pymilvus', 'numpy', 'tokenizers', 'milvus_lite')"
        " or m.startswith(('zgrep.embedding', 'zgrep.engine', 'zgrep.store'))]\nprint(heavy)\n"
    )
    repo.write("src/net.py", NET.replace("return url", "return url.strip()"))
    repo.git("add", "-A")
    proc = repo.run(sys.executable, "-c", code)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().splitlines()[-1] == "[]"
    assert (
        "tree_sitter"
        in subprocess.run(
            [sys.executable, "-c", code.replace("print(heavy)", "print(sorted(sys.modules))")],
            cwd=repo.path,
            capture_output=True,
            text=True,
        ).stdout
    )


def test_check_of_a_path_that_is_not_in_the_repo_is_a_usage_error(repo: Repo) -> None:
    proc = repo.zg("check", "docs/adr/9999-typo.md")
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert (
        proc.stdout == ""
        and proc.stderr.count("\n") == 1
        and "docs/adr/9999-typo.md" in proc.stderr
    )
    proc = repo.zg("check", "src/net.py", "src/nope.py")
    assert proc.returncode == 2 and "src/nope.py" in proc.stderr and "src/net.py" not in proc.stderr
    # Real paths still scope the check: an ADR file, a source file, a directory.
    assert repo.zg("check", "docs/adr/0001-retries.md").returncode == 0
    assert repo.zg("check", "src").returncode == 0
    # A tracked file deleted from the working copy is a real path: its broken anchors are reported.
    (repo.path / "src/net.py").unlink()
    proc = repo.zg("check", "src/net.py")
    assert proc.returncode == 1 and "src/net.py does not exist in the working copy" in proc.stdout


def test_one_run_reports_every_problem_of_an_adr(repo: Repo) -> None:
    repo.write("assets/logo.png", b"\x89PNG\r\n\x1a\n\0\0\0")
    anchors = (
        "  - {path: assets/logo.png}\n  - {path: ../secrets.py}\n  - {path: src/gone.py}\n"
        "  - {path: src/util.py, lines: 1-40}\n  - {path: src/util.py, lines: nine}\n"
        "  - {path: src/net.py, symbol: fetch_with_retry}\n"
    )
    text = adr_text("ADR-0002", anchors=anchors, title="''").replace(
        "change_type: api", "change_type: bogus"
    )
    repo.write("docs/adr/0002-many.md", text)
    proc = repo.zg("check", "--json")
    assert proc.returncode == 1, proc.stderr
    found = {
        (p["code"], p["line"])
        for p in json.loads(proc.stdout)["problems"]
        if p["file"] == "docs/adr/0002-many.md"
    }
    assert found == {
        ("empty_title", 3),
        ("bad_change_type", 6),
        ("anchor_binary", 8),
        ("anchor_outside", 9),
        ("anchor_missing_file", 10),
        ("anchor_lines", 11),
        ("front_matter", 12),
    }
    human = repo.zg("check").stdout
    assert "docs/adr/0002-many.md:6: error: unknown change_type 'bogus'" in human
    assert (
        "docs/adr/0002-many.md:10: error: ADR-0002: anchor src/gone.py: file src/gone.py does not exist"
        in human
    )
    assert "docs/adr/0002-many.md:12: error: `code_anchors`: bad line range 'nine'" in human
    # The record is still usable while its change_type is wrong.
    assert json.loads(repo.zg("show", "2", "--json").stdout)["change_type"] == "bogus"


def test_a_missing_id_does_not_hide_status_or_anchor_errors(repo: Repo) -> None:
    text = adr_text("ADR-0002", status="done", anchors="  - {path: src/gone.py}\n")
    repo.write("docs/adr/0002-noid.md", text.replace("id: ADR-0002\n", ""))
    out = repo.zg("check").stdout
    assert "docs/adr/0002-noid.md:1: error: missing required field `id`" in out
    assert "docs/adr/0002-noid.md:3: error: unknown status 'done'" in out
    repo.write(
        "docs/adr/0002-noid.md",
        text.replace("id: ADR-0002\n", "").replace("status: done", "status: accepted"),
    )
    out = repo.zg("check").stdout
    assert (
        "missing required field `id`" in out
        and "docs/adr/0002-noid.md:7: error: anchor src/gone.py" in out
    )


@pytest.mark.parametrize("title_line", ["title: ''", "title:", "title: '   '"])
def test_check_flags_an_empty_title(repo: Repo, title_line: str) -> None:
    repo.write("docs/adr/0002-x.md", adr_text("ADR-0002").replace("title: A decision", title_line))
    proc = repo.zg("check")
    assert proc.returncode == 1
    assert "docs/adr/0002-x.md:3: error: empty title" in proc.stdout
    repo.write("docs/adr/0002-x.md", adr_text("ADR-0002").replace("title: A decision\n", ""))
    assert "docs/adr/0002-x.md:1: error: missing required field `title`" in repo.zg("check").stdout
