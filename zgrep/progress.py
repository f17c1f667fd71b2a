"""Index progress on stderr when it is a terminal (used by direct and server mode alike).

Imported on the thin client path: standard library only.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import TypedDict


ProgressEvent = TypedDict(  # noqa: UP013 (the class form makes typing compile each annotation)
    "ProgressEvent",
    {"files_done": int, "files_total": int, "chunks_done": int, "final": bool},
    total=False,
)
"""One index progress message (a daemon sends it in a progress frame); `final`: the last one of the
run. The functional form: its types are classes, not annotations typing would compile (the first
compilation in a process costs ~10M instructions, a served `zg search` imports this module)."""


Progress = Callable[[ProgressEvent], None]


def stderr_progress() -> Progress | None:
    """A progress printer for stderr when it is a terminal, else None."""
    if not sys.stderr.isatty():
        return None
    start = time.monotonic()

    def show(event: ProgressEvent) -> None:
        done, total = event.get("files_done", 0), event.get("files_total", 0)
        elapsed = max(time.monotonic() - start, 1e-6)
        rate = event.get("chunks_done", 0) / elapsed
        eta = (total - done) * elapsed / done if done else 0.0
        sys.stderr.write(
            f"\rindexing {done}/{total} files, {event.get('chunks_done', 0)} chunks, "
            f"{rate:.0f} chunks/s, ETA {eta:.0f}s "
        )
        if event.get("final"):
            sys.stderr.write("\n")
        sys.stderr.flush()

    return show
