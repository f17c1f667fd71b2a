"""The `status` op: what is indexed, with which model, where, and how fresh it is."""

from __future__ import annotations

from zgrep.contracts import NoArgs, Status
from zgrep.engine import REBUILD_STATE, Engine
from zgrep.languages.registry import chunk_spec, detect_language
from zgrep.git import head_commit, split_names, try_run
from zgrep.index.run import plan
from zgrep.progress import Progress
from zgrep.store.native import describe
from zgrep.workspace import redact


def run_status(engine: Engine, args: NoArgs, progress: Progress | None = None) -> Status:
    """The index's own status (the CLI adds the daemon's and the hooks')."""
    manifest = engine.manifest()
    root = str(engine.ws.root)
    if manifest is None:
        return {
            "root": root,
            "indexed": False,
            "files": 0,
            "chunks": 0,
            "languages": {},
            "milvus_engine": describe(engine.milvus_uri),
        }
    files = engine.files()
    languages: dict[str, int] = {}
    for rec in files.values():
        languages[rec.language] = languages.get(rec.language, 0) + 1
    head = head_commit(engine.ws.root)
    problem = engine.index_problem(manifest) or engine.store_problem(manifest)
    changed = None if problem else changed_files(engine)
    return {
        "root": root,
        "indexed": True,
        "files": len(files),
        "chunks": sum(r.chunks for r in files.values()),
        "languages": dict(sorted(languages.items(), key=lambda kv: -kv[1])),
        "model": manifest.get("model_id"),
        "dim": manifest.get("dim"),
        "milvus_uri": redact(str(manifest.get("milvus_uri"))),
        "milvus_engine": describe(engine.milvus_uri),
        "collection": manifest.get("collection"),
        "last_indexed": manifest.get("last_indexed"),
        "root_hash": manifest.get("root_hash"),
        "indexed_commit": manifest.get("commit"),
        "head_commit": head,
        "stale_vs_head": bool(head and manifest.get("commit") != head),
        "changed_files": changed,
        "fresh": changed == 0 and manifest.get("complete", True),
        "problem": problem,
        "run_unfinished": not manifest.get("complete", True)
        or engine.ws.path(REBUILD_STATE).exists(),
        "code_files": code_files(engine, set(files)),
    }


def code_files(engine: Engine, indexed: set[str]) -> dict[str, int] | None:
    """`{"tracked", "indexed"}`: how many files git tracks in a language zgrep parses, and how many
    of them the index holds (None outside git); `zg status` warns when most of them are missing."""
    out = try_run(engine.ws.root, "ls-files", "-z", "--cached")
    if out is None:
        return None
    tracked = {name for name in split_names(out) if chunk_spec(detect_language(name)) is not None}
    return {"tracked": len(tracked), "indexed": len(tracked & indexed)}


def changed_files(engine: Engine) -> int:
    """How many files differ from the index (new, edited, deleted, or newly ignored)."""
    work = plan(engine, None, full=False)
    return len(work.changed) + len(work.deleted)
