"""`zg serve`: a local HTTP JSON API over `frontends.api.Workspace` (standard library server).

GET /search?q=..., /status, /callers?symbol=, /trace?entry=, /impact?targets= (each op the table
serves on HTTP at /OP, its query parameters its row's, read as its contract types them),
/read?path=&start=&end=, /adr/constraints?path=, /adr/search?q=, /adr/check: each answers the JSON
the CLI's `--json` prints; any other method is a JSON 405. Loopback binds answer only requests
addressed to a loopback name (no DNS rebinding); other binds demand `Authorization: Bearer TOKEN`.
Requests from a web page of another site (an `Origin` that is not loopback, `Sec-Fetch-Site:
cross-site`) are refused, a request carries at most MAX_QUERIES queries, and a connection idle for
IDLE_TIMEOUT_S is closed."""

from __future__ import annotations

import functools
import hmac
import json
from collections.abc import Callable, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

from zgrep.contracts import Args
from zgrep.frontends.api import FrontendError, Workspace, arguments, kinds
from zgrep.server.runtime import is_loopback
from zgrep.service import HTTP, OPERATIONS, ErrorCode, Operation, Param

MAX_QUERIES = 20  # q= per request (400 took 5.9 s)
MAX_FIELDS = 500  # query parameters per request
IDLE_TIMEOUT_S = 10.0  # a connection that sends (or reads) nothing this long is closed
STATUS_OF = {
    ErrorCode.BAD_REQUEST: 400,
    ErrorCode.NOT_INDEXED: 409,
    ErrorCode.WORKSPACE_BUSY: 503,
    ErrorCode.NO_DAEMON: 503,
    ErrorCode.CONFIG: 400,
    ErrorCode.UNAUTHORIZED: 401,
}
Query = dict[str, list[str]]
BOOLEANS = {"true": True, "1": True, "false": False, "0": False}


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
        raise Refused(
            400,
            ErrorCode.BAD_REQUEST,
            f"zg: {name}={text!r} is not {'an integer' if kind is int else 'a number'}",
        ) from None


def _required(q: Query, name: str) -> str:
    value = _one(q, name)
    if not value:
        raise Refused(400, ErrorCode.BAD_REQUEST, f"zg: give {name}=...")
    return value


def _flag(q: Query, name: str) -> bool | None:
    text = _one(q, name)
    if text is None:
        return None
    if text.lower() not in BOOLEANS:
        raise Refused(
            400, ErrorCode.BAD_REQUEST, f"zg: {name}={text!r} is not one of {', '.join(BOOLEANS)}"
        )
    return BOOLEANS[text.lower()]


def _value(q: Query, param: Param, kind: frozenset[type]) -> Any:
    """A query parameter's value as its contract types it: repeated for a list, true/false, a
    number, text."""
    name = param.http or param.name
    if list in kind:
        return q[name]
    if bool in kind:
        return _flag(q, name)
    if int in kind or float in kind:
        return _number(q, name, int if int in kind else float)
    return _one(q, name) or param.default


def op_args(op: Operation, q: Query) -> Args:
    """`op`'s arguments from the query parameters its row offers on HTTP (`Param.http`, else its
    name), each read as its contract types it; at most MAX_QUERIES queries."""
    kind = kinds(op)
    offered = [p for p in op.params if p.http is not None]
    for param in offered:
        name = param.http or param.name
        if param.key == "queries" and len(q.get(name, [])) > MAX_QUERIES:
            raise Refused(
                400,
                ErrorCode.BAD_REQUEST,
                f"zg: at most {MAX_QUERIES} queries ({name}=) per request; got {len(q[name])}",
            )
    return arguments(
        op, {p.name: _value(q, p, kind[p.key]) for p in offered if (p.http or p.name) in q}
    )


def routes(ws: Workspace) -> dict[str, Callable[[Query], Mapping[str, object]]]:
    """Path -> handler of its query parameters: each op its row serves on HTTP at /OP, then `zg
    read`'s slices and the ADR library."""
    return {
        **{
            f"/{op.name}": functools.partial(lambda op, q: ws.run(op, op_args(op, q)), op)
            for op in OPERATIONS.values()
            if HTTP in op.frontends
        },
        "/read": lambda q: ws.read(
            _required(q, "path"), _number(q, "start", int), _number(q, "end", int)
        ),
        "/adr/constraints": lambda q: ws.adr_constraints(q.get("path")),
        "/adr/search": lambda q: ws.adr_search(_required(q, "q"), _number(q, "limit", int) or 10),
        "/adr/check": lambda q: ws.adr_check(q.get("path")),
    }


def _is_loopback_name(name: str) -> bool:
    """A Host name that reaches only this machine: localhost or any loopback address, the same rule
    `zg serve` binds by (`runtime.is_loopback`); a name left bracketed was malformed."""
    return "[" not in name and "]" not in name and is_loopback(name)


def _host_name(host_header: str) -> str:
    """`example.org:80` -> `example.org`, `[::1]:7700` -> `::1`; a malformed bracket form (`[::1]x`)
    stays whole."""
    if host_header.startswith("["):
        name, bracket, rest = host_header[1:].partition("]")
        return (
            name
            if bracket and (not rest or (rest[0] == ":" and rest[1:].isdigit()))
            else host_header
        )
    return host_header.rpartition(":")[0] if host_header.count(":") == 1 else host_header


def _cross_site(origin: str | None, fetch_site: str | None) -> str | None:
    """Why a request comes from another site's web page (an Origin that is not loopback, or the
    browser's `Sec-Fetch-Site: cross-site`), else None."""
    if (fetch_site or "").strip().lower() == "cross-site":
        return "Sec-Fetch-Site: cross-site"
    if origin is None:
        return None
    scheme, sep, rest = origin.strip().partition("://")
    if (
        sep
        and scheme.lower() in ("http", "https")
        and rest
        and "/" not in rest
        and "@" not in rest
        and _is_loopback_name(_host_name(rest).lower())
    ):
        return None
    return f"Origin {origin[:100]!r}"


def make_server(ws: Workspace, host: str, port: int, token: str | None) -> ThreadingHTTPServer:
    """A server bound to `host:port`; `token` set: every request must carry it (else: loopback names
    only)."""
    table = routes(ws)

    class Handler(BaseHTTPRequestHandler):
        server_version = "zgrep"
        timeout = IDLE_TIMEOUT_S  # the socket's: an idle (or stalled) connection is closed, its thread freed

        def log_message(self, format: str, *args: Any) -> None:
            """Quiet: a request line holds the query text."""

        def _send(self, status: int, doc: Any, headers: dict[str, str] | None = None) -> None:
            body = json.dumps(doc, ensure_ascii=False).encode("utf-8")
            self.send_response(status)
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.send_header("Content-Type", "application/json; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Cache-Control", "no-store")
            self.end_headers()
            self.wfile.write(body)

        def send_error(
            self, code: int, message: str | None = None, explain: str | None = None
        ) -> None:
            """The base server's own refusals in JSON like every other error; a method without a
            handler (it would be an HTML 501) is 405 naming the one served."""
            self.close_connection = True  # (a refused request's body is never read)
            if code == 501:
                self._send(
                    405,
                    {
                        "error": {
                            "code": "method_not_allowed",
                            "message": f"zg: this API answers GET only, not {self.command}",
                        }
                    },
                    {"Allow": "GET"},
                )
            else:
                self._send(
                    code,
                    {
                        "error": {
                            "code": ErrorCode.BAD_REQUEST if code < 500 else ErrorCode.INTERNAL,
                            "message": f"zg: {message or 'bad request'}",
                        }
                    },
                )

        def _admit(self) -> None:
            if token is not None:
                given = self.headers.get("Authorization", "")
                if not hmac.compare_digest(given.encode(), f"Bearer {token}".encode()):
                    raise Refused(
                        401,
                        ErrorCode.UNAUTHORIZED,
                        "zg: missing or wrong token: send Authorization: Bearer TOKEN",
                    )
            elif not _is_loopback_name(_host_name(self.headers.get("Host", "")).lower()):
                raise Refused(
                    403,
                    ErrorCode.UNAUTHORIZED,
                    "zg: this API answers only requests to localhost or a loopback address (Host header)",
                )
            why = _cross_site(self.headers.get("Origin"), self.headers.get("Sec-Fetch-Site"))
            if why:
                raise Refused(
                    403,
                    ErrorCode.UNAUTHORIZED,
                    f"zg: refusing a cross-site request ({why}): this API "
                    "answers programs and pages on this machine only",
                )

        def do_GET(self) -> None:
            try:
                self._admit()
                url = urlsplit(self.path)
                handler = table.get(url.path.rstrip("/") or "/")
                if handler is None:
                    raise Refused(
                        404,
                        "not_found",
                        f"zg: no such endpoint {url.path}; try one of {', '.join(table)}",
                    )
                try:
                    query = parse_qs(url.query, max_num_fields=MAX_FIELDS)
                except ValueError:
                    raise Refused(
                        400,
                        ErrorCode.BAD_REQUEST,
                        f"zg: at most {MAX_FIELDS} query parameters per request",
                    ) from None
                self._send(200, handler(query))
            except Refused as exc:
                self._send(exc.status, {"error": {"code": exc.code, "message": str(exc)}})
            except FrontendError as exc:
                self._send(
                    STATUS_OF.get(exc.code, 500), {"error": {"code": exc.code, "message": str(exc)}}
                )

    return ThreadingHTTPServer((host, port), Handler)
