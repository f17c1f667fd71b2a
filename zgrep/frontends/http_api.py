"""`zg serve`: a local HTTP JSON API over `frontends.api.Workspace` (standard library server).

GET /search?q=..., /read?path=&start=&end=, /status, /callers?symbol=, /trace?entry=, /adr/constraints?path=,
/adr/search?q=, /adr/check: each answers the JSON the CLI's `--json` prints. Loopback binds answer only
requests addressed to a loopback name (no DNS rebinding); other binds demand `Authorization: Bearer TOKEN`.
"""

from __future__ import annotations

import hmac
import json
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

from zgrep.frontends.api import FrontendError, Workspace
from zgrep.server.runtime import is_loopback
from zgrep.service import ErrorCode

STATUS_OF = {ErrorCode.BAD_REQUEST: 400, ErrorCode.NOT_INDEXED: 409, ErrorCode.WORKSPACE_BUSY: 503,
             ErrorCode.NO_DAEMON: 503, ErrorCode.CONFIG: 400, ErrorCode.UNAUTHORIZED: 401}
Query = dict[str, list[str]]


class Refused(Exception):
    """A request answered with an error status before reaching the workspace."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status, self.code = status, code


def _one(q: Query, name: str, default: str | None = None) -> str | None:
    values = q.get(name)
    return values[-1] if values else default


def _number(q: Query, name: str, kind: type[int] | type[float]) -> Any:
    text = _one(q, name)
    if text is None:
        return None
    try:
        return kind(text)
    except ValueError:
        raise Refused(400, ErrorCode.BAD_REQUEST, f"zg: {name}={text!r} is not {'an integer' if kind is int else 'a number'}") from None


def _required(q: Query, name: str) -> str:
    value = _one(q, name)
    if not value:
        raise Refused(400, ErrorCode.BAD_REQUEST, f"zg: give {name}=...")
    return value


def routes(ws: Workspace) -> dict[str, Callable[[Query], dict[str, Any]]]:
    """Path -> handler of its query parameters (the CLI's flag names, `q` for the query)."""

    def search(q: Query) -> dict[str, Any]:
        return ws.search(q.get("q", []), _number(q, "limit", int), q.get("glob"), q.get("type"), q.get("symbol_type"),
                         q.get("path"), _one(q, "mode_search", "hybrid") or "hybrid", _number(q, "min_score", float),
                         _one(q, "preview", "short") or "short", iglobs=q.get("iglob", []),
                         types_not=q.get("type_not", []), min_score_diff=_number(q, "min_score_diff", float),
                         modified_after=_number(q, "modified_after", float),
                         modified_before=_number(q, "modified_before", float))

    return {
        "/search": search,
        "/read": lambda q: ws.read(_required(q, "path"), _number(q, "start", int), _number(q, "end", int)),
        "/status": lambda q: ws.status(),
        "/callers": lambda q: ws.callers(_required(q, "symbol"), _one(q, "source_file"), _number(q, "limit", int)),
        "/trace": lambda q: ws.trace(_required(q, "entry"), _one(q, "direction", "backward") or "backward",
                                     _number(q, "depth", int) or 3, _one(q, "source_file")),
        "/adr/constraints": lambda q: ws.adr_constraints(q.get("path")),
        "/adr/search": lambda q: ws.adr_search(_required(q, "q"), _number(q, "limit", int) or 10),
        "/adr/check": lambda q: ws.adr_check(q.get("path")),
    }


def _is_loopback_name(name: str) -> bool:
    """A Host name that reaches only this machine: localhost or any loopback address, the same rule
    `zg serve` binds by (`runtime.is_loopback`); a name left bracketed was malformed."""
    return "[" not in name and "]" not in name and is_loopback(name)


def _host_name(host_header: str) -> str:
    """`example.org:80` -> `example.org`, `[::1]:7700` -> `::1`; a malformed bracket form (`[::1]x`) stays whole."""
    if host_header.startswith("["):
        name, bracket, rest = host_header[1:].partition("]")
        return name if bracket and (not rest or (rest[0] == ":" and rest[1:].isdigit())) else host_header
    return host_header.rpartition(":")[0] if host_header.count(":") == 1 else host_header


def make_server(ws: Workspace, host: str, port: int, token: str | None) -> ThreadingHTTPServer:
    """A server bound to `host:port`; `token` set: every request must carry it (else: loopback names only)."""
    table = routes(ws)

    class Handler(BaseHTTPRequestHandler):
        server_version = "zgrep"

        def log_message(self, format: str, *args: Any) -> None:
            """Quiet: a request line holds the query text."""

        def _send(self, status: int, doc: Any) -> None:
            body = json.dumps(doc, ensure_ascii=False).encode("utf-8")
            self.send_response(status)
            self.send_header("Content-Type", "application/json; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Cache-Control", "no-store")
            self.end_headers()
            self.wfile.write(body)

        def _admit(self) -> None:
            if token is not None:
                given = self.headers.get("Authorization", "")
                if not hmac.compare_digest(given.encode(), f"Bearer {token}".encode()):
                    raise Refused(401, ErrorCode.UNAUTHORIZED, "zg: missing or wrong token: send Authorization: Bearer TOKEN")
            elif not _is_loopback_name(_host_name(self.headers.get("Host", "")).lower()):
                raise Refused(403, ErrorCode.UNAUTHORIZED,
                              "zg: this API answers only requests to localhost or a loopback address (Host header)")

        def do_GET(self) -> None:
            try:
                self._admit()
                url = urlsplit(self.path)
                handler = table.get(url.path.rstrip("/") or "/")
                if handler is None:
                    raise Refused(404, "not_found", f"zg: no such endpoint {url.path}; try one of {', '.join(table)}")
                self._send(200, handler(parse_qs(url.query)))
            except Refused as exc:
                self._send(exc.status, {"error": {"code": exc.code, "message": str(exc)}})
            except FrontendError as exc:
                self._send(STATUS_OF.get(exc.code, 500), {"error": {"code": exc.code, "message": str(exc)}})

    return ThreadingHTTPServer((host, port), Handler)
