"""Incremental indexing of a workspace: discover, diff by SHA-256, chunk, embed (cached), store."""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from zgrep.config import Config
from zgrep.contracts import IndexArgs, IndexReport
from zgrep.engine import REBUILD_STATE, Engine, FileRecord, root_hash
from zgrep.fsutil import atomic_write
from zgrep.git import GitError, changed_paths, head_commit
from zgrep.index import discovery, skips
from zgrep.index.filestats import FILESTATS_DB, NEXT_FILESTATS, FileStatsStore
from zgrep.index.filestats import is_ready as filestats_ready
from zgrep.index.ignore import IgnoreRules
from zgrep.index.timing import PhaseClock
from zgrep.progress import Progress
from zgrep.relations.store import RELATIONS_DB, RelationsStore, is_ready
from zgrep.service import ErrorCode, ZgError
from zgrep.store.rows import chunk_row
from zgrep.workspace import WorkspaceError, read_object

if TYPE_CHECKING:
    from zgrep.workspace import Manifest

FILES_PER_BATCH = 64
# bump when zgrep.chunking's chunk boundaries or fields change: indexes re-chunk (vectors stay
# cached); kept here, not in zgrep.chunking, so a run with nothing to write never imports tree-sitter
CHUNKER_VERSION = 21
# bump when index.prepare.lexical_text() changes: indexes re-chunk (vectors stay cached)
LEXICAL_VERSION = 7
RELATIONS_VERSION = 3  # bump when zgrep.relations extraction changes: indexes re-extract
NEXT_RELATIONS = "relations.next.sqlite"  # a full rebuild's relations until it switches over


def content_version() -> str:
    """What the stored rows are made of; a change re-chunks every file on the next index."""
    return f"chunks-{CHUNKER_VERSION}.lexical-{LEXICAL_VERSION}.relations-{RELATIONS_VERSION}"


def relations_ready(engine: Engine) -> bool:
    """Whether the relations and whole-file statistics databases exist with their current schemas
    (else a full pass rebuilds them)."""
    return is_ready(engine.ws.path(RELATIONS_DB)) and filestats_ready(engine.ws.path(FILESTATS_DB))


@dataclass
class Plan:
    """What an index run will do."""

    changed: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    unchanged: int = 0
    skipped: dict[str, int] = field(default_factory=dict)
    loaded: dict[str, Any] = field(default_factory=dict)
    touched: bool = False
    indexed: int = 0  # files the write phase chunked and stored
    # paths each ignore layer kept out (a directory once)
    ignored: dict[str, int] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)  # ignore-file lines skipped, one each
    # the content skip verdicts as this plan leaves them, when they differ from those recorded
    skip_verdicts: skips.Verdicts | None = None

    def skip(self, reason: str) -> None:
        """Count one file left out for `reason` (one of discovery.SKIP_REASONS, vanished,
        too_large)."""
        self.skipped[reason] = self.skipped.get(reason, 0) + 1


def normalise_paths(root: Path, paths: list[str]) -> list[str]:
    """Workspace-relative `/` paths; refuses paths outside the workspace."""
    out = []
    for raw in paths:
        full = Path(os.path.normpath(root / raw))
        try:
            rel = full.relative_to(root)
        except ValueError:
            raise ZgError(
                ErrorCode.BAD_REQUEST, f"path outside the workspace {root}: {raw}"
            ) from None
        if str(rel) != ".":
            out.append(rel.as_posix())
    return sorted(set(out))


def plan(engine: Engine, paths: list[str] | None, full: bool, read_new: bool = True) -> Plan:
    """Compare the working tree (or just `paths`) with the recorded state. Without `read_new`, files
    with no record are planned unread (the write phase reads them batch by batch, and counts skips).
    """
    root = engine.ws.root
    cfg = engine.config
    rules = ignore_rules(root, cfg)
    known = engine.files()
    max_bytes = cfg.index.max_file_bytes
    tally = discovery.Tally()
    stats: dict[str, tuple[int, int]] = {}
    if paths is None:
        # the listing's stat serves the change test
        listed = discovery.list_files(root, rules, tally, stats)
        candidates = listed
        gone = set(known) - set(listed)
    else:
        candidates = discovery.filter_paths(root, rules, paths)
        gone = {p for p in paths if p in known} - set(candidates)
        dirs = [p + "/" for p in paths if p not in known and not (root / p).is_file()]
        if dirs:
            gone |= {k for k in known if k.startswith(tuple(dirs)) and not (root / k).is_file()}
        stats = discovery.stat_files(root, candidates)
    confinement = discovery.Confinement(root)
    result = Plan(deleted=sorted(gone), skipped=dict(tally.skipped), ignored=dict(tally.ignored))
    recorded = skips.load(engine.ws.path(skips.SKIPPED_STATE))
    verdicts = dict(recorded) if paths is not None else {}  # a whole listing drops what is gone
    for rel in candidates:
        rec = known.get(rel)
        st = stats.get(rel)
        verdicts.pop(rel, None)
        if st is None:
            if rec is not None:
                result.deleted.append(rel)
            result.skip("vanished")
            continue
        if st[0] > max_bytes:
            result.skip("too_large")
            if rec is not None:
                result.deleted.append(rel)
            continue
        if not full and rec is not None and (rec.size, rec.mtime_ns) == st:
            result.unchanged += 1
            continue
        verdict = None if full else recorded.get(rel)  # --full reads every file again
        if rec is None and verdict is not None and verdict[:2] == st:  # bytes as when last read
            verdicts[rel] = verdict
            result.skip(verdict[2])
            continue
        if not read_new and rec is None:
            result.changed.append(rel)
            continue
        loaded = discovery.read_file(root, rel, max_bytes=max_bytes, confinement=confinement)
        if not isinstance(loaded, discovery.LoadedFile):
            if loaded.reason in skips.CONTENT_REASONS:
                verdicts[rel] = (*st, loaded.reason)
            result.skip(loaded.reason)
            if rec is not None:
                result.deleted.append(rel)
            continue
        if not full and rec is not None and rec.sha256 == loaded.sha256:
            rec.size, rec.mtime_ns = st
            result.touched = True
            result.unchanged += 1
            continue
        result.changed.append(rel)
        result.loaded[rel] = loaded
    result.deleted.sort()
    result.warnings = [str(bad) for bad in rules.bad_lines]
    result.skip_verdicts = verdicts if verdicts != recorded else None
    return result


def ignore_rules(root: Path, cfg: Config) -> IgnoreRules:
    """The ignore rules an index run of `root` applies: strict when a remote provider embeds the
    files."""
    return IgnoreRules.for_root(
        root,
        include_hidden=cfg.index.include_hidden,
        strict=cfg.embedding.provider != "local",
        allowed_secrets=cfg.embedding.allow_secret_files,
    )


def run_index(engine: Engine, args: IndexArgs, progress: Progress | None = None) -> IndexReport:
    """Bring the index up to date; `args`: full, dry_run, paths. The report's `phases` give the
    seconds each step took (worker steps summed over workers)."""
    started = time.monotonic()
    clock = PhaseClock()
    full = bool(args.get("full"))
    dry_run = bool(args.get("dry_run"))
    root = engine.ws.root
    paths = args.get("paths")
    if paths is not None:
        paths = normalise_paths(root, list(paths))
    if not dry_run:
        recover_rebuild(engine)
    manifest = None if full else engine.check_manifest()
    stale = manifest is not None and (
        manifest.get("content_version") != content_version() or not relations_ready(engine)
    )
    if stale and not dry_run:
        full, paths, manifest = True, None, None
    if manifest is None and paths is not None:
        paths = None
    # Milvus untouched since its rows last agreed with the file state: no engine unless there is
    # something to write
    settled = (
        not (dry_run or full)
        and bool(manifest and manifest.get("complete"))
        and engine.known_consistent()
    )
    store = repair = None
    if not (dry_run or settled):
        store, repair = _open_store(engine, full, clock)
        full, paths = (True, None) if repair else (full, paths)
    with clock.phase("discover"):
        work = plan(
            engine.blank() if full else engine,
            paths,
            full,
            read_new=dry_run or (manifest is not None and not full),
        )  # a repair rebuild streams too
    if work.skip_verdicts is not None and not dry_run:
        skips.save(engine.ws.path(skips.SKIPPED_STATE), work.skip_verdicts)
    if settled and (work.changed or work.deleted):
        store, repair = _open_store(engine, full, clock)
        if repair:
            full, paths = True, None
            with clock.phase("discover"):
                work = plan(engine.blank(), None, True, read_new=False)
    report: IndexReport = {"root": str(root), "dry_run": dry_run}
    if repair:
        report.update({"repaired": True, "repair_reason": repair})
    if store is None and settled:  # nothing to write: Milvus as it was when its rows last agreed
        assert manifest is not None
        _count(report, work, written=False)
        _nothing_changed(engine, manifest, work, report, started, paths)
        engine.remember_agreement()
        return report
    if store is None:  # a dry run
        _count(report, work, written=False)
        report.update({"changed_paths": work.changed, "deleted_paths": work.deleted})
        return report
    if full:
        return _rebuild(engine, store, work, report, progress, started, clock)
    if manifest is not None and manifest.get("complete") and not work.changed and not work.deleted:
        _count(report, work, written=False)
        _nothing_changed(engine, manifest, work, report, started, paths)
        engine.remember_agreement()  # (_repair_reason counted the rows)
        return report
    relations = engine.relations()
    stats = FileStatsStore(engine.ws.path(FILESTATS_DB))
    try:
        return _update(
            engine, store, work, report, progress, started, clock, manifest, paths, relations, stats
        )
    finally:
        stats.close()


def _update(
    engine: Engine,
    store: Any,
    work: Plan,
    report: IndexReport,
    progress: Progress | None,
    started: float,
    clock: PhaseClock,
    manifest: Manifest | None,
    paths: list[str] | None,
    relations: Any,
    stats: FileStatsStore,
) -> IndexReport:
    """An incremental run's writes: deleted files dropped, changed ones replaced batch by batch."""
    new_manifest: Manifest = {
        **engine.new_manifest(store.collection),
        "content_version": content_version(),
    }
    engine.ws.write_manifest({**(manifest or {}), **new_manifest, "complete": False})
    files = engine.files()
    if work.deleted:
        with clock.phase("milvus_write"):
            store.delete_paths(work.deleted)
        relations.remove_paths(work.deleted)
        stats.remove_paths(work.deleted)
        for rel in work.deleted:
            files.pop(rel, None)
        engine.save_files()
    chunks_done, embedded = _write_batches(
        engine, work, store, relations, stats, files, progress, True, clock
    )
    engine.save_files()
    if work.changed or work.deleted:
        with clock.phase("milvus_flush"):
            store.flush()
    engine.ws.write_manifest(
        {
            **new_manifest,
            "complete": True,
            "last_indexed": time.time(),
            "root_hash": root_hash(files),
            "commit": covered_commit(engine, manifest, paths),
        }
    )
    return _written(engine, store, work, report, files, (chunks_done, embedded), started, clock)


def _written(
    engine: Engine,
    store: Any,
    work: Plan,
    report: IndexReport,
    files: dict[str, FileRecord],
    done: tuple[int, int],
    started: float,
    clock: PhaseClock,
) -> IndexReport:
    """The report of a run that wrote: Milvus checked against the file state, the plan's counts,
    the chunks written and embedded (`done`), the files indexed, time and phases."""
    _check_agreement(engine, store, files)
    _count(report, work, written=True)
    report.update(
        {
            "chunks": done[0],
            "embedded": done[1],
            "files": len(files),
            "generated": _generated(files),
            "took_s": round(time.monotonic() - started, 3),
            "phases": clock.report(),
        }
    )
    return report


def _generated(files: dict[str, FileRecord]) -> int:
    """How many indexed files are generated, minified or dumps (index.generated)."""
    return sum(1 for record in files.values() if record.generated)


def _count(report: IndexReport, work: Plan, written: bool) -> None:
    """The plan's counts; after a write phase, `changed` counts the files it could read and store."""
    report.update(
        {
            "changed": work.indexed if written else len(work.changed),
            "deleted": len(work.deleted),
            "unchanged": work.unchanged,
            "skipped": work.skipped,
            "ignored": work.ignored,
        }
    )
    if work.warnings:
        report["warnings"] = work.warnings


def _open_store(engine: Engine, full: bool, clock: PhaseClock) -> tuple[Any, str | None]:
    """The store, opened (created when missing), and why this run must rebuild everything (or None)."""
    with clock.phase("open_store"):
        store = engine.open_store(create=True)
    return store, _repair_reason(engine, store, full)


def _repair_reason(engine: Engine, store: Any, full: bool) -> str | None:
    """Why this run must rebuild everything: Milvus data recreated, or rows that disagree with the
    file state."""
    reason, engine.repaired = engine.repaired, None
    if reason or full:
        return reason
    count, expected = store.count(), sum(rec.chunks for rec in engine.files().values())
    if count != expected:
        return f"the Milvus collection held {count} chunks where the index records {expected}"
    return None


def _write_batches(
    engine: Engine,
    work: Plan,
    store: Any,
    relations: Any,
    stats: FileStatsStore,
    files: dict[str, FileRecord],
    progress: Progress | None,
    incremental: bool,
    clock: PhaseClock,
) -> tuple[int, int]:
    """Read, prepare (chunks, BM25 text, relations, term counts; on both cores for big runs), embed
    and store `work.changed` batch by batch into `files`; (chunks, embedded). Files are read one
    batch ahead of preparing, never all at once. Incremental runs replace each file's rows and save
    the file state after every batch."""
    from zgrep.index.prepare import (
        Recipe,
        cached_vectors,
        prepared_batches,
        worker_count,
    )  # (tree-sitter: writes only)

    chunks_done = embedded = files_done = 0
    meta: dict[str, discovery.LoadedFile] = {}
    unreadable: list[str] = []
    batches = _read_batches(engine, work, meta, unreadable, clock)
    workers = worker_count(len(work.changed))
    model = getattr(engine.embedder, "source", None) if workers else None
    recipe = Recipe(
        engine.config.index.chunk_context_lines, model, str(engine.cache.path) if model else None
    )
    prepared = prepared_batches(batches, recipe, workers)
    with clock.phase("relations_write"):
        # into empty databases (a cold or full run): indexes built once, after the last batch
        relations.begin_load()
        stats.begin_load()
    while True:
        with clock.phase("prepare_wait"):
            batch = next(prepared, None)
        if batch is None:
            break
        clock.add(batch.seconds)
        gone = [rel for rel in unreadable if rel in files]
        unreadable.clear()
        done = [f.path for f in batch.files]
        if batch.vectors is None:
            texts = {h: c.embed_text for f in batch.files for h, c in zip(f.hashes, f.chunks)}
            vectors, fresh = cached_vectors(engine.embedder, engine.cache, texts, clock)
        else:
            vectors, fresh = batch.vectors, batch.embedded
        embedded += fresh
        with clock.phase("rows"):
            rows = [
                chunk_row(c, h, lex, vectors[h], meta[f.path].mtime)
                for f in batch.files
                for c, h, lex in zip(f.chunks, f.hashes, f.lexical)
            ]
        with clock.phase("milvus_write"):
            # rows exist only for recorded files (row-count repair covers any other)
            if incremental:
                store.delete_paths([rel for rel in done + gone if rel in files])
            store.insert(rows)
        with clock.phase("relations_write"):
            relations.replace_files([f.relations for f in batch.files])
            stats.replace_files([(f.path, f.terms) for f in batch.files])
            if gone:
                relations.remove_paths(gone)
                stats.remove_paths(gone)
        for f in batch.files:
            loaded = meta.pop(f.path)
            files[f.path] = FileRecord(
                loaded.sha256, loaded.size, loaded.mtime_ns, f.language, len(f.chunks), f.generated
            )
        for rel in gone:
            files.pop(rel, None)
        if incremental:
            with clock.phase("state_write"):
                engine.save_files()
        chunks_done += len(rows)
        files_done += len(done)
        if progress:
            progress(
                {
                    "files_done": files_done,
                    "files_total": len(work.changed),
                    "chunks_done": chunks_done,
                }
            )
    with clock.phase("relations_write"):
        relations.end_load()
        stats.end_load()
    if progress and work.changed:
        progress(
            {
                "files_done": len(work.changed),
                "files_total": len(work.changed),
                "chunks_done": chunks_done,
                "final": True,
            }
        )
    work.indexed = files_done
    return chunks_done, embedded


def _read_batches(
    engine: Engine,
    work: Plan,
    meta: dict[str, discovery.LoadedFile],
    unreadable: list[str],
    clock: PhaseClock,
) -> Iterator[list[tuple[str, str]]]:
    """`(path, text)` batches of `work.changed`, read lazily; what cannot be read is counted as
    skipped and listed in `unreadable`, each file's size, hash and times go to `meta`."""
    root, max_bytes = engine.ws.root, engine.config.index.max_file_bytes
    confinement = discovery.Confinement(root)
    for i in range(0, len(work.changed), FILES_PER_BATCH):
        items = []
        with clock.phase("read"):
            for rel in work.changed[i : i + FILES_PER_BATCH]:
                loaded = work.loaded.pop(rel, None) or discovery.read_file(
                    root, rel, max_bytes=max_bytes, confinement=confinement
                )
                if isinstance(loaded, discovery.LoadedFile):
                    meta[rel] = loaded
                    items.append((rel, loaded.text))
                else:
                    work.skip(loaded.reason)
                    unreadable.append(rel)
        yield items


def _rebuild(
    engine: Engine,
    store: Any,
    work: Plan,
    report: IndexReport,
    progress: Progress | None,
    started: float,
    clock: PhaseClock,
) -> IndexReport:
    """A full rebuild beside the live index (searches keep answering from it), then one switch.

    The rebuild marker is written before anything else; the new file state (naming the new
    collection) is the commit point; recover_rebuild() finishes or abandons a run killed on the way.
    """
    name = f"{engine.base_collection()}_g{time.time_ns() // 1_000_000:x}"
    marker: dict[str, Any] = {"collection": name, "retire": store.collection}
    _write_marker(engine, marker)
    target = store.sibling(name)
    target.drop()
    target.create()
    _remove_db(engine.ws.path(NEXT_RELATIONS))
    _remove_db(engine.ws.path(NEXT_FILESTATS))
    relations = RelationsStore(engine.ws.path(NEXT_RELATIONS))
    stats = FileStatsStore(engine.ws.path(NEXT_FILESTATS))
    files: dict[str, FileRecord] = {}
    try:
        chunks_done, embedded = _write_batches(
            engine, work, target, relations, stats, files, progress, False, clock
        )
    finally:
        relations.close()
        stats.close()
    if work.changed:
        with clock.phase("milvus_flush"):
            target.flush()
    marker["manifest"] = {
        **engine.new_manifest(name),
        "content_version": content_version(),
        "complete": True,
        "last_indexed": time.time(),
        "root_hash": root_hash(files),
        "commit": covered_commit(engine, None, None),
    }
    _write_marker(engine, marker)
    engine.save_files(files, name)
    _finish_rebuild(engine, marker, target, files)
    _written(engine, target, work, report, files, (chunks_done, embedded), started, clock)
    report.update({"deleted": 0, "unchanged": 0})  # a rebuild replaces all (keys keep their place)
    return report


def recover_rebuild(engine: Engine) -> None:
    """After a full rebuild was killed: finish its switch when it got to its commit point, else drop
    what it built (the live index stays as it was)."""
    path = engine.ws.path(REBUILD_STATE)
    if not path.exists():
        return
    try:
        marker = read_object(path) or {}
    except WorkspaceError:
        marker = {}
    name = marker.get("collection")
    name = name if isinstance(name, str) else None  # a marker is workspace content: untrusted
    store = engine.open_store(create=True)
    try:
        committed = isinstance(marker.get("manifest"), dict) and engine.files_collection() == name
    except WorkspaceError:
        committed = False
    if committed and name is not None and not engine.repaired:
        _finish_rebuild(engine, marker, store.sibling(name), engine.files())
        return
    if name is not None and name != store.collection and not engine.repaired:
        store.sibling(name).drop()
    _remove_db(engine.ws.path(NEXT_RELATIONS))
    _remove_db(engine.ws.path(NEXT_FILESTATS))
    path.unlink(missing_ok=True)


def _finish_rebuild(
    engine: Engine, marker: dict[str, Any], target: Any, files: dict[str, FileRecord]
) -> None:
    """Switch to the rebuilt collection and relations (each step may be repeated), then drop the
    old."""
    following = engine.ws.path(NEXT_RELATIONS)
    if following.exists():
        engine.relations().replace_all(following)
        _remove_db(following)
    next_stats = engine.ws.path(NEXT_FILESTATS)
    if next_stats.exists():
        live = FileStatsStore(engine.ws.path(FILESTATS_DB))
        try:
            live.replace_all(next_stats)
        finally:
            live.close()
        _remove_db(next_stats)
    engine.ws.write_manifest(marker["manifest"])
    engine.adopt(target, files, marker["collection"])
    retire = marker.get("retire")
    if isinstance(retire, str) and retire != marker["collection"]:
        target.sibling(retire).drop()
    engine.ws.path(REBUILD_STATE).unlink(missing_ok=True)


def _check_agreement(engine: Engine, store: Any, files: dict[str, FileRecord]) -> None:
    """After a run: when Milvus holds exactly the rows recorded, note it (the next run may then skip
    the engine)."""
    if store.count() == sum(rec.chunks for rec in files.values()):
        engine.remember_agreement()


def _write_marker(engine: Engine, marker: dict[str, Any]) -> None:
    atomic_write(engine.ws.path(REBUILD_STATE), json.dumps(marker))


def _remove_db(path: Path) -> None:
    """Delete an SQLite database with its WAL files."""
    for suffix in ("", "-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)


def covered_commit(
    engine: Engine, manifest: Manifest | None, paths: list[str] | None
) -> str | None:
    """The commit the index now reflects: HEAD after a whole-tree run; after a run over some
    paths, HEAD once every path changed since the recorded commit is indexed at its current content
    (whichever run indexed it), else the recorded commit."""
    root = engine.ws.root
    head = head_commit(root)
    previous = (manifest or {}).get("commit")
    if paths is None or previous == head:
        return head
    if previous is None or head is None:
        return previous
    try:
        rest = sorted(set(changed_paths(root, previous, head)) - set(paths))
    except GitError:
        return previous
    if not rest:
        return head
    try:
        check = plan(engine, normalise_paths(root, rest), full=False)
    except ZgError:
        return previous
    return head if not check.changed and not check.deleted else previous


def _nothing_changed(
    engine: Engine,
    manifest: Manifest,
    work: Plan,
    report: IndexReport,
    started: float,
    paths: list[str] | None,
) -> IndexReport:
    """Record refreshed stat data and the current commit without touching Milvus."""
    if work.touched:
        engine.save_files()
    commit = covered_commit(engine, manifest, paths)
    if manifest.get("commit") != commit:
        engine.ws.write_manifest({**manifest, "commit": commit})
    files = engine.files()
    report.update(
        {
            "chunks": 0,
            "embedded": 0,
            "files": len(files),
            "generated": _generated(files),
            "took_s": round(time.monotonic() - started, 3),
        }
    )
    return report
