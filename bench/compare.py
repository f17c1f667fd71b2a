"""Paired comparison of two benchmark runs (`bench/semble.py --json` or `bench/outside.py --json` outputs).

Queries are paired by repo and query text. For each half (dev, val, all) it prints the mean NDCG@10
difference B - A over repos (semble's aggregation: a repo's figure is the mean over its queries) with a
bootstrap 95% interval that resamples repos, the mean difference over queries with one that resamples
queries, the count of repos up / down / unchanged, the same per category, and the queries whose NDCG@10
changed most. Only repos and queries present in both runs are compared; the rest are listed.

With one file from bench/outside.py, A is its whole-file BM25 column and B zg (`--bm25`).

Usage: python bench/compare.py A.json B.json [--top 15] [--boot 10000] [--seed 0]
       python bench/compare.py OUTSIDE.json --bm25
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

EPS = 1e-9


@dataclass(frozen=True)
class Pair:
    """One query scored in both runs."""

    repo: str
    half: str
    category: str
    query: str
    a: float
    b: float

    @property
    def diff(self) -> float:
        return self.b - self.a


def per_query(
    doc: dict[str, Any], bm25: bool = False
) -> dict[tuple[str, str, int], tuple[str, str, float]]:
    """(repo, query, occurrence) -> (half, category, NDCG@10) of one run (its BM25 column with `bm25`)."""
    out = {}
    halves = doc.get("halves", {})
    for repo, res in doc["repos"].items():
        rows = res["bm25"]["per_query"] if bm25 else res["per_query"]
        seen: dict[str, int] = {}
        for q in rows:
            k = seen.get(q["query"], 0)
            seen[q["query"]] = k + 1
            out[(repo, q["query"], k)] = (
                res.get("half") or halves.get(repo, "?"),
                q["category"],
                float(q["ndcg@10"]),
            )
    return out


def pair(
    a: dict[tuple[str, str, int], tuple[str, str, float]],
    b: dict[tuple[str, str, int], tuple[str, str, float]],
) -> list[Pair]:
    return [
        Pair(key[0], a[key][0], a[key][1], key[1], a[key][2], b[key][2]) for key in a if key in b
    ]


def bootstrap_mean(values: np.ndarray, boot: int, rng: np.random.Generator) -> tuple[float, float]:
    """Percentile 95% interval of the mean of `values` resampled with replacement `boot` times."""
    if len(values) < 2:
        return float(values.mean()), float(values.mean())
    means = np.empty(boot)
    step = max(1, 2_000_000 // len(values))
    for i in range(0, boot, step):
        n = min(step, boot - i)
        means[i : i + n] = values[rng.integers(0, len(values), (n, len(values)))].mean(axis=1)
    lo, hi = np.percentile(means, [2.5, 97.5])
    return float(lo), float(hi)


def repo_diffs(pairs: list[Pair]) -> dict[str, tuple[float, float]]:
    """repo -> (mean NDCG@10 in A, in B) over its paired queries."""
    by: dict[str, list[Pair]] = {}
    for p in pairs:
        by.setdefault(p.repo, []).append(p)
    return {
        r: (float(np.mean([p.a for p in ps])), float(np.mean([p.b for p in ps])))
        for r, ps in by.items()
    }


def line(label: str, pairs: list[Pair], boot: int, rng: np.random.Generator) -> str:
    """One table row: A, B, repo-mean diff [CI], query-mean diff [CI], repos up/down/same."""
    repos = repo_diffs(pairs)
    rd = np.array([b - a for a, b in repos.values()])
    qd = np.array([p.diff for p in pairs])
    rlo, rhi = bootstrap_mean(rd, boot, rng)
    qlo, qhi = bootstrap_mean(qd, boot, rng)
    a_mean = np.mean([a for a, _ in repos.values()])
    b_mean = np.mean([b for _, b in repos.values()])
    up, down = int((rd > EPS).sum()), int((rd < -EPS).sum())
    return (
        f"{label:<14} {len(repos):>5} {len(pairs):>5} {a_mean:>6.3f} {b_mean:>6.3f} "
        f"{rd.mean():>+7.4f} [{rlo:+.4f},{rhi:+.4f}] {qd.mean():>+7.4f} [{qlo:+.4f},{qhi:+.4f}] "
        f"{up}/{down}/{len(repos) - up - down}"
    )


def report(pairs: list[Pair], top: int, boot: int, seed: int) -> str:
    rng = np.random.default_rng(seed)
    head = (
        f"{'':<14} {'repos':>5} {'q':>5} {'A':>6} {'B':>6} {'B-A repo':>7} {'95% (repos)':<17} "
        f"{'B-A q':>7} {'95% (queries)':<17} up/down/same"
    )
    lines = [head]
    halves = [h for h in ("dev", "val") if any(p.half == h for p in pairs)]
    for half in [*halves, "all"]:
        hp = [p for p in pairs if half == "all" or p.half == half]
        lines.append(line(half, hp, boot, rng))
        for cat in sorted({p.category for p in hp}):
            lines.append(line(f"  {cat}", [p for p in hp if p.category == cat], boot, rng))
    lines += ["", "per repo (B - A, mean over its queries)"]
    for r, (a, b) in sorted(repo_diffs(pairs).items(), key=lambda kv: kv[1][1] - kv[1][0]):
        half = next(p.half for p in pairs if p.repo == r)
        lines.append(f"  {r:<22} {half:<4} {a:.3f} -> {b:.3f} {b - a:>+7.4f}")
    changed = sorted((p for p in pairs if abs(p.diff) > EPS), key=lambda p: -abs(p.diff))[:top]
    lines += [
        "",
        f"queries that changed most ({sum(abs(p.diff) > EPS for p in pairs)} of {len(pairs)} changed)",
    ]
    for p in changed:
        lines.append(
            f"  {p.diff:>+6.3f} {p.a:.2f}->{p.b:.2f} {p.repo:<18} {p.half:<4} {p.category:<12} {p.query[:90]!r}"
        )
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("a", help="baseline run's JSON")
    ap.add_argument("b", nargs="?", help="changed run's JSON")
    ap.add_argument(
        "--bm25",
        action="store_true",
        help="one bench/outside.py JSON: A = its whole-file BM25, B = zg",
    )
    ap.add_argument("--top", type=int, default=15, help="how many most-changed queries to list")
    ap.add_argument("--boot", type=int, default=10000, help="bootstrap resamples")
    ap.add_argument("--seed", type=int, default=0)
    opts = ap.parse_args()
    if bool(opts.b) == opts.bm25:
        print("compare.py: give two JSON files, or one with --bm25", file=sys.stderr)
        return 2
    try:
        docs = [json.loads(Path(p).read_text()) for p in (opts.a, opts.b or opts.a)]
        a, b = per_query(docs[0], bm25=opts.bm25), per_query(docs[1])
    except (OSError, ValueError, KeyError, TypeError) as exc:
        print(f"compare.py: cannot read a run: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 2
    pairs = pair(a, b)
    if not pairs:
        print("compare.py: the two runs share no query", file=sys.stderr)
        return 1
    modes = [d.get("mode_search", "?") for d in docs]
    print(
        f"A = {opts.a}{' (whole-file BM25)' if opts.bm25 else ''} [{modes[0]}]\nB = {opts.b or opts.a} [{modes[1]}]"
    )
    only = sorted({k[0] for k in a} ^ {k[0] for k in b})
    if only:
        print(f"repos in one run only (not compared): {', '.join(only)}")
    unpaired = sum(1 for k in a if k not in b) + sum(1 for k in b if k not in a)
    if unpaired:
        print(f"queries in one run only (not compared): {unpaired}")
    print(report(pairs, opts.top, opts.boot, opts.seed))
    return 0


if __name__ == "__main__":
    sys.exit(main())
