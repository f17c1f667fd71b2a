"""End-to-end retrieval benchmark on semble's whole annotated set (63 repos, 19 languages).

Every repository of `semble/repos.json` is indexed (only its benchmark root) and every annotated
query is scored by the benchmark's own rule (binary NDCG@10 over relevant + secondary targets).
Corpora live under CORPORA (default `../corpora` next to the checkout, or $ZG_BENCH_CORPORA):
- the Python subset from its pinned PyPI sdists (python-corpora.json; downloaded once into
  CORPORA/_sdists and unpacked to CORPORA/<name>, keeping the path prefix);
- every other language as one-commit git repos made by
  `python ../shared/bench/materialize.py MIRROR_ROOT CORPORA` (CORPORA/<name>/.git).
A repo whose corpus is absent is listed as missing, not scored.

Halves (issue 14): for each language, the repos with an even index in repos.json order (0-based
within that language) are the development half (`--half dev`), the rest validation (`--half val`).
Choose constants on dev only; report val untouched.

Aggregation follows semble's published tables: a repo's figure is the mean over its queries, a
language's figure the mean over its repos, the overall figure the mean over repos. The mean over
all queries and the mean over languages are printed beside it.

Columns: index_s is the index call's wall time (cold with --fresh, else the incremental check);
new_chks the chunks that call wrote (the corpus's whole chunk count only with --fresh).

Usage: python bench/semble.py [--half dev|val|all] [--languages go,rust] [--repos flask,gin]
           [--json OUT] [--resume] [--fresh] [--mode-search hybrid|lexical|semantic]
           [--order size|repos] [--show-misses]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tarfile
import time
from pathlib import Path
from typing import Any

from common import Stopwatch, mean
from common import summarise as common_summarise

HERE = Path(__file__).resolve().parent
SHARED = Path(os.environ.get("ZG_BENCH_DATA", HERE.parent.parent / "shared" / "bench"))
CORPORA = Path(
    os.environ.get("ZG_BENCH_CORPORA")
    or os.environ.get("ZG_BENCH_CACHE")
    or HERE.parent.parent / "corpora"
)

# semble's published per-language NDCG@10 (benchmarks/README.md): (semble, CodeRankEmbed hybrid).
PUBLISHED_LANG = {
    "scala": (0.909, 0.922),
    "cpp": (0.915, 0.913),
    "ruby": (0.909, 0.909),
    "elixir": (0.894, 0.905),
    "javascript": (0.917, 0.903),
    "zig": (0.913, 0.901),
    "csharp": (0.885, 0.889),
    "go": (0.895, 0.884),
    "python": (0.867, 0.880),
    "php": (0.858, 0.874),
    "swift": (0.860, 0.873),
    "bash": (0.825, 0.852),
    "lua": (0.823, 0.847),
    "java": (0.849, 0.841),
    "kotlin": (0.821, 0.830),
    "rust": (0.856, 0.827),
    "c": (0.741, 0.806),
    "haskell": (0.765, 0.771),
    "typescript": (0.706, 0.708),
}
PUBLISHED_OVERALL = (0.854, 0.862)
PUBLISHED_CATEGORY = {
    "architecture": (0.802, 0.811),
    "semantic": (0.846, 0.863),
    "symbol": (0.958, 0.941),
}
# semble's own per-repo NDCG@10 (MinishLab/semble benchmarks/results/semble-hybrid-0332378809c5.json,
# whose mean over these 63 repos is the published .854): lets a subset compare like with like.
SEMBLE_REPO = {
    "abseil-cpp": 0.949,
    "aeson": 0.762,
    "aiohttp": 0.852,
    "alamofire": 0.964,
    "axios": 0.874,
    "axum": 0.801,
    "bash-it": 0.670,
    "bats-core": 0.841,
    "cats": 0.911,
    "chi": 0.867,
    "circe": 0.859,
    "click": 1.0,
    "cobra": 0.959,
    "commons-lang": 0.896,
    "curl": 0.726,
    "dapper": 0.881,
    "ecto": 0.927,
    "exposed": 0.712,
    "express": 0.964,
    "fastapi": 0.787,
    "flask": 0.913,
    "fmtlib": 0.935,
    "gin": 0.860,
    "gson": 0.917,
    "guzzle": 0.933,
    "http4s": 0.957,
    "httpx": 0.860,
    "jackson-databind": 0.733,
    "kotlinx-coroutines": 0.907,
    "ktor": 0.843,
    "laravel-framework": 0.741,
    "lazy.nvim": 0.682,
    "libuv": 0.615,
    "messagepack-csharp": 0.883,
    "mini.nvim": 0.982,
    "model2vec": 0.693,
    "monolog": 0.901,
    "newtonsoft-json": 0.891,
    "nlohmann-json": 0.862,
    "nvm": 0.963,
    "pandoc": 0.719,
    "phoenix": 0.852,
    "plug": 0.901,
    "pydantic": 0.792,
    "rack": 0.893,
    "rails": 0.881,
    "redis": 0.881,
    "redux": 0.914,
    "requests": 0.965,
    "serde": 0.815,
    "sinatra": 0.953,
    "snapkit": 0.787,
    "starlette": 0.945,
    "telescope.nvim": 0.805,
    "tokio": 0.953,
    "trpc": 0.811,
    "vapor": 0.830,
    "vitest": 0.691,
    "xmonad": 0.814,
    "zig": 0.920,
    "zig-clap": 0.910,
    "zls": 0.910,
    "zod": 0.615,
}


def corpus(name: str, sdist: str, root: str, fresh: bool) -> Path:
    """A workspace holding `root` of the sdist at its original relative path (the Python subset)."""
    dl = CORPORA / "_sdists"
    dl.mkdir(parents=True, exist_ok=True)
    pkg, version = sdist.split("==")

    def archives() -> list[Path]:
        return [
            p
            for p in dl.glob("*.tar.gz")
            if p.name.lower().replace("_", "-").startswith(f"{pkg}-{version}".lower())
        ]

    if not archives():
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "download",
                "-q",
                "--no-deps",
                "--no-binary",
                ":all:",
                sdist,
                "-d",
                str(dl),
            ],
            check=True,
        )
    ws = CORPORA / name
    if fresh and ws.exists():
        shutil.rmtree(ws)
    if not (ws / root).exists():
        with tarfile.open(archives()[0]) as tar:
            top = tar.getnames()[0].split("/")[0]
            members = [
                m for m in tar.getmembers() if m.name.startswith(f"{top}/{root}/") and m.isfile()
            ]
            for m in members:
                m.name = m.name[len(top) + 1 :]
            tar.extractall(ws, members=members, filter="data")
    return ws


def scratch_copy(name: str, dest: Path) -> Path:
    """A fresh copy (no index state) of Python corpus `name` under `dest`, for timing whole commands."""
    spec = json.loads((SHARED / "python-corpora.json").read_text())[name]
    ws = dest / name
    shutil.copytree(
        corpus(name, spec["sdist"], spec["root"], fresh=False),
        ws,
        ignore=shutil.ignore_patterns(".zgrep"),
    )
    return ws


def plan_repos() -> list[dict[str, Any]]:
    """repos.json with each repo's half: index within its language, even = dev."""
    seen: dict[str, int] = {}
    out = []
    for repo in json.loads((SHARED / "semble" / "repos.json").read_text()):
        i = seen.get(repo["language"], 0)
        seen[repo["language"]] = i + 1
        out.append({**repo, "lang_index": i, "half": "dev" if i % 2 == 0 else "val"})
    return out


def resolve(repo: dict[str, Any], python: dict[str, Any], fresh: bool) -> tuple[Path | None, str]:
    """The workspace of a repo (materialized git corpus, else the Python sdist), or why there is none."""
    ws = CORPORA / repo["name"]
    if (ws / ".git").exists():
        if fresh:
            shutil.rmtree(ws / ".zgrep", ignore_errors=True)
        return ws, "git"
    if repo["name"] in python:
        spec = python[repo["name"]]
        return corpus(repo["name"], spec["sdist"], spec["root"], fresh), "sdist"
    return (
        None,
        f"no corpus at {ws} (run materialize.py; mirror missing or lacks the pinned commit)",
    )


def corpus_bytes(ws: Path) -> int:
    return sum(
        p.stat().st_size
        for p in ws.rglob("*")
        if p.is_file() and ".git" not in p.parts and ".zgrep" not in p.parts
    )


def summarise(results: dict[str, dict[str, Any]], repos: list[dict[str, Any]]) -> dict[str, Any]:
    """common.summarise plus semble's own figures on the same repos and the languages at or above semble's."""
    out = common_summarise(results, repos)
    for half in out["halves"].values():
        for v in half["by_language"].values():
            v["semble_same_repos"] = mean([SEMBLE_REPO[n] for n in v["repos"] if n in SEMBLE_REPO])
        names = [n for v in half["by_language"].values() for n in v["repos"]]
        half["semble_same_repos"] = mean([SEMBLE_REPO[n] for n in names if n in SEMBLE_REPO])
        half["languages_at_or_above_semble"] = sum(
            1
            for lang, v in half["by_language"].items()
            if v["ndcg@10"] is not None and v["ndcg@10"] >= PUBLISHED_LANG[lang][0]
        )
    return out


def f3(x: float | None) -> str:
    return "   -" if x is None else f"{x:.3f}"


def report(
    results: dict[str, dict[str, Any]],
    repos: list[dict[str, Any]],
    summary: dict[str, Any],
    missing: dict[str, str],
) -> str:
    meta = {r["name"]: r for r in repos}
    lines = [
        f"{'repo':<20} {'lang':<11} {'half':<4} {'n':>4} {'ndcg@10':>7} {'semble':>6} {'delta':>6} {'mrr':>6} "
        f"{'hit@1':>6} {'p50ms':>7} {'index_s':>8} {'files':>6} {'new_chks':>8}"
    ]
    for r in repos:
        n = r["name"]
        if n not in results:
            continue
        res, o = results[n], results[n]["overall"]
        s = SEMBLE_REPO.get(n)
        idx = res.get("index") or {}
        lines.append(
            f"{n:<20} {r['language']:<11} {r['half']:<4} {o['queries']:>4} {o['ndcg@10']:>7.3f} {f3(s):>6} "
            f"{(o['ndcg@10'] - s if s is not None else 0):>+6.3f} {o['mrr']:>6.3f} {o['hit@1']:>6.3f} "
            f"{res['p50_latency_ms']:>7.1f} {res['index_s']:>8.2f} {idx.get('files', ''):>6} {idx.get('chunks', ''):>8}"
        )
    halves = summary["halves"]
    cols = [h for h in ("dev", "val", "all") if h in halves]
    lines += [
        "",
        "per language (mean over repos; 'same' = semble's own figure on the repos scored here)",
        f"{'language':<11} {'repos':>5} "
        + " ".join(f"{h:>6}" for h in cols)
        + f" {'same':>6} {'semble':>6} {'CRE-h':>6} {'delta':>6}",
    ]
    for lang in sorted(PUBLISHED_LANG, key=lambda x: -PUBLISHED_LANG[x][0]):
        if lang not in halves.get("all", {}).get("by_language", {}):
            lines.append(
                f"{lang:<11} {0:>5} "
                + " ".join(f"{'-':>6}" for _ in cols)
                + f" {'-':>6} {PUBLISHED_LANG[lang][0]:>6.3f} {PUBLISHED_LANG[lang][1]:>6.3f}"
            )
            continue
        a = halves["all"]["by_language"][lang]
        vals = [halves[h]["by_language"].get(lang, {}).get("ndcg@10") for h in cols]
        lines.append(
            f"{lang:<11} {len(a['repos']):>5} "
            + " ".join(f"{f3(v):>6}" for v in vals)
            + f" {f3(a['semble_same_repos']):>6} {PUBLISHED_LANG[lang][0]:>6.3f} {PUBLISHED_LANG[lang][1]:>6.3f}"
            f" {a['ndcg@10'] - PUBLISHED_LANG[lang][0]:>+6.3f}"
        )
    lines += [
        "",
        "per category (mean over queries)",
        f"{'category':<13} {'n':>5} "
        + " ".join(f"{h:>6}" for h in cols)
        + f" {'semble':>6} {'CRE-h':>6}",
    ]
    for cat in sorted(halves["all"]["by_category"]):
        vals = [halves[h]["by_category"].get(cat, {}).get("ndcg@10") for h in cols]
        pub = PUBLISHED_CATEGORY.get(cat, (None, None))
        lines.append(
            f"{cat:<13} {halves['all']['by_category'][cat]['queries']:>5} "
            + " ".join(f"{f3(v):>6}" for v in vals)
            + f" {f3(pub[0]):>6} {f3(pub[1]):>6}"
        )
    lines += ["", f"{'overall':<22} " + " ".join(f"{h:>6}" for h in cols)]
    for key, label in (
        ("repos", "repos"),
        ("queries", "queries"),
        ("ndcg@10_repo_mean", "ndcg@10 (repo mean)"),
        ("semble_same_repos", "semble, same repos"),
        ("ndcg@10_query_mean", "ndcg@10 (query mean)"),
        ("ndcg@10_language_mean", "ndcg@10 (lang mean)"),
        ("mrr", "mrr"),
        ("hit@1", "hit@1"),
        ("languages_at_or_above_semble", "langs >= semble"),
        ("p50_latency_ms", "p50 latency ms"),
        ("p90_latency_ms", "p90 latency ms"),
        ("index_s_median", "index s (median)"),
        ("index_s_total", "index s (total)"),
    ):
        vals = [halves[h].get(key) for h in cols]
        fmt = (
            (lambda v: f"{v:>6}")
            if key in ("repos", "queries", "languages_at_or_above_semble")
            else (lambda v: f"{v:>6.1f}" if v is not None and v >= 10 else f"{f3(v):>6}")
        )
        lines.append(f"{label:<22} " + " ".join(fmt(v) for v in vals))
    lines.append(
        f"published: semble {PUBLISHED_OVERALL[0]:.3f}, CodeRankEmbed hybrid {PUBLISHED_OVERALL[1]:.3f} "
        "(mean over all 63 repos)"
    )
    if missing:
        lines += ["", "not scored:"] + [
            f"  {n:<20} {meta[n]['language']:<11} {meta[n]['half']:<4} {why}"
            for n, why in missing.items()
        ]
    return "\n".join(lines)


def main() -> int:
    from zgrep.search.evaluate import evaluate_workspace, load_annotations

    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--repos", default="", help="comma-separated repo names (repos.json)")
    ap.add_argument("--languages", default="", help="comma-separated languages")
    ap.add_argument(
        "--half",
        default="all",
        choices=["dev", "val", "all"],
        help="dev: even index within each language in repos.json order; val: the rest",
    )
    ap.add_argument(
        "--json",
        dest="json_out",
        default="",
        help="write every figure (and per-query results) here",
    )
    ap.add_argument(
        "--resume", action="store_true", help="keep repos already in --json OUT, run the rest"
    )
    ap.add_argument(
        "--fresh",
        action="store_true",
        help="drop each workspace's index (and re-unpack sdists) first",
    )
    ap.add_argument("--show-misses", action="store_true", help="print queries with NDCG below 0.5")
    ap.add_argument(
        "--mode-search",
        default="hybrid",
        choices=["hybrid", "lexical", "semantic"],
        help="which routes to run (ablation)",
    )
    ap.add_argument(
        "--order",
        default="size",
        choices=["size", "repos"],
        help="run order: smallest corpus first (default) or repos.json order",
    )
    opts = ap.parse_args()

    repos = plan_repos()
    python = {
        k: v
        for k, v in json.loads((SHARED / "python-corpora.json").read_text()).items()
        if not k.startswith("_")
    }
    want_repos = {r for r in opts.repos.split(",") if r}
    want_langs = {x for x in opts.languages.split(",") if x}
    unknown = want_repos - {r["name"] for r in repos}
    if unknown:
        print(f"semble.py: unknown repos: {', '.join(sorted(unknown))}", file=sys.stderr)
        return 2
    chosen = [
        r
        for r in repos
        if (not want_repos or r["name"] in want_repos)
        and (not want_langs or r["language"] in want_langs)
        and (opts.half == "all" or r["half"] == opts.half)
    ]

    results: dict[str, dict[str, Any]] = {}
    out_path = Path(opts.json_out) if opts.json_out else None
    if opts.resume and out_path and out_path.exists():
        previous = json.loads(out_path.read_text())
        if previous.get("mode_search") == opts.mode_search:
            results = {
                n: r
                for n, r in previous.get("repos", {}).items()
                if n in {c["name"] for c in chosen}
            }
    missing: dict[str, str] = {}
    todo = []
    for r in chosen:
        if r["name"] in results:
            continue
        ws, how = resolve(r, python, opts.fresh)
        if ws is None:
            missing[r["name"]] = how
        else:
            todo.append((r, ws, how))
    if opts.order == "size":
        todo.sort(key=lambda t: corpus_bytes(t[1]))

    def save() -> dict[str, Any]:
        ordered = {r["name"]: results[r["name"]] for r in repos if r["name"] in results}
        summary = summarise(ordered, repos)
        if out_path:
            doc = {
                "mode_search": opts.mode_search,
                "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                "corpora": str(CORPORA),
                "summary": summary,
                "missing": missing,
                "halves": {r["name"]: r["half"] for r in repos},
                "published": {
                    "overall": PUBLISHED_OVERALL,
                    "language": PUBLISHED_LANG,
                    "category": PUBLISHED_CATEGORY,
                    "semble_repo": SEMBLE_REPO,
                },
                "repos": ordered,
            }
            tmp = out_path.with_suffix(out_path.suffix + ".tmp")
            tmp.write_text(json.dumps(doc, indent=1))
            tmp.replace(out_path)
        return summary

    for r, ws, how in todo:
        name = r["name"]
        queries = load_annotations(SHARED / "semble" / "annotations" / f"{name}.json")
        clock = Stopwatch()
        print(f"{name} ({r['language']}, {r['half']}, {how}) ...", file=sys.stderr, flush=True)
        try:
            res = evaluate_workspace(ws, queries, {"search_mode": opts.mode_search})
        except Exception as exc:  # one repo's failure is reported, the run goes on
            missing[name] = f"failed: {type(exc).__name__}: {exc}"[:300]
            print(f"  {missing[name]}", file=sys.stderr, flush=True)
            save()
            continue
        res.update(language=r["language"], half=r["half"], source=how)
        results[name] = res
        o = res["overall"]
        print(
            f"  ndcg@10 {o['ndcg@10']:.3f} over {o['queries']} queries (semble {SEMBLE_REPO.get(name, 0):.3f}); "
            f"index {res['index_s']:.1f}s, p50 {res['p50_latency_ms']:.1f}ms, wall {clock.elapsed:.0f}s",
            file=sys.stderr,
            flush=True,
        )
        if opts.show_misses:
            for q in res["per_query"]:
                if q["ndcg@10"] < 0.5:
                    print(
                        f"  MISS {q['ndcg@10']:.2f} [{q['category']}] {q['query']!r} -> {q['top']}",
                        file=sys.stderr,
                    )
        save()
    if not results:
        print("semble.py: nothing scored", file=sys.stderr)
        for n, why in missing.items():
            print(f"  {n}: {why}", file=sys.stderr)
        return 1
    summary = save()
    ordered = {r["name"]: results[r["name"]] for r in repos if r["name"] in results}
    print(report(ordered, repos, summary, missing))
    return 0


if __name__ == "__main__":
    sys.exit(main())
