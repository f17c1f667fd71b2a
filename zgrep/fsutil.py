"""File-system helpers shared by every layer: the one atomic writer, the one stat signature and the
one non-blocking open of a regular file.

Standard library only (the thin client and the git hooks import it), no pathlib at import."""

from __future__ import annotations

import os
import stat  # (os imports it already)

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (see zgrep.service)
if TYPE_CHECKING:
    from pathlib import Path


def atomic_write(path: Path, data: str | bytes, mode: int = 0o600) -> None:
    """Write `data` to `path` with permissions `mode` via a temp file + fsync + rename; parents are
    created."""
    import tempfile  # tempfile imports shutil, random and more: only where something is written

    path.parent.mkdir(parents=True, exist_ok=True)
    raw = data.encode("utf-8") if isinstance(data, str) else data
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)  # created 0600
    try:
        with os.fdopen(fd, "wb") as fh:
            if mode != 0o600:
                os.fchmod(fh.fileno(), mode)
            fh.write(raw)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def stat_signature(st: os.stat_result) -> tuple[int, int]:
    """`(size, mtime_ns)`: the cheap "did this file change?" test of the indexer and the watcher."""
    return st.st_size, st.st_mtime_ns


class NotRegularFile(OSError):
    """A path that is a FIFO, a device, a socket or a directory: nothing zgrep reads."""


class TooLarge(OSError):
    """A file bigger than the reader's cap."""


def open_regular(
    path: str | os.PathLike[str], *, follow_symlinks: bool
) -> tuple[int, os.stat_result]:
    """A read-only descriptor of a regular file, opened non-blocking (a FIFO cannot wedge the
    caller) and checked with `fstat` before any byte is read; NotRegularFile otherwise. The caller
    closes it."""
    flags = os.O_RDONLY | os.O_NONBLOCK | (0 if follow_symlinks else os.O_NOFOLLOW)
    fd = os.open(path, flags)
    try:
        st = os.fstat(fd)
    except OSError:
        os.close(fd)
        raise
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        raise NotRegularFile(f"{path} is not a regular file")
    return fd, st


def read_at_most(fd: int, limit: int) -> bytes:
    """Read until EOF or `limit` bytes."""
    chunks, total = [], 0
    while total < limit:
        chunk = os.read(fd, min(1 << 20, limit - total))
        if not chunk:
            break
        chunks.append(chunk)
        total += len(chunk)
    return b"".join(chunks)


def read_regular(path: str | os.PathLike[str], max_bytes: int) -> bytes:
    """The bytes of a small regular file (a config or ignore file), symlinks followed:
    NotRegularFile, TooLarge or the OSError of the open."""
    fd, st = open_regular(path, follow_symlinks=True)
    try:
        data = read_at_most(fd, max_bytes + 1)
    finally:
        os.close(fd)
    if len(data) > max_bytes:
        raise TooLarge(f"{path} is larger than {max_bytes} bytes")
    return data
