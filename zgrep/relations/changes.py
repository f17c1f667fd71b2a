"""The staged change as impact targets: `PATH:START-END` per staged hunk (stdlib + zgrep.git: thin-client safe)."""

from __future__ import annotations

import re
from pathlib import Path

from zgrep import git

_HUNK = re.compile(rb"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@", re.MULTILINE)
_ESCAPE = re.compile(rb"\\([0-7]{3}|.)")
_ESCAPED = {b"a": b"\a", b"b": b"\b", b"t": b"\t", b"n": b"\n", b"v": b"\v", b"f": b"\f", b"r": b"\r"}


def staged_targets(root: Path) -> list[str]:
    """One target per staged hunk, on the staged side's lines (a deletion names the line it happened at;
    a deleted file names the whole file)."""
    out = git.run(root, "diff", "--cached", "-U0", "--no-color", "--no-ext-diff", "--no-renames", "--src-prefix=a/",
                  "--dst-prefix=b/", own_index=True)
    targets: list[str] = []
    for block in re.split(rb"^diff --git ", out, flags=re.MULTILINE)[1:]:
        minus = re.search(rb"^--- (.*)$", block, re.MULTILINE)
        plus = re.search(rb"^\+\+\+ (.*)$", block, re.MULTILINE)
        if minus is None or plus is None:
            continue
        old, path = _diff_path(minus.group(1), b"a/"), _diff_path(plus.group(1), b"b/")
        if path is None:
            targets += [old] if old else []
            continue
        for hunk in _HUNK.finditer(block):
            start, count = int(hunk.group(3)), int(hunk.group(4) or b"1")
            targets.append(f"{path}:{max(start, 1)}-{max(start + count - 1, start, 1)}")
    return targets


def _diff_path(raw: bytes, prefix: bytes) -> str | None:
    """The path of a `---`/`+++` line (None for /dev/null): git C-quotes a name with unusual bytes
    (`"b/caf\\303\\251.py"`) and ends a name holding a space with a tab."""
    raw = raw.removesuffix(b"\t")
    if raw == b"/dev/null":
        return None
    if raw.startswith(b'"') and raw.endswith(b'"') and len(raw) > 1:
        raw = _ESCAPE.sub(lambda m: _unescape(m.group(1)), raw[1:-1])
    return raw.removeprefix(prefix).decode(errors="replace")


def _unescape(code: bytes) -> bytes:
    if len(code) == 3:
        return bytes([int(code, 8) & 0xFF])
    return _ESCAPED.get(code, code)
