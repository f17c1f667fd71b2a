"""Versioned request/response messages shared by the thin client and the daemon; the ops and
error codes they carry are `zgrep.service`'s.

Imported on the thin client path: standard library only.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from zgrep.service import OPERATIONS, ErrorCode, ZgError

PROTOCOL_VERSION = 1
MAX_MESSAGE_BYTES = 8 * 1024 * 1024


class ProtocolError(ZgError, ValueError):
    """A message that is malformed, oversized, of another version, or names an unknown op."""


def make_request(op: str, root: str | None, args: dict[str, Any] | None = None, token: str | None = None) -> dict[str, Any]:
    """Build a request message for `op` on workspace `root`."""
    msg: dict[str, Any] = {"v": PROTOCOL_VERSION, "op": op, "root": root, "args": args or {}}
    if token is not None:
        msg["token"] = token
    return msg


def ok(result: dict[str, Any]) -> dict[str, Any]:
    """A successful response carrying `result`."""
    return {"v": PROTOCOL_VERSION, "ok": True, "result": result}


def error(code: ErrorCode, message: str) -> dict[str, Any]:
    """A failed response; `code` is a stable machine name, `message` one human line."""
    return {"v": PROTOCOL_VERSION, "ok": False, "error": {"code": code, "message": message}}


def encode(msg: dict[str, Any]) -> bytes:
    """Serialise a message to UTF-8 JSON bytes (lone surrogates, say from a hostile query, as \\u escapes)."""
    text = json.dumps(msg, separators=(",", ":"), ensure_ascii=False)
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(msg, separators=(",", ":")).encode("ascii")


def _brief(value: Any) -> str:
    """A short repr of a scalar, or the type of a container, for error messages (hostile values are big or deep)."""
    text = repr(value) if value is None or isinstance(value, (str, int, float)) else f"a JSON {type(value).__name__}"
    return text if len(text) <= 60 else f"{text[:57]}..."


def _parse(data: bytes, what: str) -> Any:
    """JSON from UTF-8 bytes; any decoding failure (too deep, too many digits, ...) is `malformed`."""
    try:
        return json.loads(data.decode("utf-8"))
    except Exception as exc:  # RecursionError, ValueError and whatever else the decoder raises
        raise ProtocolError(ErrorCode.MALFORMED, f"{what} is not UTF-8 JSON: {_brief(str(exc))}") from None


def _is_text(value: Any) -> bool:
    """A string that encodes to UTF-8 (no lone surrogates) and holds no NUL."""
    if not isinstance(value, str) or "\0" in value:
        return False
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _is_optional_text(value: Any) -> bool:
    return value is None or _is_text(value)


def _is_flag(value: Any) -> bool:
    return value is None or isinstance(value, bool)


def _is_texts(value: Any) -> bool:
    return value is None or (isinstance(value, list) and all(_is_text(v) for v in value))


def _is_number(value: Any) -> bool:
    return value is None or (isinstance(value, (int, float)) and not isinstance(value, bool))


def _is_setting(value: Any) -> bool:
    if isinstance(value, list):
        return all(isinstance(v, str) for v in value)
    return value is None or isinstance(value, (str, int, float))


def _is_settings(value: Any) -> bool:
    return isinstance(value, dict) and all(_is_setting(v) for v in value.values())


TEXTS = "a list of strings or null"
NUMBER = "a number or null"
# The types of the args the daemon reads and of the search filters (the engine checks values and ranges).
ARG_CHECKS: dict[str, tuple[Callable[[Any], bool], str]] = {
    "paths": (_is_texts, TEXTS), "queries": (_is_texts, TEXTS), "globs": (_is_texts, TEXTS),
    "iglobs": (_is_texts, TEXTS), "types": (_is_texts, TEXTS), "types_not": (_is_texts, TEXTS),
    "symbol_types": (_is_texts, TEXTS), "limit": (_is_number, NUMBER), "min_score": (_is_number, NUMBER),
    "min_score_diff": (_is_number, NUMBER), "modified_after": (_is_number, NUMBER),
    "modified_before": (_is_number, NUMBER), "context_before": (_is_number, NUMBER),
    "context_after": (_is_number, NUMBER), "yes": (_is_flag, "true or false"),
    "full": (_is_flag, "true or false"), "dry_run": (_is_flag, "true or false"),
    "no_index": (_is_flag, "true or false"), "progress": (_is_flag, "true or false"),
    "refresh": (_is_optional_text, "a string or null"),
    "config": (_is_settings, "an object of settings (strings, numbers, booleans or lists of strings)"),
}


def _check_args(args: Any) -> None:
    if not isinstance(args, dict):
        raise ProtocolError(ErrorCode.MALFORMED, "args must be a JSON object")
    for key, (valid, expected) in ARG_CHECKS.items():
        if key in args and not valid(args[key]):
            raise ProtocolError(ErrorCode.MALFORMED, f"args.{key} must be {expected}")


def decode_request(data: bytes) -> dict[str, Any]:
    """Parse and validate a request (size, JSON, the type of every field); raise ProtocolError with a precise reason."""
    if len(data) > MAX_MESSAGE_BYTES:
        raise ProtocolError(ErrorCode.TOO_LARGE, f"message of {len(data)} bytes exceeds the {MAX_MESSAGE_BYTES}-byte limit")
    msg = _parse(data, "request")
    if not isinstance(msg, dict):
        raise ProtocolError(ErrorCode.MALFORMED, "request must be a JSON object")
    version = msg.get("v")
    if version is not None and type(version) is not int:
        raise ProtocolError(ErrorCode.MALFORMED, "v must be an integer protocol version")
    if version != PROTOCOL_VERSION:
        raise ProtocolError(ErrorCode.VERSION_MISMATCH,
            f"client speaks protocol {_brief(version)}, daemon speaks {PROTOCOL_VERSION}; restart the daemon (zg server off; zg server on)",
        )
    op = msg.get("op")
    if not isinstance(op, str):
        raise ProtocolError(ErrorCode.MALFORMED, "op must be a string")
    if op not in OPERATIONS:
        raise ProtocolError(ErrorCode.UNKNOWN_OP, f"unknown op {_brief(op)}")
    if msg.get("root") is not None and not _is_text(msg["root"]):
        raise ProtocolError(ErrorCode.MALFORMED, "root must be a UTF-8 string path without NUL")
    if not _is_text(msg.get("token", "")):
        raise ProtocolError(ErrorCode.MALFORMED, "token must be a UTF-8 string")
    _check_args(msg.get("args", {}))
    return msg


def progress(event: dict[str, Any]) -> dict[str, Any]:
    """An interim message (index progress) sent before the final response."""
    return {"v": PROTOCOL_VERSION, "progress": event}


def decode_response(data: bytes) -> dict[str, Any]:
    """Parse a response (or a progress message) from the daemon; ProtocolError when it is neither."""
    msg = _parse(data, "daemon reply")
    if not isinstance(msg, dict) or ("ok" not in msg and not isinstance(msg.get("progress"), dict)):
        raise ProtocolError(ErrorCode.MALFORMED, "daemon reply lacks 'ok'")
    if msg.get("v") != PROTOCOL_VERSION:
        raise ProtocolError(ErrorCode.VERSION_MISMATCH, f"daemon speaks protocol {msg.get('v')!r}, client speaks {PROTOCOL_VERSION}; restart the daemon"
        )
    return msg
