"""Index progress events and the type of their receiver (`zgrep.server.client.stderr_progress` prints
them on a terminal).

Standard library only: typing at import (the thin client's served search does not import this)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypedDict


ProgressEvent = TypedDict(  # noqa: UP013 (the class form makes typing compile each annotation)
    "ProgressEvent",
    {"files_done": int, "files_total": int, "chunks_done": int, "final": bool},
    total=False,
)
"""One index progress message (a daemon sends it in a progress frame); `final`: the last one of the
run. The functional form: its types are classes, not annotations typing would compile (the first
compilation in a process costs ~10M instructions)."""


Progress = Callable[[ProgressEvent], None]
