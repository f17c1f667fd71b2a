"""File-system helpers shared by every layer: the one atomic writer and the one stat signature.

Standard library only (the thin client and the git hooks import it).
"""

from __future__ import annotations

import os
from pathlib import Path


def atomic_write(path: Path, data: str | bytes, mode: int = 0o600) -> None:
    """Write `data` to `path` with permissions `mode` via a temp file + fsync + rename; parents are created."""
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
