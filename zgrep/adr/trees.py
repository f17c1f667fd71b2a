"""Read-only views of a file tree: the working copy, or the git index (staged blobs)."""

from __future__ import annotations

import os
import posixpath
from pathlib import Path

from zgrep import git
from zgrep.index.discovery import Skip, read_bytes

READ_MAX_BYTES = 16 * 1024 * 1024
"""The largest ADR or anchored file the checks read."""
_REFUSED = {
    "outside_workspace": "it resolves outside the workspace (a symlink out of it) or into .git/ or .zgrep/",
    "not_regular": "it is not a regular file (a FIFO, a device or a socket)",
    "too_large": f"it is larger than {READ_MAX_BYTES // (1024 * 1024)} MiB",
    "unreadable": "it cannot be read (permission denied)",
}


class UnsafeRead(ValueError):
    """A workspace path the ADR checks refuse to read; `str()` is one line naming it and why."""


class WorkTree:
    """The files on disk under `root`, read through the indexer's guarded open (confined, regular
    files only, non-blocking, capped)."""

    label = "working copy"

    def __init__(self, root: Path) -> None:
        self.root = root

    def is_file(self, rel: str) -> bool:
        """A regular file (or a symlink to one) inside the tree."""
        return (self.root / rel).is_file()

    def is_dir(self, rel: str) -> bool:
        """A directory inside the tree."""
        return (self.root / rel).is_dir()

    def read(self, rel: str) -> bytes | None:
        """File bytes, or None when absent; UnsafeRead for a path out of the workspace, a FIFO or
        device, or a file over READ_MAX_BYTES."""
        norm = posixpath.normpath(rel.replace("\\", "/")).strip("/")
        got = read_bytes(self.root, norm, max_bytes=READ_MAX_BYTES)
        if isinstance(got, Skip):
            if got.reason == "vanished":
                return None
            raise UnsafeRead(f"refusing to read {rel}: {_REFUSED.get(got.reason, got.reason)}")
        return got[0]

    def list_dir(self, rel: str) -> list[str]:
        """Workspace-relative paths of the files directly in directory `rel`."""
        d = self.root / rel
        return (
            sorted(f"{rel}/{n}" for n in os.listdir(d) if (d / n).is_file()) if d.is_dir() else []
        )

    def close(self) -> None:
        """Nothing to release."""


class IndexTree:
    """The staged tree: the index git commits from (the hook's own, under `git commit -a`), blobs
    through one `git cat-file --batch`."""

    label = "staged tree"

    def __init__(self, root: Path) -> None:
        self.root = root
        self.entries: dict[str, str] = {}
        for row in git.split_names(git.run(root, "ls-files", "-s", "-z", own_index=True)):
            meta, path = row.split("\t", 1)
            mode, sha, _stage = meta.split()
            if mode != "160000":
                self.entries[path] = sha
        self.dirs = {p.rsplit("/", i)[0] for p in self.entries for i in range(1, p.count("/") + 1)}
        self._blobs = git.BlobReader(root)

    def is_file(self, rel: str) -> bool:
        """Staged as a file."""
        return rel in self.entries

    def is_dir(self, rel: str) -> bool:
        """Some staged file lives under `rel/`."""
        return rel in self.dirs

    def read(self, rel: str) -> bytes | None:
        """The staged blob for `rel`, or None when not staged."""
        sha = self.entries.get(rel)
        return None if sha is None else self._blobs.read(sha)

    def list_dir(self, rel: str) -> list[str]:
        """Staged files directly in directory `rel`."""
        prefix = rel.rstrip("/") + "/"
        return sorted(
            p for p in self.entries if p.startswith(prefix) and "/" not in p[len(prefix) :]
        )

    def close(self) -> None:
        """Stop the cat-file process."""
        self._blobs.close()


def staged_changes(root: Path) -> tuple[set[str], dict[str, str]]:
    """Paths touched by the staged change (both sides of renames) and the renames old → new."""
    if git.head_commit(root) is None:
        return set(git.split_names(git.run(root, "ls-files", "-z", own_index=True))), {}
    entries = git.changes(root, "diff", "--cached", "-M", own_index=True)
    return set(git.touched(entries)), {
        e.old: e.path for e in entries if e.is_rename and e.old is not None
    }


def changed_since_head(root: Path) -> set[str]:
    """Working-copy paths that differ from HEAD, plus untracked files (empty outside git)."""
    if not git.is_git_repo(root):
        return set()
    diff = git.try_run(root, "diff", "--name-only", "-z", "HEAD")
    untracked = git.run(root, "ls-files", "-o", "--exclude-standard", "-z")
    return set(git.split_names(diff) + git.split_names(untracked))
