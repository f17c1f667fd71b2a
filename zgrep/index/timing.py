"""Wall time per phase of an index run (the breakdown `zg index --json` reports as `phases`)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager


class PhaseClock:
    """Accumulates seconds per named phase."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}

    @contextmanager
    def phase(self, name: str) -> Iterator[None]:
        """Time the enclosed block under `name` (phases may repeat; their times add up)."""
        start = time.perf_counter()
        try:
            yield
        finally:
            self.seconds[name] = self.seconds.get(name, 0.0) + time.perf_counter() - start

    def add(self, seconds: dict[str, float]) -> None:
        """Add another clock's seconds (a worker's batch) to these."""
        for name, value in seconds.items():
            self.seconds[name] = self.seconds.get(name, 0.0) + value

    def report(self) -> dict[str, float]:
        """Seconds per phase, rounded to milliseconds."""
        return {name: round(s, 3) for name, s in self.seconds.items()}
