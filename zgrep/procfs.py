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
    command = (
        " ".join(" ".join([os.path.basename(argv[0]), *argv[1:3]]).split())[:80] if argv else ""
    )
    return f"pid {pid} ({command})" if command else f"pid {pid}"


def cmdline(pid: int) -> list[str]:
    """The argument vector of process `pid`, or [] when unreadable."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            return [a.decode("utf-8", "replace") for a in fh.read().split(b"\0") if a]
    except OSError:
        return []


def lock_holder(device: str, kind: str = "FLOCK") -> int | None:
    """The pid holding a lock of `kind` (FLOCK, or POSIX for lockf) on the file `MAJ:MIN:INODE` (hex
    major/minor, as /proc/locks writes it; waiters, marked `->`, are not holders), or None."""
    try:
        with open("/proc/locks", encoding="ascii", errors="replace") as fh:
            for line in fh:
                fields = line.split()
                if (
                    len(fields) > 5
                    and fields[1] == kind
                    and fields[5].lower() == device
                    and fields[4].isdigit()
                ):
                    return int(fields[4])
    except OSError:
        pass
    return None
