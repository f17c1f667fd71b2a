"""`zg adr check --staged --suggest`: live ADRs close to the staged change, by hybrid search over the ADR
directory (direct, and through a real daemon from the installed pre-commit hook); advisory, never blocking."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from daemon_helpers import User
import zgrun
from test_adr_kit import ZG, Repo

CLIENT = '''"""Outbound HTTP."""

import time


def fetch_with_retry(session, url, attempts=4, base_delay=0.25):
    for attempt in range(attempts):
        try:
            return session.get(url)
        except ConnectionError:
            time.sleep(base_delay * 2 ** attempt)
'''
SESSIONS = 'def set_session_cookie(response, sid):\n    response.set_cookie("sid", sid, httponly=True, max_age=43200)\n'
NUMBERS = "def round_half_up(value):\n    return int(value + 0.5)\n"
ADRS = {
    "0001-retry-idempotent-http-requests-with-backoff.md": "# 1. Retry idempotent HTTP requests with backoff\n\nDate: 2024-01-01\n\n## Status\n\nAccepted\n\n"
    "## Decision\n\nOutbound HTTP GET requests are retried with exponential backoff and random jitter; "
    "POST is never retried.\n",
    "0002-log-structured-json.md": "---\nstatus: accepted\n---\n# Log structured JSON\n\n## Decision Outcome\n\n"
    "Services log JSON objects through the logging module; no print statements.\n",
    "0003-session-cookies.md": "---\nid: ADR-0003\ntitle: Session cookies are HttpOnly\nstatus: accepted\n"
    "code_anchors:\n  - {path: src/web/sessions.py, symbol: set_session_cookie}\n---\n\n"
    "The session cookie is HttpOnly and Secure and expires after 12 hours.\n",
    "0004-money-as-integer-cents.md": "# 4. Money as integer cents\n\n## Status\n\nAccepted\n\n## Decision\n\n"
    "Amounts are integer cents; floats never hold money.\n",
    "0005-use-pytest.md": "# 5. Use pytest\n\n## Status\n\nDeprecated\n\n## Decision\n\nTests use pytest fixtures.\n",
}
RETRY = CLIENT.replace(
    "            time.sleep(base_delay * 2 ** attempt)\n",
    "            jitter = random.uniform(0, base_delay)\n"
    "            time.sleep(base_delay * 2 ** attempt + jitter)\n",
)


@pytest.fixture(scope="module")
def user(tmp_path_factory: pytest.TempPathFactory) -> User:
    return User(tmp_path_factory.mktemp("suggest-user"))


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory, user: User) -> Iterator[Repo]:
    r = Repo(tmp_path_factory.mktemp("suggest") / "shop")
    r.env.update(
        {
            k: user.env[k]
            for k in (
                "HOME",
                "XDG_RUNTIME_DIR",
                "XDG_STATE_HOME",
                "XDG_CONFIG_HOME",
                "XDG_CACHE_HOME",
            )
        }
    )
    for rel, text in {
        "src/http/client.py": CLIENT,
        "src/web/sessions.py": SESSIONS,
        "src/util/numbers.py": NUMBERS,
        **{f"docs/adr/{name}": text for name, text in ADRS.items()},
    }.items():
        r.write(rel, text)
    assert r.commit("base").returncode == 0
    indexed = zgrun.in_process("index", "--mode", "direct", cwd=r.path, env=r.env)
    assert indexed.returncode == 0, indexed.stderr
    yield r
    r.run(ZG, "server", "off")


def staged(repo: Repo, rel: str, text: str, *args: str) -> tuple[int, dict]:
    """Stage `text` as `rel`, run `check --staged --suggest --json ARGS`, unstage; (exit code, report)."""
    repo.write(rel, text)
    repo.git("add", rel)
    try:
        proc = repo.zg("check", "--staged", "--suggest", "--json", *args)
        assert proc.stderr == "", proc.stderr
        return proc.returncode, json.loads(proc.stdout)
    finally:
        repo.git("reset", "-q", "--hard", "HEAD")


def test_names_the_close_decision_and_is_silent_otherwise(repo: Repo) -> None:
    code, report = staged(repo, "src/http/client.py", RETRY, "--mode", "direct")
    assert code == 0 and [s["id"] for s in report["suggestions"]] == ["ADR-0001"]
    assert report["suggestions"][0]["files"] == ["src/http/client.py"]
    code, report = staged(
        repo,
        "src/util/numbers.py",
        NUMBERS + "\n\ndef clamp(value, low, high):\n    return max(low, min(high, value))\n",
        "--mode",
        "direct",
    )
    assert code == 0 and report["suggestions"] == []


def test_an_adr_already_governing_the_change_is_not_suggested_again(repo: Repo) -> None:
    code, report = staged(
        repo, "src/web/sessions.py", SESSIONS.replace("43200", "2592000"), "--mode", "direct"
    )
    assert code == 0 and [g["id"] for g in report["governing"]] == ["ADR-0003"]
    assert "ADR-0003" not in [s["id"] for s in report["suggestions"]]


def test_without_an_index_it_says_so_once_and_passes(tmp_path: Path) -> None:
    repo = Repo(tmp_path)
    repo.write(
        "docs/adr/0001-retry.md", ADRS["0001-retry-idempotent-http-requests-with-backoff.md"]
    )
    repo.write("src/http/client.py", RETRY)
    repo.git("add", "-A")
    proc = repo.zg("check", "--staged", "--suggest", "--mode", "direct")
    assert proc.returncode == 0 and "may concern" not in proc.stdout
    assert (
        proc.stderr.count("\n") == 1 and "not indexed" in proc.stderr and "zg index" in proc.stderr
    )
    assert repo.zg("check", "--suggest").returncode == 2


@pytest.mark.e2e
def test_the_daemon_answers_and_the_installed_hook_prints_it(repo: Repo, user: User) -> None:
    repo.run(ZG, "hooks", "install", check=True)
    repo.write("src/http/client.py", RETRY)
    proc = repo.commit("retry with jitter, no daemon")
    assert (
        proc.returncode == 0 and "may concern" not in proc.stdout + proc.stderr
    )  # no daemon: no search
    repo.git("reset", "-q", "--hard", "HEAD~1")
    user.start()
    code, report = staged(repo, "src/http/client.py", RETRY, "--mode", "server")
    assert code == 0 and [s["id"] for s in report["suggestions"]] == ["ADR-0001"]
    repo.write("src/http/client.py", RETRY)
    proc = repo.commit("retry with jitter")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (
        "zgrep: this change may concern ADR-0001 (Retry idempotent HTTP requests with backoff): "
        "src/http/client.py" in proc.stderr
    )


def test_an_added_line_that_reads_like_a_file_header_stays_in_the_query(tmp_path: Path) -> None:
    """`git diff -U0` shows an added `++ n;` as `+++ n;`: a line of the change, not the next file's header."""
    from zgrep.adr.suggest import added_lines

    repo = Repo(tmp_path)
    repo.write("src/count.c", "int n;\n")
    assert repo.commit("base").returncode == 0
    repo.write("src/count.c", "int n;\nvoid up(void) {\n++ n;\nreport_counter(n);\n}\n")
    repo.write("src/other.c", "int other;\n")
    repo.git("add", "-A")
    assert added_lines(tmp_path, ()) == {
        "src/count.c": [(2, "void up(void) {"), (3, "++ n;"), (4, "report_counter(n);"), (5, "}")],
        "src/other.c": [(1, "int other;")],
    }


@pytest.mark.parametrize("config", [(), ("diff.noprefix", "true"), ("diff.mnemonicPrefix", "true")])
def test_added_lines_of_unusual_names_and_prefix_settings(
    tmp_path: Path, config: tuple[str, ...]
) -> None:
    """Paths as git writes them in the diff are read back: C-quoted non-ASCII names, a name holding a space,
    and whatever diff prefixes the user's git config asks for."""
    from zgrep.adr.suggest import added_lines

    repo = Repo(tmp_path)
    if config:
        repo.git("config", *config)
    repo.write("src/café.py", "def price():\n    return 1\n")
    repo.write("src/two words.py", "def other():\n    return 2\n")
    repo.git("add", "-A")
    assert added_lines(tmp_path, ()) == {
        "src/café.py": [(1, "def price():"), (2, "    return 1")],
        "src/two words.py": [(1, "def other():"), (2, "    return 2")],
    }
