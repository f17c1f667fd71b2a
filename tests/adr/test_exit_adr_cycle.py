"""`zg adr update --superseded-by` refuses a link that would close a supersession cycle (which `zg adr check`
then reports on every commit), and leaves every file as it was."""

from __future__ import annotations

from pathlib import Path

import pytest

from test_adr_kit import Repo, adr_text

IDS = ("ADR-0001", "ADR-0002", "ADR-0003")


@pytest.fixture
def repo(tmp_path: Path) -> Repo:
    r = Repo(tmp_path / "repo")
    for n, adr_id in enumerate(IDS, 1):
        r.write(f"docs/adr/000{n}-d{n}.md", adr_text(adr_id, title=f"Decision {n}"))
    r.commit("init")
    return r


def snapshot(repo: Repo) -> dict[str, str]:
    return {p.name: p.read_text() for p in sorted((repo.path / "docs" / "adr").iterdir())}


def assert_refused(repo: Repo, *args: str, ring: str) -> None:
    before = snapshot(repo)
    proc = repo.zg("update", *args)
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "cycle" in lines[0] and ring in lines[0], proc.stderr
    assert proc.stdout == "" and snapshot(repo) == before
    assert repo.zg("check").returncode == 0, repo.zg("check").stdout


def test_two_adrs_cannot_supersede_each_other(repo: Repo) -> None:
    assert repo.zg("update", "1", "--superseded-by", "2").returncode == 0
    assert_refused(repo, "2", "--superseded-by", "1", ring="ADR-0001 -> ADR-0002 -> ADR-0001")
    assert repo.commit("supersede").returncode == 0


def test_a_longer_cycle_is_refused_too(repo: Repo) -> None:
    assert repo.zg("update", "1", "--superseded-by", "2").returncode == 0
    assert repo.zg("update", "2", "--superseded-by", "3").returncode == 0
    assert_refused(
        repo, "3", "--superseded-by", "1", ring="ADR-0001 -> ADR-0002 -> ADR-0003 -> ADR-0001"
    )
    # a link that closes no cycle is still written
    assert repo.zg("update", "1", "--superseded-by", "3").returncode == 0
    assert repo.zg("check").returncode == 0


def test_a_cycle_through_supersedes_alone_is_refused(repo: Repo) -> None:
    """ADR-0002 lists ADR-0001 in `supersedes` (written by hand, no back link yet)."""
    path = next((repo.path / "docs" / "adr").glob("0002-*.md"))
    path.write_text(
        path.read_text().replace("change_type: api\n", "change_type: api\nsupersedes: [ADR-0001]\n")
    )
    proc = repo.zg("update", "2", "--superseded-by", "1")
    assert proc.returncode == 2 and "cycle" in proc.stderr, proc.stderr
