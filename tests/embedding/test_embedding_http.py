"""The Ollama and OpenAI clients against a real HTTP server on 127.0.0.1."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator

import numpy as np
import pytest
from embedding_server import MISSING_MODEL, EmbeddingServer, vector

from zgrep.embedding.base import EmbeddingError
from zgrep.embedding.http import OllamaEmbedder, OpenAIEmbedder

FAST = {"backoff": 0.01, "max_backoff": 0.02, "timeout": 5.0}
KEY = "sk-test-0123456789abcdef"


@pytest.fixture
def server() -> Iterator[EmbeddingServer]:
    with EmbeddingServer(dim=8) as running:
        yield running


def ollama(server: EmbeddingServer, **options: object) -> OllamaEmbedder:
    return OllamaEmbedder("nomic-embed-text", server.url, **{**FAST, **options})  # type: ignore[arg-type]


def openai(server: EmbeddingServer, **options: object) -> OpenAIEmbedder:
    return OpenAIEmbedder("text-embedding-3-small", server.openai_url, **{**FAST, **options})  # type: ignore[arg-type]


def expected(model: str, texts: list[str], dim: int = 8) -> np.ndarray:
    raw = np.array([vector(model, t, dim) for t in texts], dtype=np.float32)
    return raw / np.linalg.norm(raw, axis=1, keepdims=True)


def test_ollama_embeds_normalised_float32(server: EmbeddingServer) -> None:
    texts = ["def retry():", "class Backoff:", ""]
    with ollama(server) as embedder:
        out = embedder.embed(texts)
        assert embedder.model_id == "ollama:nomic-embed-text"
        assert embedder.dim == 8 and len(server.requests) == 1  # learned from the batch, no probe
    assert out.dtype == np.float32 and out.shape == (3, 8)
    np.testing.assert_allclose(np.linalg.norm(out, axis=1), 1.0, rtol=1e-5)
    np.testing.assert_allclose(out[:2], expected("nomic-embed-text", texts[:2]), rtol=1e-5)
    assert server.requests[0].path == "/api/embed"
    assert server.requests[0].body["input"][2] == " "  # empty text sent as a space


def test_dim_is_probed_once_when_not_configured(server: EmbeddingServer) -> None:
    with ollama(server) as embedder:
        assert embedder.dim == 8 and embedder.dim == 8
        assert len(server.requests) == 1
        assert embedder.embed_query("query").shape == (8,)


def test_openai_orders_by_index_and_names_host(server: EmbeddingServer) -> None:
    texts = [f"text {i}" for i in range(5)]
    with openai(server) as embedder:
        out = embedder.embed(texts)
        assert (
            embedder.model_id
            == f"openai:text-embedding-3-small@{server.url.removeprefix('http://')}"
        )
    np.testing.assert_allclose(out, expected("text-embedding-3-small", texts), rtol=1e-5)
    assert server.requests[0].path == "/v1/embeddings"


def test_batches_150_texts_as_64_64_22(server: EmbeddingServer) -> None:
    texts = [f"chunk {i}" for i in range(150)]
    with ollama(server) as embedder:
        out = embedder.embed(texts)
    assert [r.batch_size for r in server.requests] == [64, 64, 22]
    np.testing.assert_allclose(out, expected("nomic-embed-text", texts), rtol=1e-5)


def test_recovers_after_two_500s(server: EmbeddingServer) -> None:
    server.fail(500, times=2)
    with ollama(server) as embedder:
        assert embedder.embed(["x"]).shape == (1, 8)
    assert len(server.requests) == 3


def test_persistent_500_gives_one_line_error_after_bounded_attempts(
    server: EmbeddingServer,
) -> None:
    server.fail(503, times=100)
    with ollama(server, max_retries=3) as embedder, pytest.raises(EmbeddingError) as caught:
        embedder.embed(["x"])
    assert len(server.requests) == 4
    message = str(caught.value)
    assert "\n" not in message
    assert (
        f"{server.url}/api/embed" in message
        and "HTTP 503" in message
        and "after 4 attempts" in message
    )


def test_small_retry_after_is_honoured(server: EmbeddingServer) -> None:
    server.fail(429, retry_after="0.3")
    started = time.monotonic()
    with openai(server) as embedder:
        embedder.embed(["x"])
    assert time.monotonic() - started >= 0.3
    assert len(server.requests) == 2


def test_large_retry_after_falls_back_to_backoff(server: EmbeddingServer) -> None:
    server.fail(429, retry_after="3600")
    started = time.monotonic()
    with openai(server) as embedder:
        embedder.embed(["x"])
    assert (
        time.monotonic() - started < 600
    )  # the hour-long Retry-After was not slept (hang guard, not a speed claim)
    assert len(server.requests) == 2


def test_timeout_names_the_url(server: EmbeddingServer) -> None:
    server.stall(5.0, times=10)
    with (
        ollama(server, timeout=0.2, max_retries=1) as embedder,
        pytest.raises(EmbeddingError) as caught,
    ):
        embedder.embed(["x"])
    assert len(server.requests) == 2  # gave up after one retry instead of waiting out the stall
    assert f"{server.url}/api/embed" in str(caught.value) and "timed out" in str(caught.value)


def test_unreachable_server_is_a_clear_error() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    embedder = OllamaEmbedder("m", f"http://127.0.0.1:{port}", max_retries=1, **FAST)  # type: ignore[arg-type]
    with pytest.raises(EmbeddingError, match="cannot be reached.*check that the server is running"):
        embedder.embed(["x"])


def test_400_is_not_retried(server: EmbeddingServer) -> None:
    server.fail(400, body={"error": {"message": "input too long"}}, times=5)
    with (
        openai(server) as embedder,
        pytest.raises(EmbeddingError, match=r"HTTP 400 \(input too long\)"),
    ):
        embedder.embed(["x"])
    assert len(server.requests) == 1


def test_missing_ollama_model_says_how_to_pull(server: EmbeddingServer) -> None:
    embedder = OllamaEmbedder(MISSING_MODEL, server.url, **FAST)  # type: ignore[arg-type]
    with pytest.raises(EmbeddingError, match=f"ollama pull {MISSING_MODEL}"):
        embedder.embed(["x"])
    assert len(server.requests) == 1


def test_malformed_json_is_an_error(server: EmbeddingServer) -> None:
    server.malformed()
    with ollama(server) as embedder, pytest.raises(EmbeddingError, match="malformed response"):
        embedder.embed(["x"])


def test_wrong_dimension_is_an_error(server: EmbeddingServer) -> None:
    with (
        ollama(server, dim=16) as embedder,
        pytest.raises(EmbeddingError, match="8-d vectors, expected 16"),
    ):
        embedder.embed(["x"])


def test_bearer_header_only_when_a_key_is_set(
    server: EmbeddingServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with openai(server) as embedder:
        embedder.embed(["x"])
    assert "authorization" not in server.requests[-1].headers

    monkeypatch.setenv("ZG_TEST_KEY", KEY)
    with openai(server, api_key_env="ZG_TEST_KEY") as embedder:
        embedder.embed(["x"])
    assert server.requests[-1].headers["authorization"] == f"Bearer {KEY}"


def test_api_key_never_in_error_text(
    server: EmbeddingServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ZG_TEST_KEY", KEY)
    server.fail(401, body={"error": {"message": f"Incorrect API key provided: {KEY}"}})
    with (
        openai(server, api_key_env="ZG_TEST_KEY") as embedder,
        pytest.raises(EmbeddingError) as caught,
    ):
        embedder.embed(["x"])
    assert KEY not in str(caught.value) and "$ZG_TEST_KEY" in str(caught.value)
    assert len(server.requests) == 1  # 401 is not retried

    server.fail(500, times=10, body={"error": f"upstream echoed {KEY}"})
    with (
        openai(server, api_key_env="ZG_TEST_KEY", max_retries=1) as embedder,
        pytest.raises(EmbeddingError) as caught,
    ):
        embedder.embed(["x"])
    assert KEY not in str(caught.value)


@pytest.mark.parametrize("url", ["localhost:11434", "::::", "http://"])
def test_bad_url_is_rejected_up_front(url: str) -> None:
    with pytest.raises(EmbeddingError, match="not an http"):
        OllamaEmbedder("m", url)
