"""Index progress on stderr when it is a terminal (used by direct and server mode alike).

Imported on the thin client path: standard library only.
"""

from __future__ import annotations

import sys
import time
from typing import Any
from collections.abc import Callable

Progress = Callable[[dict[str, Any]], None]


def stderr_progress() -> Progress | None:
    """A progress printer for stderr when it is a terminal, else None."""
    if not sys.stderr.isatty():
        return None
    start = time.monotonic()

    def show(event: dict[str, Any]) -> None:
        done, total = event.get("files_done", 0), event.get("files_total", 0)
        elapsed = max(time.monotonic() - start, 1e-6)
        rate = event.get("chunks_done", 0) / elapsed
        eta = (total - done) * elapsed / done if done else 0.0
        sys.stderr.write(f"\rindexing {done}/{total} files, {event.get('chunks_done', 0)} chunks, "
                         f"{rate:.0f} chunks/s, ETA {eta:.0f}s ")
        if event.get("final"):
            sys.stderr.write("\n")
        sys.stderr.flush()

    return show
