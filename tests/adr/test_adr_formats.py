"""ADRs as teams already write them: adr-tools (Nygard) and MADR 2/3/4 records read natively."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from test_adr_kit import ZG, Repo
from zgrep.adr.formats import read_record

FIXTURES = Path(__file__).parents[1] / "fixtures" / "adr_formats"
ADR_TOOLS_DIR = "doc/architecture/decisions"


def fixture_repo(name: str, dest: Path) -> Repo:
    """A committed git repository holding a copy of fixture tree `name`."""
    shutil.copytree(FIXTURES / name, dest)
    repo = Repo(dest)
    assert repo.commit("records as the team wrote them").returncode == 0
    return repo


@pytest.fixture(scope="module")
def adr_tools(tmp_path_factory: pytest.TempPathFactory) -> Repo:
    return fixture_repo("adr_tools", tmp_path_factory.mktemp("fmt") / "adr_tools")


@pytest.fixture(scope="module")
def madr(tmp_path_factory: pytest.TempPathFactory) -> Repo:
    return fixture_repo("madr", tmp_path_factory.mktemp("fmt") / "madr")


def links(repo: Repo, adr_id: str) -> dict[str, list[str]]:
    shown = json.loads(repo.zg("show", adr_id, "--json").stdout)
    return {
        k: shown[k] for k in ("supersedes", "superseded_by", "amends", "amended_by") if shown[k]
    }


def test_the_issue_repository_an_adr_tools_and_a_madr_record_side_by_side(tmp_path: Path) -> None:
    """The report: `list` printed nothing, `check --all` failed with 3 errors on two well-formed records."""
    repo = Repo(tmp_path)
    repo.write(
        "docs/adr/0001-record-architecture-decisions.md",
        (
            FIXTURES / "adr_tools" / ADR_TOOLS_DIR / "0001-record-architecture-decisions.md"
        ).read_text(),
    )
    repo.write(
        "docs/adr/0002-use-postgresql-for-persistence.md",
        "---\nstatus: accepted\ndate: 2024-01-05\ndeciders: [Ana, Bo]\n---\n# Use PostgreSQL for persistence\n\n"
        '## Decision Outcome\n\nChosen option: "PostgreSQL".\n',
    )
    assert repo.zg("list").stdout.splitlines() == [
        "ADR-0001  accepted    -             Record architecture decisions",
        "ADR-0002  accepted    -             Use PostgreSQL for persistence",
    ]
    proc = repo.zg("check", "--all")
    assert proc.returncode == 0, proc.stdout
    assert proc.stdout.endswith("ok: 0 error(s), 0 warning(s) in 2 ADR(s) (all)\n")
    assert json.loads(repo.zg("show", "2", "--json").stdout)["deciders"] == ["Ana", "Bo"]


def test_adr_tools_records_from_adr_dir(adr_tools: Repo) -> None:
    rows = [r.split(None, 2)[:2] for r in adr_tools.zg("list").stdout.splitlines()]
    assert rows == [
        ["ADR-0001", "accepted"],
        ["ADR-0002", "accepted"],
        ["ADR-0003", "superseded"],
        ["ADR-0004", "accepted"],
        ["ADR-0005", "accepted"],
        ["ADR-0006", "accepted"],
    ]
    proc = adr_tools.zg("check", "--all")
    assert proc.returncode == 0 and "0 error(s), 0 warning(s) in 6 ADR(s)" in proc.stdout, (
        proc.stdout
    )
    assert links(adr_tools, "3") == {"superseded_by": ["ADR-0005"]}
    assert links(adr_tools, "5") == {"supersedes": ["ADR-0003"]}
    assert links(adr_tools, "4") == {"amended_by": ["ADR-0006"]} and links(adr_tools, "6") == {
        "amends": ["ADR-0004"]
    }
    shown = json.loads(adr_tools.zg("show", "1", "--json").stdout)
    assert (shown["title"], shown["date"], shown["format"]) == (
        "Record architecture decisions",
        "2024-01-05",
        "nygard",
    )
    assert adr_tools.zg("show", "ADR-0003").stdout == adr_tools.read(
        f"{ADR_TOOLS_DIR}/0003-store-sessions-in-redis.md"
    )
    found = json.loads(adr_tools.zg("for", "src/net/client.py", "--json").stdout)
    assert [(f["id"], f["symbols"]) for f in found] == [("ADR-0002", ["fetch_with_retry"])]
    assert (
        adr_tools.zg("constraints").stdout
        == "[ADR-0002] Retry only idempotent requests (GET, HEAD); never POST\n"
    )
    strict = adr_tools.zg("check", "--all", "--strict")
    assert (
        strict.returncode == 1
        and "`id` is not written in the record (nygard format)" in strict.stdout
    )


def test_madr_2_3_4_records(madr: Repo) -> None:
    listed = json.loads(madr.zg("list", "--json").stdout)
    assert [(a["id"], a["status"], a["title"]) for a in listed] == [
        ("ADR-0000", "accepted", "Use Markdown Any Decision Records"),
        ("ADR-0001", "accepted", "Use PostgreSQL for persistence"),
        ("ADR-0002", "superseded", "Cache prices in Redis"),
        ("ADR-0003", "accepted", "Retry idempotent requests"),
        ("ADR-0004", "accepted", "Cache prices in process"),
        ("ADR-0005", "rejected", "Use GraphQL for the public API"),
    ]
    assert [a["deciders"] for a in listed[:3]] == [
        ["Ana", "Bo"],
        ["Ana", "Bo", "Cleo"],
        ["Bo", "Cleo"],
    ]
    proc = madr.zg("check", "--all")
    assert proc.returncode == 0 and "0 error(s), 0 warning(s) in 6 ADR(s)" in proc.stdout, (
        proc.stdout
    )
    assert links(madr, "2") == {"superseded_by": ["ADR-0004"]} and links(madr, "4") == {
        "supersedes": ["ADR-0002"]
    }
    assert [f["id"] for f in json.loads(madr.zg("for", "src/http_client.py", "--json").stdout)] == [
        "ADR-0003"
    ]
    assert madr.zg("constraints", "--format", "json").stdout.count('"constraint"') == 1
    assert madr.zg("list", "--status", "rejected").stdout.startswith("ADR-0005")


def test_a_madr_successor_need_not_say_supersedes(madr: Repo, tmp_path: Path) -> None:
    """MADR writes only "superseded by" in the old record; zg completes the link instead of failing."""
    repo = fixture_repo("madr", tmp_path / "m")
    text = repo.read("docs/decisions/0004-cache-prices-in-process.md")
    repo.write(
        "docs/decisions/0004-cache-prices-in-process.md", text.split("## More Information")[0]
    )
    assert repo.zg("check", "--all").returncode == 0
    assert links(repo, "4") == {"supersedes": ["ADR-0002"]}


@pytest.mark.parametrize(
    "name, text, expected",
    [
        (
            "empty status",
            "# 7. X\n\nDate: 2024-01-01\n\n## Status\n\n## Context\n",
            (5, "bad_status", "error"),
        ),
        (
            "dangling link",
            "# 7. X\n\n## Status\n\nAccepted\n\nSupersedes [9. Gone](0009-gone.md)\n",
            None,
        ),
        ("unknown status", "# 7. X\n\n## Status\n\nPondering\n", (5, "bad_status", "warning")),
        (
            "madr no title",
            "---\nstatus: accepted\n---\n\n## Decision Outcome\n\nx\n",
            (1, "empty_title", "error"),
        ),
        (
            "bad zg block",
            "# 7. X\n\n## Status\n\nAccepted\n\n```zg\ncode_anchors: [oops\n```\n",
            (9, "yaml", "error"),
        ),
        (
            "bad anchor",
            "# 7. X\n\n## Status\n\nAccepted\n\n```zg\ncode_anchors:\n  - {symbol: f}\n```\n",
            (9, "front_matter", "error"),
        ),
        ("not a record", "Some notes about decisions.\n", (1, "front_matter", "error")),
    ],
)
def test_malformed_foreign_records_get_one_precise_finding(
    name: str, text: str, expected: tuple | None
) -> None:
    adr, errors = read_record(text, "doc/adr/0007-x.md")
    found = [(e.line, e.code, e.severity) for e in errors]
    assert found == ([expected] if expected else []), (name, [str(e) for e in errors])


def test_a_dangling_link_fails_the_check(tmp_path: Path) -> None:
    repo = Repo(tmp_path)
    repo.write(
        "doc/adr/0007-x.md",
        "# 7. X\n\n## Status\n\nAccepted\n\nSupersedes [9. Gone](0009-gone.md)\n",
    )
    proc = repo.zg("check", "--all")
    assert (
        proc.returncode == 1
        and "doc/adr/0007-x.md:7: error: ADR-0007: supersedes names ADR-0009" in proc.stdout
    )


@pytest.mark.e2e
def test_installed_hook_blocks_a_commit_breaking_an_adr_tools_anchor(tmp_path: Path) -> None:
    """adr-tools keeps its directory in `.adr-dir`: the installed pre-commit hook must find the records there."""
    repo = fixture_repo("adr_tools", tmp_path / "r")
    assert repo.run(ZG, "hooks", "install").returncode == 0
    repo.write(
        "src/net/client.py", repo.read("src/net/client.py").replace("fetch_with_retry", "fetch")
    )
    proc = repo.commit("rename the retrying fetch")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    out = proc.stdout + proc.stderr
    assert "ADR-0002" in out and "fetch_with_retry" in out
    repo.write(
        "src/net/client.py",
        repo.read("src/net/client.py")
        .replace("def fetch(", "def fetch_with_retry(")
        .replace("attempts=4", "attempts=5"),
    )
    assert repo.commit("keep the name").returncode == 0


@pytest.mark.parametrize(
    "name, flag, fmt",
    [
        ("adr_tools", None, "nygard"),
        ("madr", None, "madr"),
        ("madr", "nygard", "nygard"),
        ("adr_tools", "zg", "zg"),
    ],
)
def test_new_writes_the_directory_s_format(
    tmp_path: Path, name: str, flag: str | None, fmt: str
) -> None:
    repo = fixture_repo(name, tmp_path / name)
    code = (
        "src/net/client.py:fetch_with_retry" if name == "adr_tools" else "src/cache.py:LocalCache"
    )
    args = [
        "new",
        "Use DATE and TITLE literally",
        "--anchor",
        code,
        "--constraint",
        "Keep: it",
        "--status",
        "accepted",
    ]
    proc = repo.zg(*args, *(["--format", flag] if flag else []))
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    path = proc.stdout.strip()
    assert path.endswith(
        "0007-use-date-and-title-literally.md"
        if name == "adr_tools"
        else "0006-use-date-and-title-literally.md"
    )
    shown = json.loads(repo.zg("show", path.split("/")[-1][:4], "--json").stdout)
    assert (shown["format"], shown["title"], shown["status"]) == (
        fmt,
        "Use DATE and TITLE literally",
        "accepted",
    )
    assert shown["code_anchors"] == [dict(zip(("path", "symbol"), code.split(":")))]
    assert shown["constraints"] == ["Keep: it"]
    report = json.loads(repo.zg("check", "--all", "--strict", "--json").stdout)
    assert [p for p in report["problems"] if p["file"] == path] == []
    if fmt == "nygard":
        assert repo.read(path).startswith(
            f"# {path.split('/')[-1][3]}. Use DATE and TITLE literally\n\nDate: 20"
        )


def test_update_anchor_and_fix_edit_the_zg_block_of_an_adr_tools_record(tmp_path: Path) -> None:
    repo = fixture_repo("adr_tools", tmp_path / "r")
    rec = f"{ADR_TOOLS_DIR}/0005-store-sessions-in-postgresql.md"
    before = repo.read(rec)
    proc = repo.zg(
        "update",
        "5",
        "--add-anchor",
        "src/sessions/store.py:PostgresSessionStore",
        "--add-constraint",
        "Sessions expire after 24 hours",
    )
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    assert repo.read(rec) == before + (
        "\n```zg\ncode_anchors:\n  - {path: src/sessions/store.py, symbol: PostgresSessionStore}\n"
        "constraints:\n  - Sessions expire after 24 hours\n```\n"
    )
    assert [
        g["id"] for g in json.loads(repo.zg("for", "src/sessions/store.py", "--json").stdout)
    ] == ["ADR-0005"]
    refused = repo.zg("update", "5", "--status", "deprecated")
    assert (
        refused.returncode == 2 and refused.stderr.count("\n") == 1 and "by hand" in refused.stderr
    )
    repo.git("mv", "src/net/client.py", "src/net/http.py")
    assert repo.zg("check").returncode == 1
    assert repo.zg("check", "--fix").returncode == 0
    assert "  - {path: src/net/http.py, symbol: fetch_with_retry}\n" in repo.read(
        f"{ADR_TOOLS_DIR}/0002-retry-idempotent-http-requests.md"
    )
    assert repo.zg("check").returncode == 0


def test_adr_tools_default_directory_and_a_hostile_adr_dir(tmp_path: Path) -> None:
    repo = Repo(tmp_path / "r")
    repo.write(
        "doc/adr/0001-record-architecture-decisions.md",
        (
            FIXTURES / "adr_tools" / ADR_TOOLS_DIR / "0001-record-architecture-decisions.md"
        ).read_text(),
    )
    assert repo.zg("list").stdout.startswith(
        "ADR-0001  accepted"
    )  # adr-tools' default doc/adr, no .adr-dir
    repo.write(".adr-dir", "../../outside\n")
    for args in (("list",), ("check", "--all"), ("new", "X")):
        proc = repo.zg(*args)
        assert proc.returncode == 2 and proc.stderr.count("\n") == 1, (args, proc.stderr)
        assert ".adr-dir" in proc.stderr and "inside the workspace" in proc.stderr
    assert not (tmp_path / "outside").exists()


@pytest.mark.parametrize("conventional", ["doc/adr", "docs/decisions"])
def test_a_conventional_adr_folder_linked_out_of_the_workspace_is_refused(
    tmp_path: Path, conventional: str
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    record = outside / "0001-x.md"
    record.write_text("# 1. X\n\nDate: 2024-01-01\n\n## Status\n\nAccepted\n")
    before = record.read_text()
    repo = Repo(tmp_path / "r")
    (repo.path / conventional).parent.mkdir(parents=True, exist_ok=True)
    (repo.path / conventional).symlink_to(outside)
    for args in (("list",), ("import",), ("new", "Y")):
        proc = repo.zg(*args)
        assert proc.returncode == 2 and proc.stderr.count("\n") == 1, (args, proc.stderr)
        assert "inside the workspace" in proc.stderr
    assert record.read_text() == before and sorted(p.name for p in outside.iterdir()) == [
        "0001-x.md"
    ]


def test_an_adr_dir_marker_that_is_a_link_or_holds_a_nul_is_refused_without_echoing_it(
    tmp_path: Path,
) -> None:
    secret = tmp_path / "id_key"
    secret.write_text("-----SECRET FIRST LINE-----\n")
    repo = Repo(tmp_path / "r")
    (repo.path / ".adr-dir").symlink_to(secret)
    proc = repo.zg("list")
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and ".adr-dir" in proc.stderr
    assert "SECRET" not in proc.stderr + proc.stdout
    (repo.path / ".adr-dir").unlink()
    repo.write(".adr-dir", "doc/\0adr\n")
    proc = repo.zg("list")
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and ".adr-dir" in proc.stderr, (
        proc.stderr
    )
