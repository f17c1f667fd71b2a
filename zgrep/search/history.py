"""`zg eval --from-history N`: a repository's own commits as annotated queries (the subject line
asks, the files the commit changed that are indexed today answer), scored with bootstrap confidence
intervals."""

from __future__ import annotations

import re
import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, TypedDict

from zgrep import git
from zgrep.config import Config
from zgrep.index import discovery
from zgrep.index.ignore import IgnoreRules
from zgrep.search.evaluate import K, Query, QueryReport, Target, evaluate_workspace
from zgrep.telemetry import Interval, bootstrap

# a commit touching more files is a sweep (rename, reformat, vendoring), not one question
MAX_FILES = 20
# commits looked at per commit wanted, so a history of sweeps cannot make it scan forever
SCAN_FACTOR = 10
_PR_REF = re.compile(
    r"\s*\((?:#|[A-Za-z0-9_.-]+#)\d+\)|\s*#\d+\b"
)  # `(#123)`, `(org/repo#12)`, `#45`


class HistoryError(ValueError):
    """A history that cannot be scored (no git repository, no commit that qualifies)."""


@dataclass
class History:
    """The commits turned into queries, and how many were passed over and why."""

    queries: list[Query] = field(default_factory=list)
    commits: list[str] = field(default_factory=list)
    skipped: dict[str, int] = field(
        default_factory=lambda: {"merge": 0, "too_many_files": 0, "no_indexed_file": 0}
    )


def history_queries(root: Path, cfg: Config, count: int) -> History:
    """The newest `count` commits that are not merges, touch at most MAX_FILES files and changed at
    least one file the indexer admits as it is today (a deleted file answers nothing)."""
    if not git.is_git_repo(root):
        raise HistoryError(f"{root} is not a git repository: --from-history reads its commits")
    log = git.try_run(root, "log", f"-n{count * SCAN_FACTOR}", "--format=%H%x00%P%x00%s%x00")
    if not log:
        raise HistoryError(f"{root} has no commits to score")
    rules = IgnoreRules.for_root(root, include_hidden=cfg.index.include_hidden)
    max_bytes = cfg.index.max_file_bytes
    admitted: dict[str, bool] = {}
    out = History()
    fields = log.decode("utf-8", "replace").split("\0")
    for sha, parents, subject in zip(fields[0::3], fields[1::3], fields[2::3]):
        if len(out.queries) >= count:
            break
        sha = sha.strip()
        if len(parents.split()) > 1:
            out.skipped["merge"] += 1
            continue
        entries = git.changes(root, "diff-tree", "-r", "-M", "--root", "--no-commit-id", sha)
        if len(entries) > MAX_FILES:
            out.skipped["too_many_files"] += 1
            continue
        paths = [e.path for e in entries if not e.status.startswith("D")]
        for path in paths:
            if path not in admitted:
                admitted[path] = _indexable(root, rules, path, max_bytes)
        answers = tuple(Target(p) for p in paths if admitted[p])
        text = _PR_REF.sub("", subject).strip()
        if not answers or not text:
            out.skipped["no_indexed_file"] += 1
            continue
        out.queries.append(Query(text, answers, "history"))
        out.commits.append(sha)
    if not out.queries:
        raise HistoryError(_no_queries(root, len(fields) // 3, out.skipped))
    return out


def _no_queries(root: Path, scanned: int, skipped: dict[str, int]) -> str:
    """Why no commit of those scanned became a query, counting each reason (the only commit: its
    reason)."""
    one = {
        "merge": "is a merge",
        "too_many_files": f"changes more than {MAX_FILES} files",
        "no_indexed_file": "changes no file zg indexes",
    }
    many = {
        "merge": "are merges",
        "too_many_files": f"change more than {MAX_FILES} files",
        "no_indexed_file": "change no file zg indexes",
    }
    if scanned == 1:
        return f"the only commit of {root} gives no query: it " + next(
            one[k] for k, n in skipped.items() if n
        )
    reasons = ", ".join(f"{n} {one[k] if n == 1 else many[k]}" for k, n in skipped.items() if n)
    return f"none of the last {scanned} commits of {root} gives a query: {reasons}"


def _indexable(root: Path, rules: IgnoreRules, path: str, max_bytes: int) -> bool:
    """Whether the indexer would index `path` as it is now (listed, a readable text file)."""
    if not discovery.filter_paths(root, rules, [path]):
        return False
    return isinstance(discovery.read_file(root, path, max_bytes=max_bytes), discovery.LoadedFile)


class CommitReport(QueryReport):
    """One commit's query line."""

    commit: str


HistoryReport = TypedDict(
    "HistoryReport",
    {
        "mode": str,
        "commits": int,
        "skipped": dict[str, int],
        "k": int,
        "ndcg@10": Interval,
        "mrr": Interval,
        "p50_latency_ms": float,
        "index_s": float,
        "per_query": list[CommitReport],
    },
)
"""`zg eval --from-history N --json`."""


def evaluate_history(root: Path, cfg: Config, count: int, mode: str) -> HistoryReport:
    """NDCG@10 and MRR of search over the commits' queries, each with a 95% bootstrap interval."""
    history = history_queries(root, cfg, count)
    result = evaluate_workspace(root, history.queries, mode=mode)
    rows = result["rows"]
    per_query: list[CommitReport] = [
        {"commit": sha, **row} for sha, row in zip(history.commits, result["per_query"])
    ]
    return {
        "mode": result["mode"],
        "commits": len(history.queries),
        "skipped": history.skipped,
        "k": K,
        "ndcg@10": bootstrap([r["ndcg@10"] for r in rows], statistics.fmean),
        "mrr": bootstrap([r["mrr"] for r in rows], statistics.fmean),
        "p50_latency_ms": result["p50_latency_ms"],
        "index_s": result["index_s"],
        "per_query": per_query,
    }


def format_history(result: HistoryReport) -> str:
    """The two figures with their intervals, and what was skipped."""

    def figure(name: Literal["ndcg@10", "mrr"]) -> str:
        s = result[name]
        return f"{name:<8} {s['value']:.3f}  (95% CI {s['ci'][0]:.3f}-{s['ci'][1]:.3f})"

    skipped = ", ".join(f"{n} {why.replace('_', ' ')}" for why, n in result["skipped"].items() if n)
    return "\n".join(
        [
            f"{result['commits']} commits scored (commit subject as the query, its changed files as the answer)",
            figure("ndcg@10"),
            figure("mrr"),
            f"p50 latency {result['p50_latency_ms']:.1f} ms, index {result['index_s']:.2f} s"
            + (f"; skipped: {skipped}" if skipped else ""),
        ]
    )
