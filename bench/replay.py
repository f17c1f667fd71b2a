"""Record a quality run's retrieval once, then replay it under other ranking code in seconds (approximate).

`record` runs bench/semble.py's or bench/outside.py's queries live, in process, on corpora already indexed (run
the bench once first), and keeps what every query asked of Milvus, of the whole-file statistics and of the model,
per repo, in DIR. `replay` answers the same queries from DIR with whatever fuse and rerank code is checked out:
no Milvus, no model, no index run. Both write a --json in the benches' shape, so bench/compare.py pairs a replay
with its record or with another replay.

Exact for changes after retrieval (fusion, rerank, span merging). A call the record does not hold (a wider pool, a
new filter) is answered from a recorded call of the same text and a wider limit or filter when there is one
(the hits it held, filtered and cut: approximate), else as empty, and counted as `missed` per repo. Sweep with it;
report figures from the live benches.

Usage: python bench/replay.py record semble|outside DIR [--half dev|val|all] [--repos a,b] [--json OUT]
       python bench/replay.py replay semble|outside DIR [--json OUT] [--set NAME=VALUE ...]
--set overrides a field of zgrep.search.rank's RankSettings or RerankSettings (record takes it too, to record
the calls a setting makes: a whole-file route of more files than any replay will ask for).
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import pickle
import re
import statistics
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
from common import summarise

HERE = Path(__file__).resolve().parent
_PATHS = re.compile(r"^path in \[(.*)\]$")
_QUOTED = re.compile(r'"((?:[^"\\]|\\.)*)"')


class _Current:
    # the query whose routes run (the dense call runs on another thread: not a thread-local)
    query = ""


def repos_of(bench: str, half: str, names: set[str]) -> list[tuple[dict[str, Any], Path, Path]]:
    """(repo, workspace, annotations) of a bench's repos in a half."""
    if bench == "semble":
        import semble

        python = {
            k: v
            for k, v in json.loads((semble.SHARED / "python-corpora.json").read_text()).items()
            if not k.startswith("_")
        }
        out = []
        for r in semble.plan_repos():
            if half not in ("all", r["half"]) or (names and r["name"] not in names):
                continue
            ws, _ = semble.resolve(r, python, False)
            ann = semble.SHARED / "semble" / "annotations" / f"{r['name']}.json"
            if ws is not None and (ws / ".zgrep").exists():
                out.append((r, ws, ann))
        return out
    import outside

    return [
        (r, outside.CORPORA / r["name"], outside.ANNOTATIONS / f"{r['name']}.json")
        for r in json.loads(outside.REPOS.read_text())
        if half in ("all", r["half"])
        and (not names or r["name"] in names)
        and (outside.CORPORA / r["name"] / ".zgrep").exists()
    ]


def all_repos(bench: str) -> list[dict[str, Any]]:
    if bench == "semble":
        import semble

        return semble.plan_repos()
    import outside

    return json.loads(outside.REPOS.read_text())


class Tape:
    """One repo's recorded calls: key -> result, route hits as (id, rank, distance) over one table of fields."""

    def __init__(self) -> None:
        self.calls: dict[tuple[Any, ...], Any] = {}
        self.fields: dict[str, Any] = {}
        self.missed = 0

    def pack(self, hits: list[Any]) -> list[tuple[str, int, float]]:
        for h in hits:
            self.fields.setdefault(h.id, h.fields)
        return [(h.id, h.rank, h.distance) for h in hits]

    def unpack(self, packed: list[tuple[str, int, float]]) -> list[Any]:
        from zgrep.types import RouteHit

        return [RouteHit(i, rank, dist, self.fields[i]) for i, rank, dist in packed]

    def save(self, path: Path) -> None:
        with gzip.open(path, "wb", compresslevel=3) as f:
            pickle.dump({"calls": self.calls, "fields": self.fields}, f)

    @classmethod
    def load(cls, path: Path) -> Tape:
        tape = cls()
        with gzip.open(path, "rb") as f:
            raw = pickle.load(f)
        tape.calls, tape.fields = raw["calls"], raw["fields"]
        return tape

    def nearest(self, kind: str, text: str, limit: int, expr: str) -> list[Any] | None:
        """A recorded call of the same kind and text with at least `limit` hits and a filter covering `expr`'s
        (none, or a path list holding every path asked for), its hits filtered and cut."""
        wanted = _paths(expr)
        if expr and wanted is None:
            return None
        for key, packed in self.calls.items():
            if key[0] != kind or key[2] != text or key[3] < limit:
                continue
            have = _paths(key[4])
            if key[4] and (have is None or wanted is None or not wanted <= have):
                continue
            hits = [h for h in self.unpack(packed) if wanted is None or h.fields["path"] in wanted]
            from zgrep.types import RouteHit

            return [RouteHit(h.id, r, h.distance, h.fields) for r, h in enumerate(hits[:limit])]
        return None


def _paths(expr: str) -> set[str] | None:
    m = _PATHS.match(expr)
    if not m:
        return None
    return {re.sub(r"\\(.)", r"\1", s) for s in _QUOTED.findall(m.group(1))}


@contextmanager
def patched(obj: Any, name: str, value: Any) -> Iterator[None]:
    old = getattr(obj, name)
    setattr(obj, name, value)
    try:
        yield
    finally:
        setattr(obj, name, old)


def query_marker(run: Any) -> Callable[..., Any]:
    """run._routes, noting the query on this thread (dense calls are keyed by query, not vector)."""
    routes = run._routes

    def marked(engine: Any, query: str, *args: Any, **kwargs: Any) -> Any:
        _Current.query = query
        return routes(engine, query, *args, **kwargs)

    return marked


@contextmanager
def settings(pairs: list[str]) -> Iterator[None]:
    """run's RankSettings and rerank with the fields `pairs` (NAME=VALUE) set."""
    import dataclasses
    import functools

    from zgrep.search import rank, run

    fields: dict[type, dict[str, Any]] = {rank.RankSettings: {}, rank.RerankSettings: {}}
    for pair in pairs:
        name, value = pair.split("=", 1)
        cls = next((c for c in fields if name in {f.name for f in dataclasses.fields(c)}), None)
        if cls is None:
            raise SystemExit(f"replay.py: no setting {name!r}")
        fields[cls][name] = type(getattr(cls(), name))(value)
    rank_settings, rerank_fields = fields[rank.RankSettings], fields[rank.RerankSettings]
    with (
        patched(run, "RankSettings", functools.partial(rank.RankSettings, **rank_settings)),
        patched(
            run,
            "rerank",
            functools.partial(rank.rerank, settings=rank.RerankSettings(**rerank_fields)),
        ),
    ):
        yield


def record(bench: str, out: Path, half: str, names: set[str], json_out: str) -> int:
    from zgrep.index.filestats import FileStatsReader
    from zgrep.search import run
    from zgrep.search.evaluate import evaluate_workspace, load_annotations
    from zgrep.store.milvus import MilvusStore

    out.mkdir(parents=True, exist_ok=True)
    results: dict[str, Any] = {}
    for r, ws, ann in repos_of(bench, half, names):
        tape = Tape()
        depth = threading.local()

        def wrap(
            kind: str, method: Callable[..., Any], key_of: Callable[..., tuple[Any, ...]]
        ) -> Any:
            def call(self: Any, *args: Any, **kwargs: Any) -> Any:
                depth.n = getattr(depth, "n", 0) + 1
                try:
                    result = method(self, *args, **kwargs)
                finally:
                    depth.n -= 1
                if depth.n == 0:
                    key = (kind, *key_of(*args, **kwargs))
                    if kind == "lexmany":
                        tape.calls[key] = [tape.pack(h) for h in result]
                    else:
                        tape.calls[key] = tape.pack(result)
                return result

            return call

        def scores(self: Any, terms: Any) -> Any:
            terms = sorted(set(terms))
            result = orig_scores(self, terms)
            tape.calls[("fbm25", tuple(terms))] = result
            return result

        orig_scores = FileStatsReader.bm25_scores
        with (
            patched(run, "_routes", query_marker(run)),
            patched(
                MilvusStore,
                "search_dense",
                wrap(
                    "dense",
                    MilvusStore.search_dense,
                    lambda v, limit, expr="": (_Current.query, limit, expr),
                ),
            ),
            patched(
                MilvusStore,
                "search_lexical_many",
                wrap(
                    "lexmany",
                    MilvusStore.search_lexical_many,
                    lambda texts, limit, expr="": (tuple(texts), limit, expr),
                ),
            ),
            patched(
                MilvusStore,
                "search_lexical",
                wrap(
                    "lex",
                    MilvusStore.search_lexical,
                    lambda text, limit, expr="": ("", text, limit, expr),
                ),
            ),
            patched(
                MilvusStore,
                "search_symbols",
                wrap(
                    "symbols",
                    MilvusStore.search_symbols,
                    lambda names, limit, expr="", lexical="", lexical_hits=None, symbol_rows=None: (
                        tuple(names),
                        limit,
                        expr,
                        lexical,
                    ),
                ),
            ),
            patched(FileStatsReader, "bm25_scores", scores),
        ):
            print(f"{r['name']} ...", file=sys.stderr, flush=True)
            res = evaluate_workspace(ws, load_annotations(ann), {"search_mode": "hybrid"})
        tape.save(out / f"{r['name']}.pkl.gz")
        res.update(language=r["language"], half=r["half"])
        results[r["name"]] = res
    (out / "meta.json").write_text(json.dumps({"bench": bench, "repos": list(results)}))
    write(bench, results, json_out)
    return 0


class FakeStore:
    """Answers a search's store calls from a tape."""

    def __init__(self, tape: Tape) -> None:
        self.tape = tape

    def _get(self, key: tuple[Any, ...], kind: str, text: str, limit: int, expr: str) -> list[Any]:
        if key in self.tape.calls:
            return self.tape.unpack(self.tape.calls[key])
        near = self.tape.nearest(kind, text, limit, expr)
        if near is None:
            self.tape.missed += 1
            return []
        return near

    def search_dense(self, vector: Any, limit: int, expr: str = "") -> list[Any]:
        q = _Current.query
        return self._get(("dense", q, limit, expr), "dense", q, limit, expr)

    def search_lexical_many(self, texts: list[str], limit: int, expr: str = "") -> list[list[Any]]:
        key = ("lexmany", tuple(texts), limit, expr)
        if key in self.tape.calls:
            return [self.tape.unpack(p) for p in self.tape.calls[key]]
        return [self.search_lexical(t, limit, expr) for t in texts]

    def search_lexical(self, text: str, limit: int, expr: str = "") -> list[Any]:
        key = ("lex", "", text, limit, expr)
        if key in self.tape.calls:
            return self.tape.unpack(self.tape.calls[key])
        for k, packed in self.tape.calls.items():  # one text of a recorded lexmany call
            if k[0] == "lexmany" and k[2] == limit and k[3] == expr and text in k[1]:
                return self.tape.unpack(packed[k[1].index(text)])
        return self._get(key, "lex", text, limit, expr)

    def search_symbols(
        self,
        names: list[str],
        limit: int,
        expr: str = "",
        lexical: str = "",
        lexical_hits: Any = None,
        symbol_rows: Any = None,
    ) -> list[Any]:
        key = ("symbols", tuple(names), limit, expr, lexical)
        if key in self.tape.calls:
            return self.tape.unpack(self.tape.calls[key])
        self.tape.missed += 1
        return []

    def symbol_rows(self, names: list[str], limit: int, expr: str = "") -> list[Any]:
        return []  # (search_symbols answers from the tape)


class FakeEmbedder:
    """Stands in for the model: the dense route's hits come from the tape, whatever the vector."""

    def embed_query(self, query: str) -> np.ndarray:
        return np.zeros(1, dtype=np.float32)


def replay(bench: str, src: Path, json_out: str) -> int:
    from zgrep.engine import Engine
    from zgrep.index.filestats import FileStatsReader
    from zgrep.search import run
    from zgrep.search.evaluate import K, load_annotations, mean_metrics, query_report

    meta = json.loads((src / "meta.json").read_text())
    results: dict[str, Any] = {}
    wanted = set(meta["repos"])
    for r, ws, ann in repos_of(bench, "all", wanted):
        tape = Tape.load(src / f"{r['name']}.pkl.gz")

        def scores(self: Any, terms: Any) -> Any:
            key = ("fbm25", tuple(sorted(set(terms))))
            if key not in tape.calls:
                tape.missed += 1
            return tape.calls.get(key, {})

        engine = Engine(ws)
        store = FakeStore(tape)
        rows, per_query = [], []
        with (
            patched(run, "_routes", query_marker(run)),
            patched(Engine, "open_store", lambda self, create=False: store),
            patched(Engine, "embedder", FakeEmbedder()),
            patched(FileStatsReader, "bm25_scores", scores),
        ):
            file_lines = run._indexed_lines(engine)
            generated = frozenset(p for p, rec in engine.files().items() if rec.generated)
            limit = K
            latencies = []
            for q in load_annotations(ann):
                t0 = time.perf_counter()
                hits = run._search_one(
                    engine,
                    q.text,
                    "hybrid",
                    "",
                    limit,
                    {},
                    "none",
                    None,
                    file_lines,
                    (0, 0),
                    generated,
                )
                latencies.append(time.perf_counter() - t0)  # without its store calls and model
                row, report = query_report(q, hits, latencies[-1])
                rows.append(row)
                per_query.append(report)
        engine.close()
        cats = sorted({row["category"] for row in rows})
        results[r["name"]] = {
            "overall": mean_metrics(rows),
            "by_category": {c: mean_metrics([x for x in rows if x["category"] == c]) for c in cats},
            "p50_latency_ms": round(statistics.median(latencies) * 1000, 2),
            "index_s": 0.0,
            "per_query": per_query,
            "rows": rows,
            "language": r["language"],
            "half": r["half"],
            "missed": tape.missed,
        }
        if tape.missed:
            print(f"{r['name']}: {tape.missed} calls not on the tape", file=sys.stderr)
    write(bench, results, json_out)
    return 0


def write(bench: str, results: dict[str, Any], json_out: str) -> None:
    repos = all_repos(bench)
    ordered = {r["name"]: results[r["name"]] for r in repos if r["name"] in results}
    summary = summarise(ordered, repos)
    for h, v in summary["halves"].items():
        print(
            f"{h:<4} repos {v['repos']:>3} queries {v['queries']:>4} ndcg@10 {v['ndcg@10_repo_mean']:.4f}"
            f" p50 {v['p50_latency_ms']:.2f} ms"
        )
    if json_out:
        doc = {
            "mode_search": "hybrid",
            "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "summary": summary,
            "halves": {r["name"]: r["half"] for r in repos},
            "repos": ordered,
        }
        Path(json_out).write_text(json.dumps(doc, indent=1))


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("action", choices=["record", "replay"])
    ap.add_argument("bench", choices=["semble", "outside"])
    ap.add_argument("dir", type=Path)
    ap.add_argument("--half", default="dev", choices=["dev", "val", "all"])
    ap.add_argument("--repos", default="")
    ap.add_argument("--json", dest="json_out", default="")
    ap.add_argument("--set", dest="sets", action="append", default=[], help="NAME=VALUE")
    opts = ap.parse_args()
    sys.path.insert(0, str(HERE))
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    with settings(opts.sets):
        if opts.action == "record":
            names = {n for n in opts.repos.split(",") if n}
            return record(opts.bench, opts.dir, opts.half, names, opts.json_out)
        return replay(opts.bench, opts.dir, opts.json_out)


if __name__ == "__main__":
    sys.exit(main())
