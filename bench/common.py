"""Helpers the bench scripts share: a private user environment for zg, a wall-clock stopwatch, percentiles."""

from __future__ import annotations

import math
import os
import time
from collections.abc import Iterable
from pathlib import Path
from types import TracebackType


def private_env(base: Path, *, home: bool = False, cache: bool = True, autostart: bool | None = None,
                ci: bool = True, pycache: bool = False, git_identity: tuple[str, str] | None = None,
                **extra: str) -> dict[str, str]:
    """The environment without ZG_* and with XDG dirs of its own under `base`: zg meets no real daemon or config."""
    # home: HOME under `base` too (crash.py).
    # cache: XDG_CACHE_HOME under `base` too; False leaves the user's (daemon.py, autostart.py, mcp.py).
    # autostart: False sets ZG_SERVER_AUTOSTART=false, so "no daemon" stays so; True drops CI, under which an
    #   auto-mode search would not start the daemon (autostart.py); None leaves both to zg.
    # ci: False drops CI even so (scale.py: autostart off unless a copy of the env turns it on).
    # pycache: bytecode cached under base/pycache, as for an installed zg (PYTHONDONTWRITEBYTECODE dropped).
    # git_identity: (name, email) of the commits made. extra: variables set last, over all the others.
    dropped = {"CI"} if autostart or not ci else set()
    if pycache:
        dropped.add("PYTHONDONTWRITEBYTECODE")
    env = {k: v for k, v in os.environ.items() if not k.startswith("ZG_") and k not in dropped}
    if pycache:
        env["PYTHONPYCACHEPREFIX"] = str(base / "pycache")
    names = ["HOME"] * home + ["XDG_RUNTIME_DIR", "XDG_STATE_HOME", "XDG_CONFIG_HOME"] + ["XDG_CACHE_HOME"] * cache
    for name in names:
        path = base / name.lower()
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
        env[name] = str(path)
    if autostart is False:
        env["ZG_SERVER_AUTOSTART"] = "false"
    if git_identity:
        name, email = git_identity
        env.update(GIT_AUTHOR_NAME=name, GIT_AUTHOR_EMAIL=email, GIT_COMMITTER_NAME=name, GIT_COMMITTER_EMAIL=email)
    env.update(extra)
    return env


class Stopwatch:
    """Wall-clock seconds (time.perf_counter) since it was made; `elapsed` stops at the end of a `with` block."""

    __slots__ = ("_start", "_stop")

    def __init__(self) -> None:
        self._stop: float | None = None
        self._start = time.perf_counter()

    def __enter__(self) -> Stopwatch:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self._stop = time.perf_counter()

    @property
    def elapsed(self) -> float:
        """Seconds from the start to now, or to the end of the `with` block once it has ended."""
        return (time.perf_counter() if self._stop is None else self._stop) - self._start


def percentile(values: Iterable[float], q: float) -> float:
    """The q-quantile (0 <= q <= 1) by linear interpolation between closest ranks (numpy's default; 0.5: median)."""
    xs = sorted(values)
    if not xs or not 0 <= q <= 1:
        raise ValueError(f"percentile of {len(xs)} values at q={q}")
    pos = (len(xs) - 1) * q
    lo = math.floor(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)
