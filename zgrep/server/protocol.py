"""Versioned request/response messages shared by the thin client and the daemon; the ops and
error codes they carry are `zgrep.service`'s.

Imported on the thin client path: standard library only, and no `typing` (the message types are
for type checkers; the request checks derived from the contracts' types import it when first used).
"""

from __future__ import annotations


from zgrep import jsoncodec
from zgrep.service import OPERATIONS, ErrorCode, ZgError

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (see zgrep.service)
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, NotRequired, TypedDict

    from zgrep.contracts import Args, JSONObject
    from zgrep.progress import ProgressEvent

    class Request(TypedDict):
        """What a client sends: op `op` on workspace `root` (None: the daemon's own ops) with its
        arguments."""

        v: int
        op: str
        root: str | None
        args: NotRequired[Args]  # absent: none
        token: NotRequired[str]

    class ErrorDoc(TypedDict):
        """A failure: `code` a stable machine name (ErrorCode), `message` one human line."""

        code: str  # an ErrorCode
        message: str

    class Reply(TypedDict, total=False):
        """What the daemon (or direct mode) answers: `ok` with the op's `result`, or not with an
        `error`; or, before the final reply of a progress op, a `progress` event alone."""

        v: int
        ok: bool
        result: JSONObject
        error: ErrorDoc
        progress: ProgressEvent

    Check = tuple[Callable[[Any], bool], str]

PROTOCOL_VERSION = 1
MAX_MESSAGE_BYTES = 8 * 1024 * 1024


class ProtocolError(ZgError, ValueError):
    """A message that is malformed, oversized, of another version, or names an unknown op."""


def make_request(
    op: str, root: str | None, args: Args | None = None, token: str | None = None
) -> Request:
    """Build a request message for `op` on workspace `root`."""
    msg: Request = {"v": PROTOCOL_VERSION, "op": op, "root": root, "args": args or {}}
    if token is not None:
        msg["token"] = token
    return msg


def ok(result: JSONObject) -> Reply:
    """A successful response carrying `result`."""
    return {"v": PROTOCOL_VERSION, "ok": True, "result": result}


def error(code: str, message: str) -> Reply:
    """A failed response; `code` is a stable machine name, `message` one human line."""
    return {"v": PROTOCOL_VERSION, "ok": False, "error": {"code": code, "message": message}}


def encode(msg: Request | Reply) -> bytes:
    """Serialise a message to UTF-8 JSON bytes (lone surrogates, say from a hostile query, as \\u escapes)."""
    text = jsoncodec.dumps(msg, separators=(",", ":"), ensure_ascii=False)
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        return jsoncodec.dumps(msg, separators=(",", ":")).encode("ascii")


def _brief(value: Any) -> str:
    """A short repr of a scalar, or the type of a container, for error messages (hostile values are
    big or deep)."""
    text = (
        repr(value)
        if value is None or isinstance(value, (str, int, float))
        else f"a JSON {type(value).__name__}"
    )
    return text if len(text) <= 60 else f"{text[:57]}..."


def _parse(data: bytes, what: str) -> Any:
    """JSON from UTF-8 bytes; any decoding failure (too deep, too many digits, ...) is `malformed`."""
    try:
        return jsoncodec.loads(data.decode("utf-8"))
    except Exception as exc:  # RecursionError, ValueError and whatever else the decoder raises
        raise ProtocolError(
            ErrorCode.MALFORMED, f"{what} is not UTF-8 JSON: {_brief(str(exc))}"
        ) from None


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


def _is_text_or_texts(value: Any) -> bool:
    return _is_optional_text(value) or _is_texts(value)


TEXTS = "a list of strings or null"
# What a JSON value of each kind of contract field must be (the handlers check values and ranges).
CHECKS: dict[frozenset[type], Check] = {
    frozenset({list}): (_is_texts, TEXTS),
    frozenset({list, str}): (_is_text_or_texts, "a string, a list of strings or null"),
    frozenset({str}): (_is_optional_text, "a string or null"),
    frozenset({int}): (_is_number, "a number or null"),
    frozenset({float}): (_is_number, "a number or null"),
    frozenset({bool}): (_is_flag, "true or false"),
    frozenset({dict}): (
        _is_settings,
        "an object of settings (strings, numbers, booleans or lists of strings)",
    ),
}


def kinds(annotation: Any) -> frozenset[type]:
    """The JSON kinds a contract field's type admits besides null: `list[str] | None` -> {list}, a
    Literal of strings -> {str}."""
    from types import UnionType
    from typing import Literal, Union, get_args, get_origin

    members = (
        get_args(annotation) if get_origin(annotation) in (Union, UnionType) else (annotation,)
    )
    kinds: set[type] = set()
    for member in members:
        origin = get_origin(member) or member
        if origin is Literal:
            kinds.add(str)
        elif origin is not type(None):
            kinds.add(origin)
    return frozenset(kinds)


_arg_checks: dict[str, Check] | None = None  # arg_checks(), once derived


def arg_checks() -> dict[str, Check]:
    """The check of each argument name an op's contract declares, derived from its type (once): a
    name means one kind of value on the wire, whichever op a request names (an index request's
    `refresh` is checked as a search's)."""
    global _arg_checks
    if _arg_checks is None:
        from typing import get_type_hints

        checks: dict[str, Check] = {}
        for op in OPERATIONS.values():
            for name, kind in get_type_hints(op.args).items():
                check = CHECKS[kinds(kind)]
                if checks.setdefault(name, check) != check:
                    raise TypeError(f"args.{name} has two types in the contracts")
        _arg_checks = checks
    return _arg_checks


def _check_args(args: Any) -> None:
    if not isinstance(args, dict):
        raise ProtocolError(ErrorCode.MALFORMED, "args must be a JSON object")
    for key, (valid, expected) in arg_checks().items():
        if key in args and not valid(args[key]):
            raise ProtocolError(ErrorCode.MALFORMED, f"args.{key} must be {expected}")


def decode_request(data: bytes) -> Request:
    """Parse and validate a request (size, JSON, the type of every field); raise ProtocolError with
    a precise reason."""
    if len(data) > MAX_MESSAGE_BYTES:
        raise ProtocolError(
            ErrorCode.TOO_LARGE,
            f"message of {len(data)} bytes exceeds the {MAX_MESSAGE_BYTES}-byte limit",
        )
    msg = _parse(data, "request")
    if not isinstance(msg, dict):
        raise ProtocolError(ErrorCode.MALFORMED, "request must be a JSON object")
    version = msg.get("v")
    if version is not None and type(version) is not int:
        raise ProtocolError(ErrorCode.MALFORMED, "v must be an integer protocol version")
    if version != PROTOCOL_VERSION:
        raise ProtocolError(
            ErrorCode.VERSION_MISMATCH,
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
    checked: Request = msg  # type: ignore[assignment]  # every field checked above
    return checked


def progress(event: ProgressEvent) -> Reply:
    """An interim message (index progress) sent before the final response."""
    return {"v": PROTOCOL_VERSION, "progress": event}


def decode_response(data: bytes) -> Reply:
    """Parse a response (or a progress message) from the daemon; ProtocolError when it is neither."""
    msg = _parse(data, "daemon reply")
    if not isinstance(msg, dict) or ("ok" not in msg and not isinstance(msg.get("progress"), dict)):
        raise ProtocolError(ErrorCode.MALFORMED, "daemon reply lacks 'ok'")
    if msg.get("v") != PROTOCOL_VERSION:
        raise ProtocolError(
            ErrorCode.VERSION_MISMATCH,
            f"daemon speaks protocol {msg.get('v')!r}, client speaks {PROTOCOL_VERSION}; restart the daemon",
        )
    reply: Reply = msg  # type: ignore[assignment]  # a reply or a progress message, checked above
    return reply
