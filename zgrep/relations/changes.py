"""The staged change as impact targets: `PATH:START-END` per staged hunk (stdlib + zgrep.git: thin-client safe)."""

from __future__ import annotations

import re
from pathlib import Path

from zgrep import git

_HUNK = re.compile(rb"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@", re.MULTILINE)


def staged_targets(root: Path) -> list[str]:
    """One target per staged hunk, on the staged side's lines (a deletion names the line it happened at;
    a deleted file names the whole file)."""
    out = git.run(root, "diff", "--cached", "-U0", "--no-color", "--no-ext-diff", "--no-renames", own_index=True)
    targets: list[str] = []
    old = path = ""
    for block in re.split(rb"^diff --git ", out, flags=re.MULTILINE)[1:]:
        minus = re.search(rb"^--- (?:a/)?(.*)$", block, re.MULTILINE)
        plus = re.search(rb"^\+\+\+ (?:b/)?(.*)$", block, re.MULTILINE)
        if minus is None or plus is None:
            continue
        old, path = minus.group(1).decode(errors="replace"), plus.group(1).decode(errors="replace")
        if path == "/dev/null":
            targets.append(old)
            continue
        for hunk in _HUNK.finditer(block):
            start, count = int(hunk.group(3)), int(hunk.group(4) or b"1")
            targets.append(f"{path}:{max(start, 1)}-{max(start + count - 1, start, 1)}")
    return targets
