"""Helpers the bench scripts share: a private user environment for zg, a wall-clock stopwatch, percentiles, and
the aggregation of a quality run (semble.py, outside.py)."""

from __future__ import annotations

import math
import os
import statistics
import time
from collections.abc import Iterable
from pathlib import Path
from types import TracebackType
from typing import Any


def private_env(
    base: Path,
    *,
    home: bool = False,
    cache: bool = True,
    autostart: bool | None = None,
    ci: bool = True,
    pycache: bool = False,
    git_identity: tuple[str, str] | None = None,
    **extra: str,
) -> dict[str, str]:
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
    names = (
        ["HOME"] * home
        + ["XDG_RUNTIME_DIR", "XDG_STATE_HOME", "XDG_CONFIG_HOME"]
        + ["XDG_CACHE_HOME"] * cache
    )
    for name in names:
        path = base / name.lower()
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
        env[name] = str(path)
    if autostart is False:
        env["ZG_SERVER_AUTOSTART"] = "false"
    if git_identity:
        name, email = git_identity
        env.update(
            GIT_AUTHOR_NAME=name,
            GIT_AUTHOR_EMAIL=email,
            GIT_COMMITTER_NAME=name,
            GIT_COMMITTER_EMAIL=email,
        )
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

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
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


def mean(xs: list[float]) -> float | None:
    """The mean rounded to 4 places; None for no values."""
    return round(statistics.fmean(xs), 4) if xs else None


def summarise(results: dict[str, dict[str, Any]], repos: list[dict[str, Any]]) -> dict[str, Any]:
    """Per-language, per-category and overall figures of a quality run for dev, val and all (semble's aggregation:
    a repo's figure is the mean over its queries, a half's the mean over its repos). `results` maps a repo name to
    its zgrep.search.evaluate result; `repos` gives each name's "language" and "half"."""
    meta = {r["name"]: r for r in repos}
    out: dict[str, Any] = {"halves": {}}
    for half in ("dev", "val", "all"):
        names = [n for n in results if half == "all" or meta[n]["half"] == half]
        if not names:
            continue
        rows = [row for n in names for row in results[n]["rows"]]
        by_lang = {}
        for lang in sorted({meta[n]["language"] for n in names}):
            ln = [n for n in names if meta[n]["language"] == lang]
            by_lang[lang] = {
                "repos": ln,
                "ndcg@10": mean([results[n]["overall"]["ndcg@10"] for n in ln]),
                "queries": sum(results[n]["overall"]["queries"] for n in ln),
            }
        cats = sorted({r["category"] for r in rows})
        by_cat = {
            c: {
                "ndcg@10": mean([r["ndcg@10"] for r in rows if r["category"] == c]),
                "queries": sum(1 for r in rows if r["category"] == c),
            }
            for c in cats
        }
        latencies = [
            q["latency_ms"] for n in names for q in results[n]["per_query"] if "latency_ms" in q
        ]
        index_s = [results[n]["index_s"] for n in names]
        out["halves"][half] = {
            "repos": len(names),
            "queries": len(rows),
            "ndcg@10_repo_mean": mean([results[n]["overall"]["ndcg@10"] for n in names]),
            "ndcg@10_query_mean": mean([r["ndcg@10"] for r in rows]),
            "ndcg@10_language_mean": mean([v["ndcg@10"] for v in by_lang.values()]),
            "mrr": mean([r["mrr"] for r in rows]),
            "recall@10": mean([r["recall@10"] for r in rows]),
            "hit@1": mean([r["hit@1"] for r in rows]),
            "by_language": by_lang,
            "by_category": by_cat,
            "p50_latency_ms": round(statistics.median(latencies), 2) if latencies else None,
            "p90_latency_ms": round(percentile(latencies, 0.9), 2) if len(latencies) > 1 else None,
            "index_s_total": round(sum(index_s), 1),
            "index_s_median": round(statistics.median(index_s), 2),
        }
    return out
