"""zgrep.jsoncodec writes and reads JSON exactly as json.dumps and json.loads do (text, errors and
their positions), without importing json."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable

import pytest

from zgrep import jsoncodec

VALUES = [
    None,
    True,
    0,
    -0.0,
    1.5e300,
    10**30,
    float("inf"),
    float("-inf"),
    "plain",
    'é \u2028 \ud800 "quoted" \\ \n \x00',
    [],
    {},
    (1, "two"),
    {"a": [1, {"b": None}], 2: "int key", None: 1, True: 2, 1.5: 3, "ü": "日本"},
]
TEXTS = [
    "",
    " ",
    "1",
    ' {"a": [1, 2.5, "x", null, true, false, NaN, -Infinity, Infinity]} \n',
    '\t\r\n"x"\t',
    "\ufeff{}",
    '{"a":1} x',
    '{"a":1}{',
    "1 2",
    "[1,]",
    '{"a" 1}',
    '"\\ud800"',
    '"\x01"',
    '"abc',
    "nul",
    "-",
    "1e999",
    "\x0c1",
    "[" * 100_000,
]


def outcome(call: Callable[[], object]) -> tuple[str, object]:
    """What `call` returned (its repr: NaN is not equal to itself), or the exception it raised, with
    the position a JSONDecodeError names."""
    try:
        return "value", repr(call())
    except (ValueError, TypeError, RecursionError) as exc:
        return type(exc).__name__, (str(exc), getattr(exc, "pos", None))


@pytest.mark.parametrize("value", VALUES, ids=repr)
def test_dumps_writes_what_json_writes(value: object) -> None:
    """Every option zgrep uses, an indented document included (keys of several types do not sort:
    the same TypeError)."""
    for ensure_ascii in (True, False):
        for separators in (None, (",", ":")):
            for indent in (None, 2):
                for sort_keys in (False, True):
                    options = {"separators": separators, "indent": indent, "sort_keys": sort_keys}
                    ours = outcome(lambda: jsoncodec.dumps(value, ensure_ascii, **options))  # type: ignore[arg-type]
                    theirs = outcome(lambda: json.dumps(value, ensure_ascii=ensure_ascii, **options))  # type: ignore[arg-type]
                    assert ours == theirs


def test_dumps_refuses_what_json_refuses() -> None:
    circular: list[object] = []
    circular.append(circular)
    for value in (object(), {"a": {1, 2}}, {(1,): 2}, circular):
        assert outcome(lambda: jsoncodec.dumps(value)) == outcome(lambda: json.dumps(value))


@pytest.mark.parametrize("text", TEXTS, ids=lambda text: repr(text[:20]))
def test_loads_reads_and_refuses_what_json_does(text: str) -> None:
    assert outcome(lambda: jsoncodec.loads(text)) == outcome(lambda: json.loads(text))


def test_reading_and_writing_import_no_json() -> None:
    code = (
        "import sys; from zgrep import jsoncodec; "
        "assert jsoncodec.loads(jsoncodec.dumps({'a': [1.5, None, 'é']})) == {'a': [1.5, None, 'é']}; "
        "print(sorted(m for m in ('json', 're', 'enum') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
