"""Git-aware file listing and file reading with counted skip reasons.

Listing: inside a git work tree, `git ls-files` (tracked + untracked-not-ignored, plus what
`.zgignore`/`.ignore`/the global file re-include with `!`); outside git, a pruned `os.walk`
that never follows directory symlinks. `IgnoreRules` is applied to every result, so the
built-in defaults and ripgrep-style layers hold for tracked files too.

Reading is per file (`read_file`) so an engine can `stat_files` first and re-read only what
changed; `discover` is the convenience generator over both steps.
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from zgrep.fsutil import stat_signature
from zgrep.git import is_git_repo, try_run
from zgrep.index.ignore import IgnoreRules
from zgrep.workspace import STATE_DIR

SKIP_REASONS = ("too_large", "binary", "not_utf8", "unreadable", "vanished", "not_regular", "outside_workspace")
BINARY_SNIFF_BYTES = 8192


@dataclass(frozen=True)
class LoadedFile:
    """A decoded text file: `sha256` is the hex digest of the raw bytes (BOM included)."""

    rel: str
    text: str
    sha256: str
    size: int
    mtime_ns: int

    @property
    def mtime(self) -> float:
        """Modification time in epoch seconds."""
        return self.mtime_ns / 1e9


@dataclass(frozen=True)
class Skip:
    """A listed file that is not indexed; `reason` is one of SKIP_REASONS."""

    rel: str
    reason: str


# --- git -------------------------------------------------------------------------------

def _ls_files(root: Path, *args: str) -> list[str]:
    """NUL-separated `git ls-files` output as `/`-separated names (undecodable names dropped)."""
    out = try_run(root, "ls-files", "-z", *args) or b""
    names = []
    for raw in out.split(b"\0"):
        try:
            names.append(raw.decode("utf-8"))
        except UnicodeDecodeError:
            continue
    return [n for n in names if n]


# --- listing ---------------------------------------------------------------------------

def list_files(root: Path, rules: IgnoreRules) -> list[str]:
    """Sorted, `/`-separated workspace-relative paths of the regular files to index."""
    root = Path(root)
    listed = _list_git(root, rules) if is_git_repo(root) else _walk(root, rules, "")
    confinement = Confinement(root)
    return sorted({rel for rel in listed if _is_listable_file(confinement, rel)})


def _list_git(root: Path, rules: IgnoreRules) -> Iterator[str]:
    """git's view (cached + others, standard excludes) plus `!`-re-included ignored paths."""
    for rel in _ls_files(root, "--cached", "--others", "--exclude-standard"):
        if not rel.endswith("/") and rules.admits(rel):
            yield rel
    for rel in _ls_files(root, "--others", "--ignored", "--exclude-standard", "--directory"):
        if rel.endswith("/") and rules.reincludes(rel, is_dir=True):
            yield from _walk(root, rules, rel.rstrip("/"))
        elif rules.reincludes(rel):
            yield rel


def filter_paths(root: Path, rules: IgnoreRules, rels: Iterable[str]) -> list[str]:
    """The subset of given paths (e.g. from a git hook) that `list_files` would list."""
    confinement = Confinement(root)
    return sorted({r for r in rels if rules.admits(r) and _is_listable_file(confinement, r)})


def _walk(root: Path, rules: IgnoreRules, start: str) -> Iterator[str]:
    """Admitted files below `root/start`, from `walk_dirs`."""
    for rel_dir, filenames in walk_dirs(root, rules, start):
        prefix = rel_dir + "/" if rel_dir else ""
        yield from (prefix + f for f in filenames if rules.admits(prefix + f))


def walk_dirs(root: Path, rules: IgnoreRules, start: str = "") -> Iterator[tuple[str, list[str]]]:
    """Each admitted directory below `root/start` ("" is the root) with the names of the files in it (not yet
    checked against the rules); a symlinked directory is never entered, nor zgrep's own state directory."""
    top = str(root)
    for dirpath, dirnames, filenames in os.walk(os.path.join(top, start) if start else top):
        rel_dir = dirpath[len(top) + 1:].replace(os.sep, "/")
        prefix = rel_dir + "/" if rel_dir else ""
        dirnames[:] = sorted(
            d for d in dirnames
            if prefix + d != STATE_DIR and not os.path.islink(os.path.join(dirpath, d)) and rules.admits(prefix + d, True)
        )
        yield rel_dir, filenames


class Confinement:
    """Keeps workspace-relative paths inside the workspace the way the listing does: no symlinked
    directory on the way (checked once per directory) and a file symlink resolving inside."""

    def __init__(self, root: Path) -> None:
        self.real_root = os.path.realpath(root)
        self._dirs: dict[str, bool] = {}

    def _plain_dir(self, rel_dir: str) -> bool:
        """Whether the directory `rel_dir` is reached without following a symlink."""
        plain = self._dirs.get(rel_dir)
        if plain is None:
            path = os.path.join(self.real_root, rel_dir)
            plain = self._dirs[rel_dir] = os.path.realpath(path) == os.path.normpath(path)
        return plain

    def resolve(self, rel: str) -> tuple[str, int] | None:
        """`(real path, file mode or 0 when missing)` of `rel` when it stays inside the workspace, else None."""
        parts = rel.split("/")
        if not rel or "" in parts or "." in parts or ".." in parts or not self._plain_dir(rel.rpartition("/")[0]):
            return None
        path = os.path.join(self.real_root, rel)
        try:
            mode = os.lstat(path).st_mode
        except OSError:
            return path, 0
        if not stat.S_ISLNK(mode):
            return path, mode
        target = os.path.realpath(path)
        if os.path.commonpath([self.real_root, target]) != self.real_root:
            return None
        try:
            return target, os.stat(target).st_mode
        except OSError:
            return target, 0

    def path(self, rel: str) -> str | None:
        """The real path of `rel` when it stays inside the workspace, else None."""
        resolved = self.resolve(rel)
        return resolved[0] if resolved else None


def _is_listable_file(confinement: Confinement, rel: str) -> bool:
    """A regular file, or a symlink to a regular file, confined to the workspace (not dirs/submodules)."""
    resolved = confinement.resolve(rel)
    return resolved is not None and stat.S_ISREG(resolved[1])


# --- reading ---------------------------------------------------------------------------

def stat_files(root: Path, rels: Iterable[str]) -> dict[str, tuple[int, int]]:
    """`{rel: (size, mtime_ns)}` for files that still exist inside the workspace: the cheap
    "did it change?" test (a path whose real path leaves the workspace is left out)."""
    confinement = Confinement(root)
    result = {}
    for rel in rels:
        target = confinement.path(rel)
        if target is None:
            continue
        try:
            st = os.stat(target)
        except OSError:
            continue
        result[rel] = stat_signature(st)
    return result


def read_file(root: Path, rel: str, *, max_bytes: int) -> LoadedFile | Skip:
    """Read and decode one file, or say why not; never raises for the SKIP_REASONS cases."""
    target = Confinement(root).path(rel)
    if target is None:
        return Skip(rel, "outside_workspace")
    try:
        fd = os.open(target, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW)
    except FileNotFoundError:
        return Skip(rel, "vanished")
    except PermissionError:
        return Skip(rel, "unreadable")
    except OSError:
        return Skip(rel, "not_regular")  # e.g. a symlink loop, a link swapped in since, or a socket
    try:
        return _read_open(fd, rel, max_bytes)
    except OSError:
        return Skip(rel, "unreadable")
    finally:
        os.close(fd)


def _read_open(fd: int, rel: str, max_bytes: int) -> LoadedFile | Skip:
    """Check type and size with fstat before reading any byte, then read and decode."""
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        return Skip(rel, "not_regular")
    if st.st_size > max_bytes:
        return Skip(rel, "too_large")
    data = _read_at_most(fd, max_bytes + 1)
    if len(data) > max_bytes:
        return Skip(rel, "too_large")  # grew since fstat
    if looks_binary(data):
        return Skip(rel, "binary")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        return Skip(rel, "not_utf8")
    return LoadedFile(rel, text, hashlib.sha256(data).hexdigest(), len(data), st.st_mtime_ns)


def looks_binary(data: bytes) -> bool:
    """The indexer's binary test (`zg read` uses it too): a NUL byte among the first bytes."""
    return b"\0" in data[:BINARY_SNIFF_BYTES]


def _read_at_most(fd: int, limit: int) -> bytes:
    """Read until EOF or `limit` bytes."""
    chunks, total = [], 0
    while total < limit:
        chunk = os.read(fd, min(1 << 20, limit - total))
        if not chunk:
            break
        chunks.append(chunk)
        total += len(chunk)
    return b"".join(chunks)


def discover(root: Path, rules: IgnoreRules, max_bytes: int) -> Iterator[LoadedFile | Skip]:
    """Lazily list and read every file: one item at a time, so memory stays flat."""
    for rel in list_files(root, rules):
        yield read_file(root, rel, max_bytes=max_bytes)
