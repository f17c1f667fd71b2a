"""End-to-end retrieval benchmark on semble's annotated Python subset (184 queries, 9 repos).

Downloads each pinned sdist once (PyPI), copies its benchmark root into a fresh workspace
(keeping the path prefix), indexes it with the configured model and scores every query by
the benchmark's own rule.
Usage: python bench/semble.py [--repos flask,click] [--json OUT] [--fresh] [--mode-search lexical]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
SHARED = Path(os.environ.get("ZG_BENCH_DATA", HERE.parent.parent / "shared" / "bench"))
CACHE = Path(os.environ.get("ZG_BENCH_CACHE", Path.home() / ".cache" / "zgrep-bench"))


def corpus(name: str, sdist: str, root: str, fresh: bool) -> Path:
    """A workspace holding `root` of the sdist at its original relative path."""
    dl = CACHE / "sdists"
    dl.mkdir(parents=True, exist_ok=True)
    pkg, version = sdist.split("==")
    archives = [p for p in dl.glob("*.tar.gz") if p.name.lower().replace("_", "-").startswith(f"{pkg}-{version}".lower())]
    if not archives:
        subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--no-binary", ":all:", sdist,
                        "-d", str(dl)], check=True)
        archives = [p for p in dl.glob("*.tar.gz") if p.name.lower().replace("_", "-").startswith(f"{pkg}-{version}".lower())]
    ws = CACHE / "workspaces" / name
    if fresh and ws.exists():
        shutil.rmtree(ws)
    if not (ws / root).exists():
        with tarfile.open(archives[0]) as tar:
            top = tar.getnames()[0].split("/")[0]
            members = [m for m in tar.getmembers() if m.name.startswith(f"{top}/{root}/") and m.isfile()]
            for m in members:
                m.name = m.name[len(top) + 1 :]
            tar.extractall(ws, members=members, filter="data")
    return ws


def scratch_copy(name: str, dest: Path) -> Path:
    """A fresh copy (no index state) of corpus `name` under `dest`, for timing whole commands."""
    spec = json.loads((SHARED / "python-corpora.json").read_text())[name]
    ws = dest / name
    shutil.copytree(corpus(name, spec["sdist"], spec["root"], fresh=False), ws, ignore=shutil.ignore_patterns(".zgrep"))
    return ws


def main() -> int:
    from zgrep.search.evaluate import evaluate_workspace, format_report, load_annotations

    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--repos", default="", help="comma-separated subset of python-corpora.json")
    ap.add_argument("--json", dest="json_out", default="", help="write full results here")
    ap.add_argument("--fresh", action="store_true", help="rebuild workspaces and indexes from scratch")
    ap.add_argument("--show-misses", action="store_true", help="print queries with NDCG below 0.5")
    ap.add_argument("--mode-search", default="hybrid", choices=["hybrid", "lexical", "semantic"],
                    help="which routes to run (ablation)")
    opts = ap.parse_args()
    corpora = {k: v for k, v in json.loads((SHARED / "python-corpora.json").read_text()).items() if not k.startswith("_")}
    wanted = [r for r in opts.repos.split(",") if r] or list(corpora)
    results = {}
    for name in wanted:
        spec = corpora[name]
        ws = corpus(name, spec["sdist"], spec["root"], opts.fresh)
        queries = load_annotations(SHARED / "semble" / "annotations" / f"{name}.json")
        results[name] = evaluate_workspace(ws, queries, {"search_mode": opts.mode_search})
        o = results[name]["overall"]
        print(f"{name}: ndcg@10 {o['ndcg@10']:.3f} over {o['queries']} queries", file=sys.stderr)
        if opts.show_misses:
            for q in results[name]["per_query"]:
                if q["ndcg@10"] < 0.5:
                    print(f"  MISS {q['ndcg@10']:.2f} [{q['category']}] {q['query']!r} -> {q['top']}", file=sys.stderr)
    print(format_report(results))
    if opts.json_out:
        Path(opts.json_out).write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
