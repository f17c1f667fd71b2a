"""JSON text to and from Python values, exactly as `json.dumps` and `json.loads` with their defaults:
both through CPython's accelerator (`_json`), which `json` itself calls, without importing `json`,
whose pure-Python fallbacks compile regular expressions at import (`re`, `enum`: ~30M instructions,
a third of a thin `zg server status`). The daemon protocol, the runtime files and every JSON output
use it; an indented document and a malformed text's error are json's own (imported then)."""

from __future__ import annotations

import _json

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (see zgrep.service)
if TYPE_CHECKING:
    from typing import Any

WHITESPACE = " \t\n\r"  # what json skips around a document


def _unserialisable(value: object) -> object:
    raise TypeError(f"Object of type {value.__class__.__name__} is not JSON serializable")


def dumps(
    value: object,
    ensure_ascii: bool = True,
    separators: tuple[str, str] | None = None,
    indent: int | None = None,
    sort_keys: bool = False,
) -> str:
    """`json.dumps(value, ensure_ascii=..., separators=..., indent=..., sort_keys=...)`."""
    if indent is not None:
        import json

        return json.dumps(
            value, ensure_ascii=ensure_ascii, separators=separators, indent=indent, sort_keys=sort_keys
        )
    quote = _json.encode_basestring_ascii if ensure_ascii else _json.encode_basestring
    if isinstance(value, str):
        return quote(value)
    item_separator, key_separator = separators or (", ", ": ")
    encode = _json.make_encoder(
        {}, _unserialisable, quote, None, key_separator, item_separator, sort_keys, False, True
    )
    return "".join(encode(value, 0))


class _Decoder:
    """The settings `_json.make_scanner` reads: json's defaults."""

    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = int
    parse_constant = {"-Infinity": float("-inf"), "Infinity": float("inf"), "NaN": float("nan")}.__getitem__


_scan = _json.make_scanner(_Decoder())  # type: ignore[arg-type]  # (typeshed names its own type)


def loads(text: str) -> Any:
    """`json.loads(text)` for a str: the value, or json's JSONDecodeError (a ValueError)."""
    start = len(text) - len(text.lstrip(WHITESPACE))
    if text.startswith("\ufeff"):
        return _invalid(text, "Unexpected UTF-8 BOM (decode using utf-8-sig)", 0)
    try:
        value, end = _scan(text, start)
    except StopIteration as stop:
        return _invalid(text, "Expecting value", stop.value)
    end = len(text) - len(text[end:].lstrip(WHITESPACE))
    if end != len(text):
        return _invalid(text, "Extra data", end)
    return value


def _invalid(text: str, message: str, at: int) -> Any:
    from json import JSONDecodeError

    raise JSONDecodeError(message, text, at)
