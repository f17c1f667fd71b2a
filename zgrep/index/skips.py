"""Content skip verdicts, `.zgrep/skipped.json`: a listed file left out for what its bytes hold
(binary, not UTF-8) is kept with its size and mtime, so a run that finds it unchanged counts it
without reading it again (Django: 1,300 binary files re-read by every no-change `zg index`).

A cache, trusted no further than `files.json`: anything malformed reads as empty (the files are then
read again), and it is never part of the index's consistency state."""

from __future__ import annotations

import json
from pathlib import Path

from zgrep.fsutil import atomic_write

SKIPPED_STATE = "skipped.json"
CONTENT_REASONS = frozenset({"binary", "not_utf8"})  # what re-reading unchanged bytes would repeat

Verdicts = dict[str, tuple[int, int, str]]  # path: (size, mtime_ns, reason)


def load(path: Path) -> Verdicts:
    """The recorded verdicts; empty when the file is missing, unreadable or not ours."""
    try:
        raw = json.loads(path.read_bytes())
    except (OSError, ValueError):
        return {}
    entries = raw.get("files") if isinstance(raw, dict) else None
    if not isinstance(entries, dict):
        return {}
    out: Verdicts = {}
    for rel, value in entries.items():
        if not (
            isinstance(value, list)
            and len(value) == 3
            and all(type(v) is int and v >= 0 for v in value[:2])
            and value[2] in CONTENT_REASONS
        ):
            return {}
        out[rel] = (value[0], value[1], value[2])
    return out


def save(path: Path, verdicts: Verdicts) -> None:
    """Write `verdicts` atomically."""
    data = {"files": {rel: list(v) for rel, v in sorted(verdicts.items())}}
    atomic_write(path, json.dumps(data, separators=(",", ":")))
