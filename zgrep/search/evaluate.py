"""Retrieval evaluation on semble-format annotated queries (NDCG@10, MRR, recall@10, hit@1).

Scoring follows the benchmark's own rule: a chunk covers a target when its path ends with
the target's path and, for targets with a line span, the lines overlap; binary NDCG@10
over relevant + secondary targets, ideal DCG over min(10, number of targets).
"""

from __future__ import annotations

import json
import math
import statistics
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, Literal, TypedDict, cast

from zgrep.config import Config
from zgrep.contracts import Args, IndexReport, JSONObject, SearchHit, SearchResult
from zgrep.dispatch import handle
from zgrep.engine import Engine
from zgrep.server import client
from zgrep.service import INDEX, SEARCH

K = 10
Metric = Literal["ndcg@10", "mrr", "recall@10", "hit@1"]
METRICS: tuple[Metric, ...] = ("ndcg@10", "mrr", "recall@10", "hit@1")
Metrics = TypedDict("Metrics", {"ndcg@10": float, "mrr": float, "recall@10": float, "hit@1": float})
MeanMetrics = TypedDict(
    "MeanMetrics",
    {"ndcg@10": float, "mrr": float, "recall@10": float, "hit@1": float, "queries": int},
)


class Row(Metrics):
    """One query's metrics and its category."""

    category: str


class QueryReport(Metrics):
    """One query's line of `per_query`."""

    query: str
    category: str
    top: list[str]  # the first 3 of top10
    top10: list[str]  # path:start-end of each hit
    symbols: list[str]
    matched_by: list[list[str]]
    latency_ms: float


class EvalReport(TypedDict):
    """`zg eval --json`."""

    mode: str
    overall: MeanMetrics
    by_category: dict[str, MeanMetrics]
    p50_latency_ms: float
    index_s: float
    index: IndexReport
    per_query: list[QueryReport]
    rows: list[Row]


@dataclass(frozen=True)
class Target:
    """A file, or a line span in a file, that a query should find."""

    path: str
    start_line: int | None = None
    end_line: int | None = None

    @classmethod
    def parse(cls, raw: Any) -> Target:
        if isinstance(raw, str):
            return cls(raw)
        return cls(raw["path"], raw.get("start_line"), raw.get("end_line"))

    def covered_by(self, hit: SearchHit) -> bool:
        """The benchmark's coverage rule (one path ends with the other at a `/` boundary,
        overlapping lines)."""
        path, want = hit["path"].replace("\\", "/"), self.path.replace("\\", "/")
        if path != want and not path.endswith(f"/{want}") and not want.endswith(f"/{path}"):
            return False
        if self.start_line is None or self.end_line is None:
            return True
        return hit["start_line"] <= self.end_line and hit["end_line"] >= self.start_line


@dataclass(frozen=True)
class Query:
    """One annotated query."""

    text: str
    targets: tuple[Target, ...]
    category: str


class AnnotationError(ValueError):
    """An annotation file that cannot be read or is not in the semble format."""


def load_annotations(path: Path) -> list[Query]:
    """Queries of a semble annotation file (a JSON list of {query, relevant, secondary, category})."""
    try:
        items = json.loads(Path(path).read_text("utf-8"))
    except OSError as exc:
        raise AnnotationError(f"{path}: {exc.strerror}") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise AnnotationError(f"{path}: not JSON ({exc})") from None
    if not isinstance(items, list) or not items:
        raise AnnotationError(f"{path}: expected a non-empty JSON list of annotated queries")
    out = []
    try:
        for item in items:
            targets = tuple(
                Target.parse(t) for t in [*item.get("relevant", []), *item.get("secondary", [])]
            )
            if not isinstance(item["query"], str) or not item["query"].strip() or not targets:
                raise ValueError
            out.append(Query(item["query"], targets, item.get("category", "uncategorised")))
    except (AttributeError, KeyError, TypeError, ValueError):
        raise AnnotationError(
            f"{path}: query {len(out) + 1} lacks a query text or relevant targets"
        ) from None
    return out


def score(hits: list[SearchHit], targets: tuple[Target, ...]) -> Metrics:
    """NDCG@10, reciprocal rank, recall@10 and hit@1 of ranked hits."""
    top = hits[:K]
    first_rank: dict[int, int] = {}
    for rank, hit in enumerate(top, start=1):
        for i, target in enumerate(targets):
            if i not in first_rank and target.covered_by(hit):
                first_rank[i] = rank
    # a rank counts once even when its chunk covers several targets (semble's ndcg_at_k), so NDCG <=
    # 1
    dcg = sum(1.0 / math.log2(r + 1) for r in set(first_rank.values()))
    ideal = sum(1.0 / math.log2(r + 1) for r in range(1, min(K, len(targets)) + 1))
    any_rank = min(first_rank.values(), default=None)
    return {
        "ndcg@10": dcg / ideal if ideal else 0.0,
        "mrr": 1.0 / any_rank if any_rank else 0.0,
        "recall@10": len(first_rank) / len(targets) if targets else 0.0,
        "hit@1": 1.0 if any_rank == 1 else 0.0,
    }


def mean_metrics(rows: list[Row]) -> MeanMetrics:
    """Mean of each metric over rows."""

    def mean(metric: Metric) -> float:
        return round(statistics.fmean(r[metric] for r in rows), 4) if rows else 0.0

    return {
        "ndcg@10": mean("ndcg@10"),
        "mrr": mean("mrr"),
        "recall@10": mean("recall@10"),
        "hit@1": mean("hit@1"),
        "queries": len(rows),
    }


Ask = Callable[[str, Args], JSONObject]


@contextmanager
def _session(root: Path, mode: str) -> Iterator[tuple[Ask, list[str]]]:
    """How to run ops on `root`: in this process (direct, or auto with no daemon alive), else
    through the client (the daemon holding the workspace); with the modes used, filled in as ops
    run."""
    used: list[str] = []
    if mode == "server" or (mode == "auto" and client.live_daemon() is not None):

        def ask(op: str, args: Args) -> JSONObject:
            result, how = client.call(op, str(root), args, mode)
            used.append(how)
            return result

        yield ask, used
        return
    client.refuse_if_daemon_holds(str(root))
    engine = Engine(root, Config.load(root))
    used.append("direct")
    try:
        yield partial(handle, engine), used
    finally:
        engine.close()


def query_report(q: Query, hits: list[SearchHit], latency_s: float) -> tuple[Row, QueryReport]:
    """One query's scored row and its report (metrics, first hits, latency) from its hits."""
    metrics = score(hits, q.targets)
    top = [f"{h['path']}:{h['start_line']}-{h['end_line']}" for h in hits[:K]]
    report: QueryReport = {
        "query": q.text,
        "category": q.category,
        **metrics,
        "top": top[:3],
        "top10": top,
        "symbols": [h.get("symbol") or "" for h in hits[:K]],
        "matched_by": [h.get("matched_by") or [] for h in hits[:K]],
        "latency_ms": round(latency_s * 1000, 2),
    }
    return {**metrics, "category": q.category}, report


def evaluate_workspace(
    root: Path, queries: list[Query], args: Args | None = None, mode: str = "direct"
) -> EvalReport:
    """Index `root` (timed), run every query (in-process, or through the daemon unless `mode` is
    direct), score."""
    with _session(root, mode) as (ask, used):
        started = time.monotonic()
        index_report = ask(INDEX.name, {})
        index_s = time.monotonic() - started
        rows: list[Row] = []
        latencies: list[float] = []
        per_query: list[QueryReport] = []
        for q in queries:
            t0 = time.monotonic()
            res = cast(
                SearchResult,
                ask(
                    SEARCH.name,
                    {
                        "queries": [q.text],
                        "limit": K,
                        "preview": "none",
                        "refresh": "off",
                        **(args or {}),
                    },
                ),
            )
            latencies.append(time.monotonic() - t0)
            row, report = query_report(q, res.get("hits", []), latencies[-1])
            rows.append(row)
            per_query.append(report)
    categories = sorted({r["category"] for r in rows})
    return {
        "mode": used[-1],
        "overall": mean_metrics(rows),
        "by_category": {
            c: mean_metrics([r for r in rows if r["category"] == c]) for c in categories
        },
        "p50_latency_ms": round(statistics.median(latencies) * 1000, 1) if latencies else 0.0,
        "index_s": round(index_s, 2),
        "index": cast(IndexReport, index_report) if isinstance(index_report, dict) else {},
        "per_query": per_query,
        "rows": rows,
    }


def format_report(results: dict[str, EvalReport]) -> str:
    """A table per repository, per category and overall."""
    lines = [
        f"{'repo':<12} {'n':>4} {'ndcg@10':>8} {'mrr':>6} {'r@10':>6} {'hit@1':>6} {'p50ms':>7} {'index_s':>8}"
    ]
    all_rows: list[Row] = []
    for name, res in results.items():
        o = res["overall"]
        lines.append(
            f"{name:<12} {o['queries']:>4} {o['ndcg@10']:>8.3f} {o['mrr']:>6.3f} {o['recall@10']:>6.3f} "
            f"{o['hit@1']:>6.3f} {res['p50_latency_ms']:>7.1f} {res['index_s']:>8.2f}"
        )
        all_rows.extend(res["rows"])
    if len(results) > 1:
        o = mean_metrics(all_rows)
        lines.append(
            f"{'ALL':<12} {o['queries']:>4} {o['ndcg@10']:>8.3f} {o['mrr']:>6.3f} {o['recall@10']:>6.3f} {o['hit@1']:>6.3f}"
        )
    lines.append("")
    for cat in sorted({r["category"] for r in all_rows}):
        o = mean_metrics([r for r in all_rows if r["category"] == cat])
        lines.append(
            f"{cat:<12} {o['queries']:>4} {o['ndcg@10']:>8.3f} {o['mrr']:>6.3f} {o['recall@10']:>6.3f} {o['hit@1']:>6.3f}"
        )
    return "\n".join(lines)
