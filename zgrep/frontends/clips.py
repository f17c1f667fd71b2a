"""Short hit ids for one server's lifetime: a FIFO-bounded map id -> `path:start-end` (the clip
store)."""

from __future__ import annotations

import threading
from collections import OrderedDict

CAPACITY = 10_000


class ClipStore:
    """Gives each distinct location a short id (`h1`, `h2`, ...); the oldest are forgotten past
    `capacity`."""

    def __init__(self, capacity: int = CAPACITY) -> None:
        self.capacity = capacity
        self._by_id: OrderedDict[str, str] = OrderedDict()
        self._by_location: dict[str, str] = {}
        self._next = 1
        self._lock = threading.Lock()

    def add(self, path: str, start: int, end: int) -> str:
        """The id of this location (the same id again for a location already held)."""
        location = f"{path}:{start}-{end}"
        with self._lock:
            known = self._by_location.get(location)
            if known is not None:
                self._by_id.move_to_end(known)
                return known
            clip_id = f"h{self._next}"
            self._next += 1
            self._by_id[clip_id] = location
            self._by_location[location] = clip_id
            while len(self._by_id) > self.capacity:
                _, old = self._by_id.popitem(last=False)
                del self._by_location[old]
            return clip_id

    def get(self, clip_id: str) -> str | None:
        """The `path:start-end` of `clip_id`, or None when it was never given or has been evicted."""
        with self._lock:
            return self._by_id.get(clip_id.strip())

    def __len__(self) -> int:
        return len(self._by_id)
