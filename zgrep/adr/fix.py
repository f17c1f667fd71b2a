"""`zg adr check --fix`: repair anchors when the repair is certain, explain the rest."""

from __future__ import annotations

import subprocess
from dataclasses import replace
from pathlib import Path
from typing import Any

from zgrep.adr.anchors import find_symbol, resolve
from zgrep.adr.check import Problem
from zgrep.adr.edit import FrontMatter
from zgrep.adr.model import Anchor, AdrError, anchor_from_yaml
from zgrep.adr.trees import git
from zgrep.workspace import atomic_write


def _name_status_renames(out: str) -> list[tuple[str, str]]:
    fields, pairs, i = out.split("\0"), [], 0
    while i < len(fields) and fields[i]:
        if fields[i][0] in "RC":
            if fields[i][0] == "R":
                pairs.append((fields[i + 1], fields[i + 2]))
            i += 3
        else:
            i += 2
    return pairs


def rename_map(root: Path, staged: bool) -> dict[str, str]:
    """old → new path from git history, then from the staged (or working-copy) change."""
    if subprocess.run(["git", "rev-parse", "--verify", "-q", "HEAD"], cwd=root, capture_output=True).returncode:
        return {}
    history = git(root, "log", "-M", "--diff-filter=R", "--name-status", "-z", "--format=", "--reverse", "-n", "5000")
    current = git(root, "diff", "--cached", "-M", "--name-status", "-z") if staged else \
        git(root, "diff", "-M", "--name-status", "-z", "HEAD")
    out: dict[str, str] = {}
    for old, new in _name_status_renames(history.replace("\0\0", "\0")) + _name_status_renames(current):
        out[old] = new
    return out


def follow(renames: dict[str, str], path: str) -> str | None:
    """Where `path` ended up after every rename in order (None if it never moved)."""
    seen, cur = {path}, path
    while cur in renames and renames[cur] not in seen:
        cur = renames[cur]
        seen.add(cur)
    return cur if cur != path else None


def _relocate_lines(root: Path, tree: Any, anchor: Anchor) -> tuple[int, int] | None:
    """Find the anchored lines as they were at HEAD, once, in the current file."""
    proc = subprocess.run(["git", "show", f"HEAD:{anchor.path}"], cwd=root, capture_output=True)
    now = tree.read(anchor.path)
    if proc.returncode or now is None or anchor.lines is None:
        return None
    old = proc.stdout.decode("utf-8", "replace").splitlines()
    cur = now.decode("utf-8", "replace").splitlines()
    lo, hi = anchor.lines
    if hi > len(old):
        return None
    block, n = old[lo - 1:hi], hi - lo + 1
    starts = [i for i in range(len(cur) - n + 1) if cur[i:i + n] == block]
    return (starts[0] + 1, starts[0] + n) if len(starts) == 1 else None


def _moved_symbol(tree: Any, anchor: Anchor, candidates: set[str]) -> Anchor | None:
    """The one changed file that now defines the anchored symbol, if exactly one does."""
    from zgrep.chunking import detect_language

    hits = []
    for path in sorted(candidates - {anchor.path}):
        data = tree.read(path)
        if data is None or b"\0" in data[:8192]:
            continue
        found = find_symbol(data.decode("utf-8", "replace"), detect_language(path), anchor.symbol)
        hits += [(path, (s.start_line, s.end_line)) for s in found]
    if len({p for p, _ in hits}) != 1:
        return None
    path, rng = hits[0]
    return Anchor(path, anchor.symbol, rng if anchor.lines else None)


def propose(problem: Problem, root: Path, tree: Any, renames: dict[str, str], changed: set[str]) -> Anchor | str:
    """The repaired anchor, or a sentence saying why it cannot be repaired safely."""
    anchor = problem.anchor
    assert anchor is not None
    if problem.code == "anchor_lines_stale" and problem.found:
        return replace(anchor, lines=problem.found)
    if problem.code == "anchor_missing_file":
        new_path = follow(renames, anchor.path)
        if new_path is None:
            return f"{anchor.path} was deleted, not renamed: point the anchor elsewhere or supersede {problem.adr}"
        moved = replace(anchor, path=new_path)
        res = resolve(moved, tree)
        if res.code == "anchor_lines_stale" and res.found:
            return replace(moved, lines=res.found)
        return moved if res.code == "ok" else f"{anchor.path} was renamed to {new_path}, but there: {res.message}"
    if problem.code == "anchor_symbol":
        moved = _moved_symbol(tree, anchor, changed)
        if moved is not None:
            return moved
        return (f"{anchor.symbol} is not defined in {anchor.path} nor in exactly one changed file: "
                f"if it was renamed, update the anchor to the new name")
    if problem.code == "anchor_lines":
        rng = _relocate_lines(root, tree, anchor)
        if rng:
            return replace(anchor, lines=rng)
        return f"the anchored lines of {anchor.path} changed: pick the new range by hand"
    return f"cannot repair {problem.code} automatically"


def apply(root: Path, adr_file: str, old: Anchor, new: Anchor) -> bool:
    """Rewrite one anchor in the working-copy ADR file, touching only that list item."""
    path = root / adr_file
    fm = FrontMatter(path.read_text(encoding="utf-8"))

    def same(value: Any) -> bool:
        try:
            return anchor_from_yaml(value) == old
        except AdrError:
            return False

    if not fm.replace_item("code_anchors", same, new.to_yaml()):
        return False
    atomic_write(path, fm.text())
    return True
