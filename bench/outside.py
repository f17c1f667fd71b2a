"""Our own outside benchmark (issue 21): zg beside whole-file BM25, in one run over the same files.

The repositories of `outside/repos.json` (outside semble's benchmark, pinned, each with its "half": dev or val)
are materialised as one-commit git repos under CORPORA (/work/corpora-outside, or $ZG_BENCH_OUTSIDE) by
`python ../shared/bench/materialize.py --repos bench/outside/repos.json MIRROR_ROOT CORPORA`. Annotations are
`outside/annotations/<name>.json` in semble's format, scored by semble's rule (binary NDCG@10 over relevant +
secondary targets; zgrep.search.evaluate).

For every repo, zg indexes the workspace and answers each query; then a plain BM25 ranker scores the files zg
indexed (.zgrep/files.json), whole files, no chunks, no model, no boosts: words are `\\w+` lowercased (no
identifier splitting, no stemming, no stopwords), k1 = 1.2, b = 0.75, idf = ln(1 + (N - df + 0.5) / (df + 0.5))
summed over the query's distinct words. A BM25 hit covers the whole file (lines 1..last).
Aggregation is semble's (common.summarise): a repo's figure is the mean over its queries, a half's the mean over
its repos. Choose constants on dev only; report val untouched.

The --json output has semble.py's shape (so bench/compare.py pairs two runs), with each repo's BM25 result
under "bm25" and the BM25 summary under "summary_bm25" (`compare.py OUT.json --bm25`: BM25 against zg).

Usage: python bench/outside.py [--half dev|val|all] [--repos fd,mux] [--json OUT] [--fresh]
           [--mode-search hybrid|lexical|semantic] [--show-misses]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import shutil
import statistics
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

from common import Stopwatch, summarise
from semble import corpus_bytes, f3

HERE = Path(__file__).resolve().parent
REPOS = HERE / "outside" / "repos.json"
ANNOTATIONS = HERE / "outside" / "annotations"
CORPORA = Path(os.environ.get("ZG_BENCH_OUTSIDE") or "/work/corpora-outside")
K1, B = 1.2, 0.75
_WORD = re.compile(r"\w+")


def words(text: str) -> list[str]:
    """The plain tokenizer: `\\w+` runs, lowercased."""
    return _WORD.findall(text.lower())


class WholeFileBM25:
    """Okapi BM25 over whole files."""

    def __init__(self, docs: dict[str, str]) -> None:
        self.tf = {path: Counter(words(text)) for path, text in docs.items()}
        self.length = {path: sum(c.values()) for path, c in self.tf.items()}
        self.lines = {
            path: max(1, text.count("\n") + (not text.endswith("\n")))
            for path, text in docs.items()
        }
        self.avg = statistics.fmean(self.length.values()) if self.length else 0.0
        df: Counter[str] = Counter()
        for c in self.tf.values():
            df.update(c.keys())
        n = len(self.tf)
        self.idf = {w: math.log(1 + (n - d + 0.5) / (d + 0.5)) for w, d in df.items()}

    def search(self, query: str, k: int) -> list[dict[str, Any]]:
        """The k best files as hits covering the whole file."""
        terms = set(words(query)) & self.idf.keys()
        scores = []
        for path, c in self.tf.items():
            norm = K1 * (1 - B + B * self.length[path] / self.avg) if self.avg else K1
            s = sum(self.idf[w] * c[w] * (K1 + 1) / (c[w] + norm) for w in terms if w in c)
            if s > 0:
                scores.append((-s, path))
        return [
            {"path": p, "start_line": 1, "end_line": self.lines[p], "score": -s}
            for s, p in sorted(scores)[:k]
        ]


def bm25_run(ws: Path, queries: list[Any]) -> dict[str, Any]:
    """Whole-file BM25 over the files zg indexed in `ws`, scored like zgrep.search.evaluate.evaluate_workspace."""
    from zgrep.engine import FILES_STATE
    from zgrep.search.evaluate import K, mean_metrics, score
    from zgrep.workspace import STATE_DIR, read_object

    clock = Stopwatch()
    paths = sorted(((read_object(ws / STATE_DIR / FILES_STATE) or {}).get("files") or {}).keys())
    ranker = WholeFileBM25({p: (ws / p).read_text("utf-8", errors="replace") for p in paths})
    build_s = clock.elapsed
    rows, per_query = [], []
    for q in queries:
        t0 = time.perf_counter()
        hits = ranker.search(q.text, K)
        latency = time.perf_counter() - t0
        metrics = score(hits, q.targets)
        rows.append({**metrics, "category": q.category})
        top = [h["path"] for h in hits]
        per_query.append(
            {
                "query": q.text,
                "category": q.category,
                **metrics,
                "top": top[:3],
                "top10": top,
                "latency_ms": round(latency * 1000, 2),
            }
        )
    cats = sorted({r["category"] for r in rows})
    return {
        "overall": mean_metrics(rows),
        "by_category": {c: mean_metrics([r for r in rows if r["category"] == c]) for c in cats},
        "index_s": round(build_s, 2),
        "files": len(paths),
        "per_query": per_query,
        "rows": rows,
    }


def report(
    results: dict[str, dict[str, Any]],
    repos: list[dict[str, Any]],
    zg: dict[str, Any],
    bm: dict[str, Any],
    mode: str,
    missing: dict[str, str],
) -> str:
    """Per repo, per category and per half: zg, whole-file BM25 and the difference."""
    lines = [
        f"zg --mode-search {mode} against whole-file BM25 (same files, same run)",
        "",
        f"{'repo':<17} {'lang':<11} {'half':<4} {'n':>3} {'zg':>6} {'bm25':>6} {'delta':>7} {'zg mrr':>6} "
        f"{'bm mrr':>6} {'p50ms':>6} {'index_s':>7} {'files':>5}",
    ]
    for r in repos:
        n = r["name"]
        if n not in results:
            continue
        res, o, b = results[n], results[n]["overall"], results[n]["bm25"]["overall"]
        lines.append(
            f"{n:<17} {r['language']:<11} {r['half']:<4} {o['queries']:>3} {o['ndcg@10']:>6.3f} "
            f"{b['ndcg@10']:>6.3f} {o['ndcg@10'] - b['ndcg@10']:>+7.3f} {o['mrr']:>6.3f} {b['mrr']:>6.3f} "
            f"{res['p50_latency_ms']:>6.1f} {res['index_s']:>7.2f} {res['bm25']['files']:>5}"
        )
    cols = [h for h in ("dev", "val", "all") if h in zg["halves"]]
    head = " ".join(f"{h + ' zg':>7} {h + ' bm':>7} {'delta':>6}" for h in cols)
    lines += ["", "per category (mean over queries)", f"{'category':<13} {'n':>4} {head}"]
    for cat in sorted(zg["halves"]["all"]["by_category"]) if "all" in zg["halves"] else []:
        cells = []
        for h in cols:
            a = zg["halves"][h]["by_category"].get(cat, {}).get("ndcg@10")
            b = bm["halves"][h]["by_category"].get(cat, {}).get("ndcg@10")
            cells.append(
                f"{f3(a):>7} {f3(b):>7} {(a - b if a is not None and b is not None else 0):>+6.3f}"
            )
        lines.append(
            f"{cat:<13} {zg['halves']['all']['by_category'][cat]['queries']:>4} " + " ".join(cells)
        )
    lines += ["", f"{'overall':<18} {head}"]
    for key, label in (
        ("repos", "repos"),
        ("queries", "queries"),
        ("ndcg@10_repo_mean", "ndcg@10 (repo mean)"),
        ("ndcg@10_query_mean", "ndcg@10 (query mean)"),
        ("mrr", "mrr"),
        ("hit@1", "hit@1"),
        ("p50_latency_ms", "p50 latency ms"),
        ("index_s_median", "index s (median)"),
    ):
        cells = []
        for h in cols:
            a, b = zg["halves"][h].get(key), bm["halves"][h].get(key)
            if key in ("repos", "queries"):
                cells.append(f"{a:>7} {b:>7} {'':>6}")
            elif key in ("p50_latency_ms", "index_s_median"):
                cells.append(f"{a:>7.2f} {b:>7.2f} {'':>6}")
            else:
                cells.append(f"{f3(a):>7} {f3(b):>7} {a - b:>+6.3f}")
        lines.append(f"{label:<18} " + " ".join(cells))
    if missing:
        lines += ["", "not scored:"] + [f"  {n:<17} {why}" for n, why in missing.items()]
    return "\n".join(lines)


def main() -> int:
    from zgrep.search.evaluate import evaluate_workspace, load_annotations

    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument(
        "--half", default="all", choices=["dev", "val", "all"], help="the repos.json 'half' to run"
    )
    ap.add_argument("--repos", default="", help="comma-separated repo names (repos.json)")
    ap.add_argument(
        "--json",
        dest="json_out",
        default="",
        help="write every figure (and per-query results) here",
    )
    ap.add_argument(
        "--fresh", action="store_true", help="drop each workspace's index first (cold index)"
    )
    ap.add_argument(
        "--mode-search",
        default="hybrid",
        choices=["hybrid", "lexical", "semantic"],
        help="which of zg's routes to run (ablation); BM25 is the same in every mode",
    )
    ap.add_argument(
        "--show-misses", action="store_true", help="print queries where zg's NDCG@10 is below 0.5"
    )
    opts = ap.parse_args()

    repos = json.loads(REPOS.read_text())
    want = {r for r in opts.repos.split(",") if r}
    unknown = want - {r["name"] for r in repos}
    if unknown:
        print(f"outside.py: unknown repos: {', '.join(sorted(unknown))}", file=sys.stderr)
        return 2
    chosen = [
        r for r in repos if (not want or r["name"] in want) and opts.half in ("all", r["half"])
    ]
    results: dict[str, dict[str, Any]] = {}
    missing: dict[str, str] = {}
    todo = []
    for r in chosen:
        ws, ann = CORPORA / r["name"], ANNOTATIONS / f"{r['name']}.json"
        if not (ws / ".git").exists():
            missing[r["name"]] = f"no corpus at {ws} (run materialize.py --repos {REPOS})"
        elif not ann.exists():
            missing[r["name"]] = f"no annotations at {ann}"
        else:
            todo.append((r, ws, ann))
    todo.sort(key=lambda t: corpus_bytes(t[1]))
    out_path = Path(opts.json_out) if opts.json_out else None

    def save() -> tuple[dict[str, Any], dict[str, Any]]:
        ordered = {r["name"]: results[r["name"]] for r in repos if r["name"] in results}
        zg, bm = (
            summarise(ordered, repos),
            summarise({n: v["bm25"] for n, v in ordered.items()}, repos),
        )
        if out_path:
            doc = {
                "mode_search": opts.mode_search,
                "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                "corpora": str(CORPORA),
                "bm25": {"k1": K1, "b": B, "tokens": r"\w+ lowercased"},
                "summary": zg,
                "summary_bm25": bm,
                "missing": missing,
                "halves": {r["name"]: r["half"] for r in repos},
                "repos": ordered,
            }
            tmp = out_path.with_suffix(out_path.suffix + ".tmp")
            tmp.write_text(json.dumps(doc, indent=1))
            tmp.replace(out_path)
        return zg, bm

    for r, ws, ann in todo:
        name = r["name"]
        clock = Stopwatch()
        print(f"{name} ({r['language']}, {r['half']}) ...", file=sys.stderr, flush=True)
        try:
            queries = load_annotations(ann)
            if opts.fresh:
                shutil.rmtree(ws / ".zgrep", ignore_errors=True)
            res = evaluate_workspace(ws, queries, {"search_mode": opts.mode_search})
            res["bm25"] = bm25_run(ws, queries)
        except Exception as exc:  # one repo's failure is reported, the run goes on
            missing[name] = f"failed: {type(exc).__name__}: {exc}"[:300]
            print(f"  {missing[name]}", file=sys.stderr, flush=True)
            save()
            continue
        res.update(language=r["language"], half=r["half"], source="git")
        results[name] = res
        o, b = res["overall"], res["bm25"]["overall"]
        print(
            f"  zg {o['ndcg@10']:.3f}, whole-file BM25 {b['ndcg@10']:.3f} over {o['queries']} queries; "
            f"index {res['index_s']:.1f}s, p50 {res['p50_latency_ms']:.1f}ms, wall {clock.elapsed:.0f}s",
            file=sys.stderr,
            flush=True,
        )
        if opts.show_misses:
            for q, bq in zip(res["per_query"], res["bm25"]["per_query"], strict=True):
                if q["ndcg@10"] < 0.5:
                    print(
                        f"  MISS zg {q['ndcg@10']:.2f} bm25 {bq['ndcg@10']:.2f} [{q['category']}] {q['query']!r} "
                        f"-> {q['top']}",
                        file=sys.stderr,
                    )
        save()
    if not results:
        print("outside.py: nothing scored", file=sys.stderr)
        for n, why in missing.items():
            print(f"  {n}: {why}", file=sys.stderr)
        return 1
    zg, bm = save()
    ordered = {r["name"]: results[r["name"]] for r in repos if r["name"] in results}
    print(report(ordered, repos, zg, bm, opts.mode_search, missing))
    return 0


if __name__ == "__main__":
    sys.exit(main())
