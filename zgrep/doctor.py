"""`zg doctor`: check each dependency and name the fix for every failure."""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from zgrep.config import Config
from zgrep.workspace import redact


@dataclass
class Check:
    """One dependency check: its outcome, what was seen and how to fix a failure."""

    name: str
    ok: bool
    detail: str
    fix: str = ""


def _guard(name: str, fix: str, probe: Callable[[], str]) -> Check:
    try:
        return Check(name, True, probe())
    except Exception as exc:  # a doctor reports every failure instead of stopping
        return Check(name, False, redact(f"{type(exc).__name__}: {exc}").splitlines()[0][:300], fix)


def _model(cfg: Config, root: Path) -> str:
    from zgrep.engine import load_embedder  # lazily, like every heavy import of the doctor

    # the one builder: a remote model needs the workspace's opt-in
    emb = load_embedder(cfg, root, timeout=10.0)
    vec = emb.embed_query("doctor probe")
    # the chunk side too: the default pair's static table (a query goes through its transformer)
    chunk = emb.embed(["def doctor_probe(): pass"])
    if chunk.shape != (1, len(vec)):
        raise RuntimeError(f"chunk vectors have shape {chunk.shape}, queries {len(vec)} values")
    return f"{emb.model_id}, {len(vec)}-d"


def _milvus(cfg: Config, root: Path) -> str:
    from zgrep.engine import ENGINE_TIMEOUT_S
    from zgrep.store.native import NativeEngine, describe

    uri = cfg.milvus.uri
    if uri:
        from zgrep.store.milvus import MilvusStore

        store = MilvusStore(uri, "zg_doctor_probe", 4)
        store.client.list_collections()
        store.close()
        return f"server reachable at {redact(uri)}"
    with tempfile.TemporaryDirectory() as tmp:
        # its ~0.5 s start overlaps importing pymilvus
        engine = NativeEngine(Path(tmp) / "probe.db", ENGINE_TIMEOUT_S)
        try:
            from zgrep.store.milvus import MilvusStore
            from zgrep.store.rows import plain_row
        except BaseException:
            engine.close()
            raise
        store = MilvusStore(str(Path(tmp) / "probe.db"), "zg_doctor_probe", 4, engine=engine)
        store.create()
        store.insert([plain_row("a", "p", "probe", [1.0, 0.0, 0.0, 0.0])])
        found = store.search_lexical("probe", 1)
        store.close()
    if not found:
        raise RuntimeError(f"{describe()} answered but BM25 search found nothing")
    return f"Milvus Lite works (dense + BM25): {describe()}"


def _grammars() -> str:
    from zgrep.chunking import extract_symbols
    from zgrep.languages.registry import samples

    grammars = samples()  # each language record's sample
    missing = [lang for lang, src in grammars.items() if not extract_symbols(src, lang)]
    if missing:
        raise RuntimeError(f"no definitions found with the grammars for: {', '.join(missing)}")
    return f"{len(grammars)} grammars parse"


def _index(root: Path, cfg: Config) -> str:
    from zgrep.engine import Engine

    engine = Engine(root, cfg)
    try:
        manifest = engine.manifest()
        if manifest is None:
            return "not indexed yet (zg search builds it; or run: zg index)"
        problem = engine.index_problem(manifest) or engine.store_problem(manifest)
        if problem:
            raise RuntimeError(problem)
        if not manifest.get("complete", True):
            raise RuntimeError("the last index run is in progress or was interrupted")
        return f"{len(engine.files())} files indexed with {manifest.get('model_id')}"
    finally:
        engine.close()


def _daemon() -> str:
    from zgrep.server import client

    state = client.daemon_state() if hasattr(client, "daemon_state") else {"running": False}
    return "running" if state.get("running") else "not running (optional; start with: zg server on)"


def _hooks(root: Path) -> str:
    from zgrep.hooks.install import hooks_status

    st = hooks_status(root)
    return "installed" if st.get("installed") else "not installed (optional; run: zg hooks install)"


def _ignore_files(root: Path, cfg: Config) -> str:
    from zgrep.index.discovery import Tally, list_files
    from zgrep.index.run import ignore_rules

    rules = ignore_rules(root, cfg)
    tally = Tally()
    files = list_files(root, rules, tally)
    if rules.bad_lines:
        raise ValueError(
            f"{len(rules.bad_lines)} line(s) git never matches, skipped: "
            + "; ".join(str(bad) for bad in rules.bad_lines[:3])
        )
    ignored = (
        ", ".join(f"{n} by {layer}" for layer, n in sorted(tally.ignored.items())) or "nothing"
    )
    return f"{len(files)} files listed; ignored: {ignored}"


def run_checks(root: Path, cfg: Config) -> list[Check]:
    """All checks, in the order a user would fix them (the model's on a thread beside Milvus's: each
    is mostly imports and loads)."""
    with ThreadPoolExecutor(1, thread_name_prefix="zg-doctor") as pool:
        model = pool.submit(
            _guard,
            "model",
            "check [embedding] settings (zg config show) or reinstall zgrep",
            lambda: _model(cfg, root),
        )
        milvus = _guard(
            "milvus",
            "check --milvus-uri / ZG_MILVUS_URI and ZG_MILVUS_TOKEN, or unset them for Milvus Lite",
            lambda: _milvus(cfg, root),
        )
    return [
        model.result(),
        milvus,
        _guard("grammars", "pip install 'tree-sitter-language-pack>=0.13,<1'", _grammars),
        _guard(
            "ignore files",
            "fix or delete the lines named (git ignores them too)",
            lambda: _ignore_files(root, cfg),
        ),
        _guard(
            "index",
            "zg index (or zg index --full when the message says so)",
            lambda: _index(root, cfg),
        ),
        _guard("daemon", "zg server off; zg server on", _daemon),
        _guard("hooks", "zg hooks install", lambda: _hooks(root)),
    ]
