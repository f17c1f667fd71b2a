"""Versioned request/response messages shared by the thin client and the daemon.

Imported on the thin client path: standard library only.
"""

from __future__ import annotations

import json
from typing import Any

PROTOCOL_VERSION = 1
MAX_MESSAGE_BYTES = 8 * 1024 * 1024
OPS = frozenset({"ping", "status", "search", "index", "refresh", "shutdown", "server_status", "callers", "trace"})


class ProtocolError(ValueError):
    """A message that is malformed, oversized, of another version, or names an unknown op."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


def make_request(op: str, root: str | None, args: dict[str, Any] | None = None, token: str | None = None) -> dict[str, Any]:
    """Build a request message for `op` on workspace `root`."""
    msg: dict[str, Any] = {"v": PROTOCOL_VERSION, "op": op, "root": root, "args": args or {}}
    if token is not None:
        msg["token"] = token
    return msg


def ok(result: dict[str, Any]) -> dict[str, Any]:
    """A successful response carrying `result`."""
    return {"v": PROTOCOL_VERSION, "ok": True, "result": result}


def error(code: str, message: str) -> dict[str, Any]:
    """A failed response; `code` is a stable machine name, `message` one human line."""
    return {"v": PROTOCOL_VERSION, "ok": False, "error": {"code": code, "message": message}}


def encode(msg: dict[str, Any]) -> bytes:
    """Serialise a message to UTF-8 JSON bytes."""
    return json.dumps(msg, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def decode_request(data: bytes) -> dict[str, Any]:
    """Parse and validate a request; raise ProtocolError with a precise reason."""
    if len(data) > MAX_MESSAGE_BYTES:
        raise ProtocolError("too_large", f"message of {len(data)} bytes exceeds the {MAX_MESSAGE_BYTES}-byte limit")
    try:
        msg = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ProtocolError("malformed", f"request is not UTF-8 JSON: {exc}") from None
    if not isinstance(msg, dict):
        raise ProtocolError("malformed", "request must be a JSON object")
    version = msg.get("v")
    if version != PROTOCOL_VERSION:
        raise ProtocolError(
            "version_mismatch",
            f"client speaks protocol {version!r}, daemon speaks {PROTOCOL_VERSION}; restart the daemon (zg server off; zg server on)",
        )
    if msg.get("op") not in OPS:
        raise ProtocolError("unknown_op", f"unknown op {msg.get('op')!r}")
    if not isinstance(msg.get("args", {}), dict):
        raise ProtocolError("malformed", "args must be a JSON object")
    root = msg.get("root")
    if root is not None and not isinstance(root, str):
        raise ProtocolError("malformed", "root must be a string path")
    if not isinstance(msg.get("token", ""), str):
        raise ProtocolError("malformed", "token must be a string")
    return msg


def progress(event: dict[str, Any]) -> dict[str, Any]:
    """An interim message (index progress) sent before the final response."""
    return {"v": PROTOCOL_VERSION, "progress": event}


def decode_response(data: bytes) -> dict[str, Any]:
    """Parse a response (or a progress message) from the daemon; ProtocolError when it is neither."""
    try:
        msg = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ProtocolError("malformed", f"daemon reply is not UTF-8 JSON: {exc}") from None
    if not isinstance(msg, dict) or ("ok" not in msg and not isinstance(msg.get("progress"), dict)):
        raise ProtocolError("malformed", "daemon reply lacks 'ok'")
    if msg.get("v") != PROTOCOL_VERSION:
        raise ProtocolError(
            "version_mismatch", f"daemon speaks protocol {msg.get('v')!r}, client speaks {PROTOCOL_VERSION}; restart the daemon"
        )
    return msg
