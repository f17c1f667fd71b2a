"""What /proc says about a process (Linux; elsewhere the readers answer None).

Standard library only (the thin client imports it).
"""

from __future__ import annotations

import os


def process_state(pid: int) -> bytes | None:
    """The state letter of process `pid` (b"R", b"S", b"T", b"Z", ...), or None when unreadable."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            return fh.read().rsplit(b")", 1)[-1].split()[0]
    except (OSError, IndexError):
        return None


def describe(pid: int, argv: list[str]) -> str:
    """How zgrep names a process, e.g. "pid 123 (zg server run)": the program and two arguments."""
    command = " ".join(" ".join([os.path.basename(argv[0]), *argv[1:3]]).split())[:80] if argv else ""
    return f"pid {pid} ({command})" if command else f"pid {pid}"
