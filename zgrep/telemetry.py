"""Opt-in local usage lines (`[telemetry] enabled = true`): one JSON line per search, index or
status in the user's state dir, read back by `zg stats`. Never code, paths or query text (queries
only with `include_queries = true`); nothing is ever sent anywhere.

Standard library only: the thin client path records through here."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from collections.abc import Callable
from typing import TYPE_CHECKING, TypedDict, TypeVar, cast

from zgrep import __version__
from zgrep.progress import Progress
from zgrep.server.client import Autostart, ClientError, call, call_served
from zgrep.server.runtime import state_dir

if TYPE_CHECKING:
    from zgrep.config import Config
    from zgrep.contracts import Args, IndexReport, JSONObject, SearchHit, SearchResult, Status

FILE = "telemetry.jsonl"
# past this the file becomes telemetry.jsonl.1 (one older generation is kept)
MAX_BYTES = 5 * 1024 * 1024
RECORDED = ("search", "index", "status")
INDEX_FIELDS = (
    "changed",
    "deleted",
    "unchanged",
    "chunks",
    "embedded",
    "files",
)  # counts only, never names


def log_path() -> Path:
    """`$XDG_STATE_HOME/zgrep/telemetry.jsonl`."""
    return state_dir() / FILE


class UsageLine(TypedDict, total=False):
    """One line of the log: numbers and names of modes, never code or paths (`queries` only when
    asked)."""

    ts: float
    command: str
    frontend: str
    mode: str | None
    took_ms: float
    version: str
    hits: int  # search
    top_score: float | None
    queries_count: int
    changed: int  # index (INDEX_FIELDS)
    deleted: int
    unchanged: int
    chunks: int | None  # index, status
    embedded: int
    files: int | None
    index_took_s: float | None
    dry_run: bool
    indexed: bool  # status
    exit: int
    queries: list[str]


def _hits(result: SearchResult) -> list[SearchHit]:
    groups = result.get("groups")
    return (
        [hit for group in groups for hit in group.get("hits", [])]
        if groups
        else list(result.get("hits", []))
    )


def line(
    command: str,
    frontend: str,
    mode: str | None,
    took_ms: float,
    result: JSONObject | None,
    exit_code: int | None,
    queries: list[str] | None,
) -> UsageLine:
    """The one JSON object recorded for a finished command: numbers and names of modes, nothing of
    the code. `exit_code` None: derived as the CLI does (a search without hits exits 1)."""
    doc: UsageLine = {
        "ts": round(time.time(), 3),
        "command": command,
        "frontend": frontend,
        "mode": mode,
        "took_ms": round(took_ms, 1),
        "version": __version__,
    }
    if result is not None and command == "search":
        found = cast("SearchResult", result)
        hits = _hits(found)
        doc.update(
            {
                "hits": len(hits),
                "top_score": max((h["score"] for h in hits), default=None),
                "queries_count": len(found.get("groups") or [found]),
            }
        )
        exit_code = exit_code if exit_code is not None else (0 if hits else 1)
    elif result is not None and command == "index":
        doc.update(cast(UsageLine, {key: result[key] for key in INDEX_FIELDS if key in result}))
        report = cast("IndexReport", result)
        doc.update({"index_took_s": report.get("took_s"), "dry_run": bool(report.get("dry_run"))})
    elif result is not None and command == "status":
        status = cast("Status", result)
        doc.update(
            {
                "indexed": bool(status.get("indexed")),
                "files": status.get("files"),
                "chunks": status.get("chunks"),
            }
        )
    doc["exit"] = exit_code if exit_code is not None else 0
    if queries is not None:
        doc["queries"] = queries
    return doc


# what a call answers: always (client.call), or None when it is left to another (client.call_served)
_Answer = TypeVar("_Answer", "tuple[JSONObject, str]", "tuple[JSONObject, str] | None")


def recorded_call(
    cfg: Config,
    op: str,
    root: str,
    args: Args,
    mode: str,
    frontend: str = "cli",
    on_progress: Progress | None = None,
) -> tuple[JSONObject, str]:
    """`client.call` with the config's probe and autostart settings, recorded (when telemetry is
    on); a ClientError is recorded with its exit code and raised again. Every front end calls
    through here."""
    return _recorded(
        cfg,
        op,
        args,
        frontend,
        lambda: call(
            op,
            root,
            args,
            mode,
            probe_ms=cfg.server.probe_timeout_ms,
            on_progress=on_progress,
            autostart=Autostart.from_config(cfg),
        ),
    )


def recorded_served(
    cfg: Config, op: str, root: str, args: Args, mode: str
) -> tuple[JSONObject, str] | None:
    """`client.call_served` (a read the daemon answers, else None) with the config's probe setting,
    recorded as `recorded_call` records it; None is not recorded (the click CLI's call will be)."""
    return _recorded(
        cfg,
        op,
        args,
        "cli",
        lambda: call_served(op, root, args, mode, cfg.server.probe_timeout_ms),
    )


def _recorded(
    cfg: Config,
    op: str,
    args: Args,
    frontend: str,
    ask: Callable[[], _Answer],
) -> _Answer:
    """`ask()`'s answer, recorded with the time it took (nothing recorded for None); a ClientError
    recorded with its exit code and raised again."""
    started = time.monotonic()
    try:
        answered = ask()
    except ClientError as exc:
        record(cfg, op, started, None, None, exc.exit_code, frontend, args.get("queries"))
        raise
    if answered is not None:
        result, used = answered
        record(cfg, op, started, used, result, frontend=frontend, queries=args.get("queries"))
    return answered


def record(
    cfg: Config,
    command: str,
    started: float,
    mode: str | None,
    result: JSONObject | None,
    exit_code: int | None = None,
    frontend: str = "cli",
    queries: list[str] | None = None,
) -> None:
    """Append one line for `command` (begun at monotonic `started`) when telemetry is on; never
    raises."""
    if command not in RECORDED or not cfg.telemetry.enabled:
        return
    doc = line(
        command,
        frontend,
        mode,
        (time.monotonic() - started) * 1000,
        result,
        exit_code,
        queries if cfg.telemetry.include_queries else None,
    )
    try:
        path = state_dir(create=True) / FILE
        if path.exists() and path.stat().st_size > MAX_BYTES:
            os.replace(path, path.with_name(FILE + ".1"))
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            # one write: concurrent lines never interleave
            os.write(fd, (json.dumps(doc) + "\n").encode("utf-8"))
        finally:
            os.close(fd)
    except OSError:
        pass  # a full disk or read-only state dir must not fail the search it describes


def read_lines(path: Path | None = None) -> list[UsageLine]:
    """Every readable line of the log (the older generation first); a damaged line is skipped."""
    path = path or log_path()
    out: list[UsageLine] = []
    for part in (path.with_name(path.name + ".1"), path):
        try:
            text = part.read_text("utf-8", errors="replace")
        except OSError:
            continue
        for raw in text.splitlines():
            try:
                doc = json.loads(raw)
            except ValueError:
                continue
            if (
                isinstance(doc, dict)
                and isinstance(doc.get("command"), str)
                and isinstance(doc.get("took_ms"), (int, float))
            ):
                out.append(cast(UsageLine, doc))
    return out


# --- `zg stats` ---------------------------------------------------------------------------------------------

RESAMPLES = 1000
MAX_SAMPLE = 5000  # the newest lines per statistic: bootstrap time stays well under a second


def quantile(values: list[float], q: float) -> float:
    """The `q` quantile of `values` by linear interpolation between order statistics."""
    ordered = sorted(values)
    pos = (len(ordered) - 1) * q
    low = int(pos)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (pos - low)


class Interval(TypedDict):
    """A statistic with its percentile-bootstrap interval and the number of values it saw."""

    value: float
    ci: list[float]  # [low, high]
    n: int


def bootstrap(
    values: list[float], stat: Callable[[list[float]], float], level: float = 0.95, seed: int = 0
) -> Interval:
    """`stat(values)` with a percentile-bootstrap confidence interval (`RESAMPLES` resamples, fixed
    seed)."""
    import random

    values = values[-MAX_SAMPLE:]
    rng = random.Random(seed)
    draws = (
        [stat(rng.choices(values, k=len(values))) for _ in range(RESAMPLES)]
        if len(values) > 1
        else [stat(values)]
    )
    tail = (1 - level) / 2
    return {
        "value": round(stat(values), 4),
        "ci": [round(quantile(draws, tail), 4), round(quantile(draws, 1 - tail), 4)],
        "n": len(values),
    }


class Latency(TypedDict):
    p50_ms: Interval
    p95_ms: Interval


class ModeSummary(Latency):
    runs: int


class CommandSummary(TypedDict, total=False):
    """One command's block of `zg stats --json` (latency only when some run did not fail)."""

    runs: int
    errors: int
    p50_ms: Interval
    p95_ms: Interval
    by_mode: dict[str, ModeSummary]
    zero_hit_rate: Interval  # searches
    changed_p50: Interval  # index runs that were not dry runs
    chunks_p50: Interval


def _latency(docs: list[UsageLine]) -> Latency:
    took = [float(d["took_ms"]) for d in docs]
    return {
        "p50_ms": bootstrap(took, lambda v: quantile(v, 0.5)),
        "p95_ms": bootstrap(took, lambda v: quantile(v, 0.95)),
    }


def summarize(docs: list[UsageLine]) -> dict[str, CommandSummary]:
    """Per command (and per mode): count, p50/p95 latency; searches' zero-hit rate; index runs'
    files and chunks. Each statistic with its 95% bootstrap interval; failed runs (exit 2) are
    counted, not timed."""
    out: dict[str, CommandSummary] = {}
    for command in RECORDED:
        runs = [d for d in docs if d["command"] == command]
        if not runs:
            continue
        done = [d for d in runs if d.get("exit") != 2]
        entry: CommandSummary = {"runs": len(runs), "errors": len(runs) - len(done)}
        if done:
            latency = _latency(done)
            entry["p50_ms"], entry["p95_ms"] = latency["p50_ms"], latency["p95_ms"]
            modes = sorted({str(d.get("mode")) for d in done})
            entry["by_mode"] = {
                m: {
                    "runs": len([d for d in done if str(d.get("mode")) == m]),
                    **_latency([d for d in done if str(d.get("mode")) == m]),
                }
                for m in modes
            }
        if command == "search" and done:
            zero = [1.0 if not d.get("hits") else 0.0 for d in done]
            entry["zero_hit_rate"] = bootstrap(zero, lambda v: sum(v) / len(v))
        if command == "index":
            real = [d for d in done if not d.get("dry_run")]
            changed = [float(v) for d in real if isinstance(v := d.get("changed"), (int, float))]
            if changed:
                entry["changed_p50"] = bootstrap(changed, lambda v: quantile(v, 0.5))
            chunks = [float(v) for d in real if isinstance(v := d.get("chunks"), (int, float))]
            if chunks:
                entry["chunks_p50"] = bootstrap(chunks, lambda v: quantile(v, 0.5))
        out[command] = entry
    return out
