"""Embedding over HTTP: Ollama (``POST /api/embed``) and OpenAI-compatible (``POST /embeddings``)."""

from __future__ import annotations

import json
import os
import random
import re
import time
from typing import Any, Self
from urllib.parse import quote

import httpx
import numpy as np

from zgrep.embedding.base import EmbeddingError

_PROBE = "dimension probe"


class _HTTPEmbedder:
    """Shared client: batching, timeouts, bounded retries with backoff; subclasses map the wire
    format."""

    provider = ""
    kind = ""
    endpoint = ""
    example_url = ""
    # the key variable read when none is named (optional unless the host is in keyed_hosts)
    default_key_env = ""
    keyed_hosts: frozenset[str] = frozenset()

    def __init__(
        self,
        model: str,
        base_url: str,
        *,
        api_key_env: str | None = None,
        dim: int | None = None,
        batch_size: int = 64,
        timeout: float = 30.0,
        connect_timeout: float = 5.0,
        max_retries: int = 3,
        backoff: float = 0.5,
        max_backoff: float = 8.0,
        max_retry_after: float = 30.0,
    ) -> None:
        try:
            url = httpx.URL(base_url.rstrip("/") + self.endpoint)
        except httpx.InvalidURL:
            url = httpx.URL()
        if url.scheme not in ("http", "https") or not url.host:
            raise EmbeddingError(
                f"{self.provider} URL {base_url!r} is not an http(s) URL: pass one like {self.example_url}"
            )
        self.model = model
        self.url = url
        self.batch_size = max(1, batch_size)
        self.timeout = timeout
        self.max_retries = max(0, max_retries)
        self.backoff = backoff
        self.max_backoff = max_backoff
        self.max_retry_after = max_retry_after
        self._dim = dim
        # Shown in errors: no credentials, no query string.
        self._shown_url = str(url.copy_with(username=None, password=None, query=None))
        self._key_env = api_key_env or self.default_key_env
        self._key = os.environ.get(self._key_env, "") if self._key_env else ""
        if not self._key and (api_key_env or url.host in self.keyed_hosts):
            raise self._error(
                f"${self._key_env} is not set",
                f"export {self._key_env} with your API key (nothing was sent)",
            )
        headers = {"Authorization": f"Bearer {self._key}"} if self._key else {}
        self._client = httpx.Client(
            headers=headers,
            timeout=httpx.Timeout(timeout, connect=min(connect_timeout, timeout)),
        )

    @property
    def dim(self) -> int:
        """Vector width; embeds one probe text on first access when not configured."""
        if self._dim is None:
            self._embed_batch([_PROBE])
        assert self._dim is not None
        return self._dim

    def embed(self, texts: list[str]) -> np.ndarray:
        """Embed texts in batches of ``batch_size``; float32 (n, dim), L2-normalised."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        step = self.batch_size
        return np.vstack(
            [self._embed_batch(texts[i : i + step]) for i in range(0, len(texts), step)]
        )

    def embed_query(self, text: str) -> np.ndarray:
        """Embed one query; shape (dim,)."""
        vector: np.ndarray = self._embed_batch([text])[0]
        return vector

    def close(self) -> None:
        """Close the connection pool."""
        self._client.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _payload(self, texts: list[str]) -> dict[str, Any]:
        # Some servers reject empty strings; a single space embeds as "nothing".
        return {"model": self.model, "input": [t if t.strip() else " " for t in texts]}

    def _vectors(self, body: Any) -> list[list[float]]:
        raise NotImplementedError

    def _not_found_fix(self) -> str:
        raise NotImplementedError

    def _embed_batch(self, texts: list[str]) -> np.ndarray:
        response = self._post(texts)
        try:
            arr = np.asarray(self._vectors(response.json()), dtype=np.float32)
        except (ValueError, KeyError, TypeError, IndexError) as exc:
            raise self._error(
                f"malformed response ({type(exc).__name__})",
                f"check that the URL points at an {self.kind} embeddings endpoint",
            ) from None
        if arr.ndim != 2 or arr.shape[0] != len(texts) or arr.shape[1] == 0:
            raise self._error(
                f"returned an array of shape {arr.shape} for {len(texts)} inputs",
                "check that the server is an embeddings endpoint for this model",
            )
        if self._dim is None:
            self._dim = arr.shape[1]
        elif arr.shape[1] != self._dim:
            raise self._error(
                f"returned {arr.shape[1]}-d vectors, expected {self._dim}",
                "rebuild the index with `zg index --full` if the model changed",
            )
        norms = np.linalg.norm(arr, axis=1, keepdims=True)
        normalised: np.ndarray = arr / np.maximum(norms, np.float32(1e-12))
        return normalised

    def _post(self, texts: list[str]) -> httpx.Response:
        attempts = self.max_retries + 1
        for attempt in range(attempts):
            retry_after = None
            try:
                response = self._client.post(self.url, json=self._payload(texts))
            except httpx.TimeoutException as exc:
                what = f"timed out ({type(exc).__name__}, timeout {self.timeout:g}s)"
                fix = "check the server, raise the timeout or lower the batch size"
            except httpx.TransportError as exc:
                what = f"cannot be reached ({type(exc).__name__})"
                fix = "check that the server is running and the URL is right"
            else:
                status = response.status_code
                if 200 <= status < 300:
                    return response
                what = f"HTTP {status}{self._detail(response)}"
                fix = self._status_fix(status)
                if status != 429 and status < 500:
                    raise self._error(what, fix)
                retry_after = _retry_after(response)
            if attempt + 1 < attempts:
                time.sleep(self._delay(attempt, retry_after))
        raise self._error(f"{what} after {attempts} attempts", fix)

    def _delay(self, attempt: int, retry_after: float | None) -> float:
        if retry_after is not None and retry_after <= self.max_retry_after:
            return retry_after
        delay: float = min(self.max_backoff, self.backoff * 2**attempt) * random.uniform(0.5, 1.0)
        return delay

    def _status_fix(self, status: int) -> str:
        if status in (401, 403):
            if not self._key_env:
                return "the endpoint wants an API key: set api_key_env to the name of an env variable holding it"
            if self._key:
                return f"check the API key in ${self._key_env}"
            return f"set ${self._key_env} to your API key"
        if status == 404:
            return self._not_found_fix()
        if status == 413:
            return "lower the batch size"
        if status == 429:
            return "the server is rate limiting: lower the batch size or retry later"
        if status >= 500:
            return "the server is failing: check its log or retry later"
        return "check the model name and the input limits (batch size, text length)"

    def _detail(self, response: httpx.Response) -> str:
        try:
            error = response.json().get("error")
            message = error.get("message") if isinstance(error, dict) else error
        except (ValueError, AttributeError):
            message = None
        if not isinstance(message, str):
            message = response.text
        # masked first: a cut key would not match
        message = " ".join(self._mask(message).split())[:200]
        return f" ({message})" if message else ""

    def _mask(self, text: str) -> str:
        """`text` with the API key replaced by ***, however a server echoes it (any case, URL- or
        JSON-escaped)."""
        if not self._key:
            return text
        spellings = {self._key, quote(self._key, safe=""), json.dumps(self._key)[1:-1]}
        pattern = "|".join(re.escape(s) for s in sorted(spellings, key=len, reverse=True))
        return re.sub(pattern, "***", text, flags=re.IGNORECASE)

    def _error(self, what: str, fix: str) -> EmbeddingError:
        return EmbeddingError(
            self._mask(f"{self.provider} embeddings at {self._shown_url}: {what}; {fix}")
        )


class OllamaEmbedder(_HTTPEmbedder):
    """An Ollama server: ``POST {base}/api/embed`` with ``{"model", "input"}`` → ``{"embeddings"}``."""

    provider = "ollama"
    kind = "Ollama"
    endpoint = "/api/embed"
    example_url = "http://127.0.0.1:11434"

    def __init__(
        self, model: str, base_url: str = "http://127.0.0.1:11434", **options: Any
    ) -> None:
        super().__init__(model, base_url, **options)
        self.model_id = f"ollama:{model}"

    def _vectors(self, body: Any) -> list[list[float]]:
        vectors: list[list[float]] = body["embeddings"]
        return vectors

    def _not_found_fix(self) -> str:
        return f"pull the model with `ollama pull {self.model}` (or check the URL)"


class OpenAIEmbedder(_HTTPEmbedder):
    """An OpenAI-compatible server: ``POST {base}/embeddings`` → ``{"data": [{"index",
    "embedding"}]}``."""

    provider = "openai"
    kind = "OpenAI-compatible"
    endpoint = "/embeddings"
    example_url = "https://api.openai.com/v1"
    default_key_env = "OPENAI_API_KEY"
    keyed_hosts = frozenset({"api.openai.com"})

    def __init__(
        self, model: str, base_url: str = "https://api.openai.com/v1", **options: Any
    ) -> None:
        super().__init__(model, base_url, **options)
        port = f":{self.url.port}" if self.url.port else ""
        self.model_id = f"openai:{model}@{self.url.host}{port}"

    def _vectors(self, body: Any) -> list[list[float]]:
        return [item["embedding"] for item in sorted(body["data"], key=lambda item: item["index"])]

    def _not_found_fix(self) -> str:
        return "check the model name and the base URL (it usually ends in /v1)"


def _retry_after(response: httpx.Response) -> float | None:
    """The Retry-After header in seconds, when it is a number (HTTP dates are ignored)."""
    try:
        return max(0.0, float(response.headers.get("retry-after", "")))
    except ValueError:
        return None
