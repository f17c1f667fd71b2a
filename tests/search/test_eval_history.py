"""`zg eval --from-history N` scores search on a repository's own commits: a real git history with merges,
sweeps, binary-only and deletion-only commits, a real index and the real `zg`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from conftest import git
from corpus import assert_one_line_error, json_out, make_repo, run_zg, user_env, write_files

RETRY = '''\
"""Network helpers."""

import time


def retry_with_backoff(call, attempts=5, base_delay=0.5):
    """Call `call`; on failure wait exponentially longer before each retry."""
    for attempt in range(attempts):
        try:
            return call()
        except ConnectionError:
            time.sleep(base_delay * (2 ** attempt))
    return call()
'''

LOADER = '''\
"""Configuration files."""

import yaml


def load_yaml_config(path):
    """Read a YAML configuration file into a dict of settings, with defaults for missing keys."""
    with open(path, encoding="utf-8") as handle:
        settings = yaml.safe_load(handle) or {}
    settings.setdefault("port", 8080)
    settings.setdefault("debug", False)
    return settings
'''

SESSIONS = '''\
"""Signed session cookies."""

import hashlib
import hmac


def sign_session_cookie(secret, value):
    """Sign a session cookie value with HMAC so a visitor cannot forge it."""
    digest = hmac.new(secret, value.encode(), hashlib.sha256).hexdigest()
    return f"{value}.{digest}"
'''


def _commit(
    root: Path, message: str, files: dict[str, str | bytes] | None = None, remove: str | None = None
) -> str:
    if files:
        write_files(root, files)
        git(root, "add", *files)
    if remove:
        git(root, "rm", "-q", remove)
    git(root, "commit", "-q", "-m", message)
    return git(root, "rev-parse", "HEAD").strip()


@pytest.fixture(scope="module")
def history(
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[Path, dict[str, str], dict[str, Any], dict[str, str]]:
    base = tmp_path_factory.mktemp("history")
    root = make_repo(
        base / "repo", {f"pkg/mod{i}.py": f"def helper_{i}():\n    return {i}\n" for i in range(25)}
    )
    shas = {
        "retry": _commit(
            root, "Retry network calls with exponential backoff (#12)", {"net/retry.py": RETRY}
        )
    }
    shas["config"] = _commit(
        root, "Load settings from a YAML configuration file", {"conf/loader.py": LOADER}
    )
    _commit(root, "Add the logo", {"assets/logo.png": b"\x89PNG\r\n\x1a\n\x00\x00\x00binary"})
    _commit(root, "Drop the old helper", remove="pkg/mod3.py")
    git(root, "checkout", "-q", "-b", "cookies")
    shas["cookies"] = _commit(root, "Sign session cookies with HMAC", {"web/sessions.py": SESSIONS})
    git(root, "checkout", "-q", "main")
    git(root, "merge", "-q", "--no-ff", "-m", "Merge branch cookies", "cookies")
    env = user_env(base)
    doc = json_out(run_zg("eval", "--from-history", "10", "--json", cwd=root, env=env))
    return root, env, doc, shas


def test_commits_become_queries_and_sweeps_merges_and_unindexed_commits_are_skipped(history):
    _, _, doc, shas = history
    assert doc["skipped"] == {"merge": 1, "too_many_files": 1, "no_indexed_file": 2}
    assert doc["commits"] == 3
    queries = {q["commit"]: q for q in doc["per_query"]}
    assert set(queries) == set(shas.values())
    assert (
        queries[shas["retry"]]["query"] == "Retry network calls with exponential backoff"
    )  # no `(#12)`
    assert queries[shas["retry"]]["top"][0].startswith("net/retry.py:")
    assert queries[shas["config"]]["mrr"] == 1.0


def test_figures_carry_a_bootstrap_interval(history):
    _, _, doc, _ = history
    for name in ("ndcg@10", "mrr"):
        figure = doc[name]
        assert (
            figure["n"] == 3 and 0.0 <= figure["ci"][0] <= figure["value"] <= figure["ci"][1] <= 1.0
        )
    mean = sum(q["ndcg@10"] for q in doc["per_query"]) / 3
    assert doc["ndcg@10"]["value"] == round(mean, 4)


def test_text_report_and_bad_input(history, tmp_path):
    root, env, _, _ = history
    proc = run_zg("eval", "--from-history", "10", cwd=root, env=env)
    assert proc.returncode == 0, proc.stderr
    assert (
        "3 commits scored" in proc.stdout and "95% CI" in proc.stdout and "1 merge" in proc.stdout
    )
    assert_one_line_error(
        run_zg("eval", "--from-history", "0", cwd=root, env=env), "--from-history"
    )
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "a.py").write_text("def a():\n    return 1\n")
    assert_one_line_error(
        run_zg("eval", "--from-history", "5", cwd=plain, env=env), "not a git repository"
    )
