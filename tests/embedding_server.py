"""A real HTTP server on 127.0.0.1 speaking the Ollama and OpenAI embedding APIs, with faults on demand.

with EmbeddingServer(dim=8) as server:
    server.fail(500, times=2)            # the next two requests get HTTP 500
    OllamaEmbedder("m", server.url).embed(["a"])
    server.requests[-1].batch_size       # what the client sent
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np

MISSING_MODEL = "missing-model"  # Ollama answers 404 for this model name


def vector(model: str, text: str, dim: int) -> np.ndarray:
    """The server's deterministic (un-normalised) vector for ``text`` under ``model``."""
    seed = int.from_bytes(hashlib.sha256(f"{model}\0{text}".encode()).digest()[:8], "little")
    return np.random.default_rng(seed).standard_normal(dim) * 3.0


@dataclass
class Request:
    """One request as the server saw it."""

    path: str
    headers: dict[str, str]
    body: Any

    @property
    def batch_size(self) -> int:
        return len(self.body["input"]) if isinstance(self.body, dict) else 0


@dataclass
class _Fault:
    status: int = 0
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""
    stall: float = 0.0


class EmbeddingServer:
    """ThreadingHTTPServer on an ephemeral port; ``url`` is the Ollama base, ``openai_url`` the OpenAI base."""

    def __init__(self, dim: int = 8) -> None:
        self.dim = dim
        self.requests: list[Request] = []
        self._faults: deque[_Fault] = deque()
        self._release = threading.Event()
        self._httpd = _Server(("127.0.0.1", 0), _handler_for(self))
        self.url = f"http://127.0.0.1:{self._httpd.server_address[1]}"
        self.openai_url = f"{self.url}/v1"
        self._thread = threading.Thread(target=self._httpd.serve_forever, args=(0.02,), daemon=True)

    def fail(
        self, status: int, *, times: int = 1, retry_after: str | None = None, body: Any = None
    ) -> None:
        """Answer the next ``times`` requests with ``status`` (JSON ``body``, default an error object)."""
        headers = {"Retry-After": retry_after} if retry_after is not None else {}
        payload = json.dumps(body if body is not None else {"error": f"injected {status}"}).encode()
        self._faults.extend(_Fault(status, headers, payload) for _ in range(times))

    def stall(self, seconds: float, *, times: int = 1) -> None:
        """Sleep ``seconds`` before answering each of the next ``times`` requests (released by ``stop``)."""
        self._faults.extend(_Fault(stall=seconds) for _ in range(times))

    def release(self) -> None:
        """Answer the requests stalled so far now."""
        self._release.set()

    def malformed(self, *, times: int = 1) -> None:
        """Answer the next ``times`` requests with 200 and a body that is not JSON."""
        self._faults.extend(_Fault(200, {}, b"{not json") for _ in range(times))

    def start(self) -> EmbeddingServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._release.set()
        self._httpd.shutdown()
        self._httpd.server_close()

    def __enter__(self) -> EmbeddingServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _answer(self, path: str, body: Any) -> tuple[int, dict[str, str], bytes]:
        fault = self._faults.popleft() if self._faults else None
        if fault and fault.stall:
            self._release.wait(fault.stall)
        elif fault:
            return fault.status, fault.headers, fault.body
        if (
            not isinstance(body, dict)
            or not isinstance(body.get("input"), list)
            or not body.get("model")
        ):
            return 400, {}, json.dumps({"error": "model and input are required"}).encode()
        model, texts = body["model"], body["input"]
        vectors = [vector(model, t, self.dim).tolist() for t in texts]
        if path == "/api/embed":
            if model == MISSING_MODEL:
                return (
                    404,
                    {},
                    json.dumps(
                        {"error": f'model "{model}" not found, try pulling it first'}
                    ).encode(),
                )
            return 200, {}, json.dumps({"model": model, "embeddings": vectors}).encode()
        if path.endswith("/embeddings"):
            # Reversed on purpose: clients must order by "index".
            data = [
                {"object": "embedding", "index": i, "embedding": v} for i, v in enumerate(vectors)
            ][::-1]
            return 200, {}, json.dumps({"object": "list", "data": data, "model": model}).encode()
        return 404, {}, b'{"error": "no such endpoint"}'


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Clients that time out close the socket mid-answer; that is expected here."""


def _handler_for(server: EmbeddingServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True

        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            try:
                body = json.loads(raw)
            except ValueError:
                body = None
            server.requests.append(
                Request(self.path, {k.lower(): v for k, v in self.headers.items()}, body)
            )
            status, headers, payload = server._answer(self.path, body)
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            for name, value in headers.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    return Handler
