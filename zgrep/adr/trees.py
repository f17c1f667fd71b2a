"""Read-only views of a file tree: the working copy, or the git index (staged blobs)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path


def git(root: Path, *args: str, check: bool = True) -> str:
    """Run git in `root` and return stdout (text)."""
    proc = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True)
    if check and proc.returncode != 0:
        raise RuntimeError(f"git {' '.join(args)}: {proc.stderr.strip()}")
    return proc.stdout


def is_git(root: Path) -> bool:
    """True when `root` is inside a git work tree."""
    return subprocess.run(["git", "rev-parse", "--is-inside-work-tree"], cwd=root,
                          capture_output=True).returncode == 0


class WorkTree:
    """The files on disk under `root`."""

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
        """File bytes, or None when absent."""
        try:
            return (self.root / rel).read_bytes()
        except OSError:
            return None

    def list_dir(self, rel: str) -> list[str]:
        """Workspace-relative paths of the files directly in directory `rel`."""
        d = self.root / rel
        return sorted(f"{rel}/{n}" for n in os.listdir(d) if (d / n).is_file()) if d.is_dir() else []

    def close(self) -> None:
        """Nothing to release."""


class IndexTree:
    """The staged tree: paths from `git ls-files -s`, blobs through one `git cat-file --batch`."""

    label = "staged tree"

    def __init__(self, root: Path) -> None:
        self.root = root
        self.entries: dict[str, str] = {}
        for row in git(root, "ls-files", "-s", "-z").split("\0"):
            if row:
                meta, path = row.split("\t", 1)
                mode, sha, _stage = meta.split()
                if mode != "160000":
                    self.entries[path] = sha
        self.dirs = {p.rsplit("/", i)[0] for p in self.entries for i in range(1, p.count("/") + 1)}
        self._batch: subprocess.Popen[bytes] | None = None

    def is_file(self, rel: str) -> bool:
        """Staged as a file."""
        return rel in self.entries

    def is_dir(self, rel: str) -> bool:
        """Some staged file lives under `rel/`."""
        return rel in self.dirs

    def read(self, rel: str) -> bytes | None:
        """The staged blob for `rel`, or None when not staged."""
        sha = self.entries.get(rel)
        if sha is None:
            return None
        if self._batch is None:
            self._batch = subprocess.Popen(["git", "cat-file", "--batch"], cwd=self.root,
                                           stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        assert self._batch.stdin and self._batch.stdout
        self._batch.stdin.write(sha.encode() + b"\n")
        self._batch.stdin.flush()
        header = self._batch.stdout.readline().split()
        if len(header) < 3:
            raise RuntimeError(f"git cat-file: cannot read {rel} ({sha})")
        data = self._batch.stdout.read(int(header[2]) + 1)
        return data[:-1]

    def list_dir(self, rel: str) -> list[str]:
        """Staged files directly in directory `rel`."""
        prefix = rel.rstrip("/") + "/"
        return sorted(p for p in self.entries if p.startswith(prefix) and "/" not in p[len(prefix):])

    def close(self) -> None:
        """Stop the cat-file process."""
        if self._batch is not None:
            assert self._batch.stdin
            self._batch.stdin.close()
            self._batch.wait()
            self._batch = None


def staged_changes(root: Path) -> tuple[set[str], dict[str, str]]:
    """Paths touched by the staged change (both sides of renames) and the renames old → new."""
    head_ok = subprocess.run(["git", "rev-parse", "--verify", "-q", "HEAD"], cwd=root,
                             capture_output=True).returncode == 0
    if not head_ok:
        return set(git(root, "ls-files", "-z").split("\0")) - {""}, {}
    fields = git(root, "diff", "--cached", "-M", "--name-status", "-z").split("\0")
    touched: set[str] = set()
    renames: dict[str, str] = {}
    i = 0
    while i < len(fields) and fields[i]:
        status = fields[i]
        if status[0] in "RC":
            old, new = fields[i + 1], fields[i + 2]
            touched |= {old, new}
            if status[0] == "R":
                renames[old] = new
            i += 3
        else:
            touched.add(fields[i + 1])
            i += 2
    return touched, renames


def changed_since_head(root: Path) -> set[str]:
    """Working-copy paths that differ from HEAD, plus untracked files (empty outside git)."""
    if not is_git(root):
        return set()
    diff = git(root, "diff", "--name-only", "-z", "HEAD", check=False)
    untracked = git(root, "ls-files", "-o", "--exclude-standard", "-z")
    return {p for p in (diff + untracked).split("\0") if p}
