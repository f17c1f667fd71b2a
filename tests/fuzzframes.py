"""Hostile daemon messages for the fuzz test (tests/server/test_daemon_hardening.py) and bench/fuzz.py: random,
truncated, nested, oversized, multi-frame or wrong-typed frames, with roots spelled every way (`..`, `.`,
another held workspace, missing ones) and tokens of other daemons."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

from zgrep.service import OPERATIONS

ARG_NAMES = [
    "paths",
    "config",
    "full",
    "progress",
    "refresh",
    "queries",
    "limit",
    "globs",
    "iglobs",
    "types",
    "types_not",
    "symbol_types",
    "dry_run",
    "no_index",
    "symbol",
    "entry",
    "direction",
    "source_file",
    "preview",
    "search_mode",
    "min_score",
    "min_score_diff",
    "modified_after",
    "depth",
]


def spellings(root: Path) -> list[str]:
    """`root` as a client may spell it: plainly, through `..` and `.`, and with trailing slashes."""
    return [
        str(root),
        f"{root}/../{root.name}",
        f"{root}/.",
        f"{root}/",
        f"{root.parent}/./{root.name}//",
        f"{root}/../{root.name}/../{root.name}",
    ]


def dump(msg: dict[str, Any]) -> bytes:
    """JSON bytes of any message, lone surrogates included (as \\u escapes)."""
    return json.dumps(msg).encode()


def fuzz_frames(
    rng: random.Random, token: str, roots: list[str], foreign_tokens: list[str] = ()
) -> list[bytes]:  # type: ignore[assignment]
    """One hostile message; `roots`: the workspaces' spellings it aims at, `foreign_tokens`: other daemons' tokens."""

    def root() -> str:
        return rng.choice(roots)

    def value() -> Any:
        return rng.choice(
            [
                None,
                True,
                0,
                -1,
                1.5,
                10**30,
                "",
                "x" * rng.randint(1, 3000),
                "\ud800",
                [],
                [1, "a"],
                {},
                {"k": [[{}]]},
                "ping",
                "/",
                root(),
                "../..",
                "/dev/null",
                "a\0b",
            ]
        )

    def wrong_token() -> Any:
        return rng.choice(["wrong", *foreign_tokens, token[:-1], token + "x", value()])

    def request() -> dict[str, Any]:
        msg: dict[str, Any] = {
            "v": rng.choice([1, 1, 1, 2, "1", True, 1.0, None]),
            "op": rng.choice([*sorted(set(OPERATIONS) - {"shutdown"}), "shutdown", "rm", value()]),
            "root": rng.choice(
                [root(), root(), "relative", "/nonexistent", f"{root()}/../nonexistent", value()]
            ),
            "args": rng.choice(
                [
                    {},
                    {"queries": ["retry"], "limit": 1, "refresh": "off"},
                    {rng.choice(ARG_NAMES): value()},
                    value(),
                ]
            ),
        }
        if rng.random() < 0.5:
            msg["token"] = rng.choice([token, token, wrong_token()])
        if msg.get("token") == token and msg["op"] == "shutdown":
            msg["op"] = "ping"  # the one request the fuzzer must not send: a valid stop
        for key in rng.sample(sorted(msg), rng.randint(0, 1)):
            del msg[key]
        return msg

    kind = rng.randrange(9)
    if kind == 0:
        return [b"", rng.randbytes(rng.randint(0, 400))]
    if kind == 1:
        data = dump(request())
        return [b"", data[: rng.randint(0, len(data))]]
    if kind == 2:
        depth = rng.choice([50, 990, 5000, 200000])
        opener, closer = rng.choice(
            [(b"[", b"]"), (b'{"a":', b"}"), (b'{"v":1,"op":"ping","args":{"a":', b"}}")]
        )
        return [b"", opener * depth + (closer * depth if rng.random() < 0.5 else b"")]
    if kind == 3:
        return [
            b"",
            rng.choice(
                [
                    b'{"v":' + b"9" * rng.randint(4000, 20000) + b"}",
                    b'{"v":1e999999}',
                    b'{"v":NaN,"op":"ping"}',
                    b'"' + b"\\ud800" * 100 + b'"',
                    b"null",
                    b"[]",
                    b"7",
                ]
            ),
        ]
    if kind == 4:
        return [
            b"",
            dump(request()),
            *[rng.randbytes(rng.randint(0, 50)) for _ in range(rng.randint(1, 4))],
        ]
    if kind == 5:
        return [rng.randbytes(rng.randint(0, 20)) for _ in range(rng.randint(1, 5))] + [
            dump(request())
        ]
    if kind == 6:  # past the token check, into the workspace ops, one argument of a random type
        op = rng.choice(sorted(set(OPERATIONS) - {"shutdown"}))
        return [
            b"",
            dump(
                {
                    "v": 1,
                    "op": op,
                    "root": root(),
                    "token": token,
                    "args": {rng.choice(ARG_NAMES): value()},
                }
            ),
        ]
    if kind == 7:  # a well-formed request with another daemon's (or a near-miss) token
        op = rng.choice(sorted(OPERATIONS))
        return [b"", dump({"v": 1, "op": op, "root": root(), "token": wrong_token(), "args": {}})]
    return [b"", dump(request())]
