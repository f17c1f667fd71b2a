"""Remote embedders and their API key: a named key variable that is unset fails before any request, and a key
echoed back by the server never reaches an error message, whatever its case or encoding."""

from __future__ import annotations

import os
from collections.abc import Iterator
from urllib.parse import quote

import pytest
from embedding_server import EmbeddingServer

import zgrun
from conftest import git
from zgrep.embedding.base import EmbeddingError
from zgrep.embedding.factory import make_embedder
from zgrep.embedding.http import OllamaEmbedder, OpenAIEmbedder

FAST = {"backoff": 0.01, "max_backoff": 0.02, "timeout": 5.0}
KEY = "sk-Proj+Secret/Key=9xYzAbC"


@pytest.fixture
def server() -> Iterator[EmbeddingServer]:
    with EmbeddingServer(dim=8) as running:
        yield running


@pytest.mark.parametrize("cls,url", [(OpenAIEmbedder, "openai_url"), (OllamaEmbedder, "url")])
def test_a_named_key_variable_that_is_unset_sends_nothing(server, monkeypatch, cls, url):
    monkeypatch.delenv("ZG_TEST_KEY", raising=False)
    with pytest.raises(EmbeddingError) as caught:
        cls("m", getattr(server, url), api_key_env="ZG_TEST_KEY", **FAST).embed(["x"])
    message = str(caught.value)
    assert "$ZG_TEST_KEY is not set" in message and "\n" not in message
    assert server.requests == []


def test_the_openai_api_needs_its_default_key(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(EmbeddingError, match=r"\$OPENAI_API_KEY is not set"):
        make_embedder("openai", "text-embedding-3-small")


def test_a_keyless_compatible_server_needs_no_key(server, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with OpenAIEmbedder("m", server.openai_url, **FAST) as embedder:
        assert embedder.embed(["x"]).shape == (1, 8)
    assert "authorization" not in server.requests[-1].headers


def test_zg_index_names_the_unset_variable_and_sends_nothing(server, tmp_path):
    root = tmp_path / "ws"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    (root / "a.py").write_text("def retry_with_backoff(call):\n    return call()\n")
    (root / ".zgrep.toml").write_text(
        f'[embedding]\nprovider = "openai"\nmodel = "m"\nurl = "{server.openai_url}"\nallow_remote = true\n'
        'api_key_env = "ZG_TEST_KEY"\n'
    )
    env = {k: v for k, v in os.environ.items() if k != "ZG_TEST_KEY" and not k.startswith("ZG_")}
    trust = zgrun.in_process("trust", cwd=root, env=env)
    assert trust.returncode == 0, trust.stderr
    for args in (("index",), ("search", "retry")):
        proc = zgrun.in_process(*args, "--mode", "direct", cwd=root, env=env)
        assert proc.returncode == 2, (proc.returncode, proc.stderr)
        lines = proc.stderr.strip().splitlines()
        assert (
            len(lines) == 1
            and "$ZG_TEST_KEY is not set" in lines[0]
            and "Traceback" not in proc.stderr
        )
    assert server.requests == []


@pytest.mark.parametrize(
    "echo",
    [
        KEY,
        KEY.upper(),
        KEY.lower(),
        quote(KEY, safe=""),
        quote(KEY, safe="").lower(),
        "x" * 170 + KEY,
    ],
)
@pytest.mark.parametrize("status", [401, 500])
def test_an_echoed_key_is_masked_in_any_case_or_encoding(server, monkeypatch, echo, status):
    monkeypatch.setenv("ZG_TEST_KEY", KEY)
    server.fail(status, times=5, body={"error": {"message": f"bad key {echo} given"}})
    with (
        OpenAIEmbedder(
            "m", server.openai_url, api_key_env="ZG_TEST_KEY", max_retries=1, **FAST
        ) as embedder,
        pytest.raises(EmbeddingError) as caught,
    ):
        embedder.embed(["x"])
    message = str(caught.value).lower()
    for secret in (KEY, quote(KEY, safe=""), KEY[:12]):
        assert secret.lower() not in message, message
    assert "***" in message
