"""Grep semantics for noise: a query that nothing in the code spells and that the dense model finds
only weakly similar gets no hits and exit status 1 (a real repo, real Milvus Lite, the real `zg`)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from corpus import make_repo, run_zg, user_env


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    base = tmp_path_factory.mktemp("noise")
    root = make_repo(base / "repo")
    env = user_env(base)
    proc = run_zg("index", cwd=root, env=env)
    assert proc.returncode == 0, proc.stderr
    return root, env


@pytest.mark.parametrize("query", ["qzxvbnmwpl", "qzxvbnmwpl vvkrtqz", "xkcdqq"])
def test_gibberish_finds_nothing(repo, query):
    root, env = repo
    proc = run_zg("search", query, cwd=root, env=env)
    assert (proc.returncode, proc.stdout) == (1, ""), proc.stderr
    proc = run_zg("search", query, "--json", cwd=root, env=env)
    assert proc.returncode == 1 and json.loads(proc.stdout)["hits"] == []


def test_one_real_word_among_noise_still_finds_its_code(repo):
    root, env = repo
    proc = run_zg("search", "qzxvbnmwpl backoff", "--json", cwd=root, env=env)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["hits"][0]["path"] == "src/net/retry.py"


def test_a_paraphrase_with_lexical_support_keeps_its_hits(repo):
    root, env = repo
    proc = run_zg("search", "wait longer after each failed attempt", "--json", cwd=root, env=env)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["hits"][0]["path"] == "src/net/retry.py"
