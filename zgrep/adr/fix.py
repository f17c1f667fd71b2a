"""`zg adr check --fix`: repair anchors when the repair is certain, explain the rest."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from zgrep import git
from zgrep.adr.anchors import find_symbol, resolve
from zgrep.adr.check import Problem
from zgrep.adr.edit import FrontMatter
from zgrep.adr.model import Anchor, AdrError, anchor_from_yaml
from zgrep.fsutil import atomic_write


def rename_map(root: Path, staged: bool) -> dict[str, str]:
    """old → new path from git history, then from the staged (or working-copy) change."""
    if git.head_commit(root) is None:
        return {}
    history = git.changes(
        root, "log", "-M", "--diff-filter=R", "--format=", "--reverse", "-n", "5000"
    )
    current = (
        git.changes(root, "diff", "--cached", "-M", own_index=True)
        if staged
        else git.changes(root, "diff", "-M", "HEAD")
    )
    return {e.old: e.path for e in history + current if e.is_rename and e.old is not None}


def follow(renames: dict[str, str], path: str) -> str | None:
    """Where `path` ended up after every rename in order (None if it never moved)."""
    seen, cur = {path}, path
    while cur in renames and renames[cur] not in seen:
        cur = renames[cur]
        seen.add(cur)
    return cur if cur != path else None


def _relocate_lines(root: Path, tree: Any, anchor: Anchor) -> tuple[int, int] | None:
    """Find the anchored lines as they were at HEAD, once, in the current file."""
    then = git.try_run(root, "show", f"HEAD:{anchor.path}")
    now = tree.read(anchor.path)
    if then is None or now is None or anchor.lines is None:
        return None
    old = then.decode("utf-8", "replace").splitlines()
    cur = now.decode("utf-8", "replace").splitlines()
    lo, hi = anchor.lines
    if hi > len(old):
        return None
    block, n = old[lo - 1 : hi], hi - lo + 1
    starts = [i for i in range(len(cur) - n + 1) if cur[i : i + n] == block]
    return (starts[0] + 1, starts[0] + n) if len(starts) == 1 else None


def _moved_symbol(tree: Any, anchor: Anchor, candidates: set[str]) -> Anchor | None:
    """The one changed file that now defines the anchored symbol, if exactly one does."""
    from zgrep.chunking import (
        detect_language,
    )  # tree-sitter: loaded only when a symbol has to be found

    hits = []
    for path in sorted(candidates - {anchor.path}):
        data = tree.read(path)
        if data is None or b"\0" in data[:8192]:
            continue
        source = data.decode("utf-8", "replace")
        found = find_symbol(source, detect_language(path, source), anchor.symbol)
        hits += [(path, (s.start, s.end)) for s in found]
    if len({p for p, _ in hits}) != 1:
        return None
    path, rng = hits[0]
    return Anchor(path, anchor.symbol, rng if anchor.lines else None)


def propose(
    problem: Problem, root: Path, tree: Any, renames: dict[str, str], changed: set[str]
) -> Anchor | str:
    """The repaired anchor, or a sentence saying why it cannot be repaired safely."""
    anchor = problem.anchor
    assert anchor is not None
    if problem.code == "anchor_lines_stale" and problem.found:
        return replace(anchor, lines=problem.found)
    if problem.code == "anchor_missing_file":
        new_path = follow(renames, anchor.path)
        if new_path is None:
            return f"{anchor.path} was deleted, not renamed: point the anchor elsewhere or supersede {problem.adr}"
        renamed = replace(anchor, path=new_path)
        res = resolve(renamed, tree)
        if res.code == "anchor_lines_stale" and res.found:
            return replace(renamed, lines=res.found)
        return (
            renamed
            if res.code == "ok"
            else f"{anchor.path} was renamed to {new_path}, but there: {res.message}"
        )
    if problem.code == "anchor_symbol":
        moved = _moved_symbol(tree, anchor, changed)
        if moved is not None:
            return moved
        return (
            f"{anchor.symbol} is not defined in {anchor.path} nor in exactly one changed file: "
            f"if it was renamed, update the anchor to the new name"
        )
    if problem.code == "anchor_lines":
        rng = _relocate_lines(root, tree, anchor)
        if rng:
            return replace(anchor, lines=rng)
        return f"the anchored lines of {anchor.path} changed: pick the new range by hand"
    return f"cannot repair {problem.code} automatically"


def apply(root: Path, adr_file: str, old: Anchor, new: Anchor) -> bool:
    """Rewrite one anchor in the working-copy ADR file, touching only that list item."""
    path = root / adr_file
    fm = FrontMatter.of_record(path.read_text(encoding="utf-8"), "code_anchors")

    def same(value: Any) -> bool:
        try:
            return anchor_from_yaml(value) == old
        except AdrError:
            return False

    if not fm.replace_item("code_anchors", same, new.to_yaml()):
        return False
    atomic_write(path, fm.text())
    return True
