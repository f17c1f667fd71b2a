"""Changed paths between two revisions, with renames, computed by git (hooks and `--changed`)."""

from __future__ import annotations

import subprocess
from pathlib import Path

EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
NULL_SHA = "0" * 40


class GitDiffError(RuntimeError):
    """git could not compute the change set (bad revision, not a repository)."""


def _name_status(root: Path, argv: list[str], stdin: bytes | None = None) -> list[str]:
    """Run a `--name-status -z` git diff command; every path it names (both sides of renames)."""
    proc = subprocess.run(["git", "-C", str(root), *argv], input=stdin, capture_output=True, check=False, timeout=60)
    if proc.returncode != 0:
        raise GitDiffError(proc.stderr.decode("utf-8", "replace").strip().splitlines()[-1] if proc.stderr else "git diff failed")
    fields = proc.stdout.decode("utf-8", "surrogateescape").split("\0")
    out: list[str] = []
    i = 0
    while i < len(fields) and fields[i]:
        status = fields[i]
        count = 2 if status[:1] in ("R", "C") else 1
        out.extend(fields[i + 1 : i + 1 + count])
        i += 1 + count
    return sorted(set(out))


def changed_paths(root: Path, old: str | None, new: str = "HEAD") -> list[str]:
    """Every path touched between `old` and `new` (both sides of renames); old=None: all of `new`."""
    base = old if old and old != NULL_SHA else EMPTY_TREE
    return _name_status(root, ["diff", "--name-status", "-z", "-M", base, new, "--"])


def commit_paths(root: Path, rev: str = "HEAD") -> list[str]:
    """Paths commit `rev` changed against its first parent (a root commit: all its files)."""
    return _name_status(root, ["diff-tree", "-r", "-M", "--root", "-m", "--first-parent", "--no-commit-id",
                               "--name-status", "-z", rev])


def pair_paths(root: Path, pairs: list[tuple[str, str]]) -> list[str]:
    """Paths that differ between each (old, new) commit pair, in one git call (post-rewrite)."""
    if not pairs:
        return []
    lines = "".join(f"{new} {old}\n" for old, new in pairs).encode()
    return _name_status(root, ["diff-tree", "--stdin", "-r", "-M", "--no-commit-id", "--name-status", "-z"], lines)


def range_paths(root: Path, spec: str) -> list[str]:
    """Paths changed by a revision range as git spells it: `A..B`, `A...B` (since the merge
    base), `A..` / `A` (to HEAD)."""
    if "..." in spec:
        left, _, right = spec.partition("...")
        return _name_status(root, ["diff", "--name-status", "-z", "-M", f"{left or 'HEAD'}...{right or 'HEAD'}", "--"])
    old, _, new = spec.partition("..")
    return changed_paths(root, old or None, new or "HEAD")
