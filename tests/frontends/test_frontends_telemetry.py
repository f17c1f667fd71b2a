"""Opt-in telemetry: nothing is written by default (nor when only a cloned repository's file asks for it);
when the user turns it on, each search/index/status adds one line without code, paths or query text, and
`zg stats` summarises the lines with bootstrap intervals."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from corpus import make_repo
from daemon_helpers import User

SECRET_QUERY = "frobnicate_the_quux"  # appears only in a query: must never reach the log by default
FILES: dict[str, str | bytes] = {
    "billing/invoice.py": 'def total_with_tax(amount, rate):\n    """Invoice total including tax."""\n'
    "    subtotal = amount\n    tax = subtotal * rate\n    return subtotal + tax\n",
}
ALLOWED = {
    "ts",
    "command",
    "frontend",
    "mode",
    "took_ms",
    "version",
    "hits",
    "top_score",
    "queries_count",
    "exit",
    "changed",
    "deleted",
    "unchanged",
    "chunks",
    "embedded",
    "files",
    "index_took_s",
    "dry_run",
    "indexed",
}


@pytest.fixture
def setup(tmp_path: Path) -> tuple[User, Path, Path]:
    user = User(tmp_path / "user")
    user.env["ZG_MODE"] = "direct"  # every line from one mode, and no daemon started on the side
    root = make_repo(tmp_path / "repo", FILES)
    return user, root, Path(user.env["XDG_STATE_HOME"]) / "zgrep" / "telemetry.jsonl"


def user_config(user: User, text: str) -> None:
    path = Path(user.env["XDG_CONFIG_HOME"]) / "zgrep" / "config.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_off_by_default_and_a_repository_cannot_turn_it_on(setup: tuple[User, Path, Path]) -> None:
    user, root, log = setup
    (root / ".zgrep.toml").write_text("[telemetry]\nenabled = true\ninclude_queries = true\n")
    assert user.zg("status", cwd=root).returncode == 0
    assert (
        user.zg("search", "invoice total", "--no-index", cwd=root).returncode == 2
    )  # recorded too, when on
    assert not log.exists()
    stats = user.zg("stats", cwd=root)
    assert stats.returncode == 1 and stats.stdout == ""
    notice, off = stats.stderr.splitlines()  # the untrusted file's settings are named as ignored
    assert (
        "ignored telemetry.enabled, telemetry.include_queries" in notice
        and "telemetry is off" in off
    )


def test_on_lines_hold_no_code_paths_or_queries_and_stats_summarise_them(
    setup: tuple[User, Path, Path],
) -> None:
    user, root, log = setup
    user_config(user, "[telemetry]\nenabled = true\n")
    assert user.zg("index", cwd=root).returncode == 0
    assert user.zg("search", "invoice total with tax", cwd=root).returncode == 0
    assert user.zg("search", SECRET_QUERY, "--mode-search", "lexical", cwd=root).returncode == 1
    assert user.zg("search", "tax", "-g", "billing/[", cwd=root).returncode == 2
    assert user.zg("status", cwd=root).returncode == 0

    text = log.read_text()
    lines = [json.loads(line) for line in text.splitlines()]
    assert [d["command"] for d in lines] == ["index", "search", "search", "search", "status"]
    assert [d["exit"] for d in lines if d["command"] == "search"] == [0, 1, 2]
    assert all(set(d) <= ALLOWED for d in lines), lines
    for leak in (SECRET_QUERY, "invoice", "billing", "tax", str(root), "def "):
        assert leak not in text, leak
    assert lines[0]["changed"] == 1 and lines[1]["hits"] >= 1 and lines[2]["hits"] == 0
    assert (log.stat().st_mode & 0o777) == 0o600

    with log.open("a") as fh:
        fh.write("{not json\n\x00\n")  # a damaged line is skipped, not fatal
    doc = json.loads(user.zg("stats", "--json", cwd=root).stdout)
    search = doc["commands"]["search"]
    assert (search["runs"], search["errors"]) == (3, 1)
    assert search["zero_hit_rate"]["value"] == 0.5
    low, high = search["p50_ms"]["ci"]
    assert low <= search["p50_ms"]["value"] <= high
    assert doc["commands"]["index"]["changed_p50"]["value"] == 1
    human = user.zg("stats", cwd=root)
    assert human.returncode == 0 and "zero hits 50.0%" in human.stdout and "p95" in human.stdout

    user_config(user, "[telemetry]\nenabled = true\ninclude_queries = true\n")
    assert user.zg("search", SECRET_QUERY, "-g", "billing/[", cwd=root).returncode == 2
    assert json.loads(log.read_text().splitlines()[-1])["queries"] == [SECRET_QUERY]
