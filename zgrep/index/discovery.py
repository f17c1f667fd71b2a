"""Git-aware file listing and file reading with counted skip reasons.

Listing: inside a git work tree, `git ls-files` (tracked + untracked-not-ignored, plus what
`.zgignore`/`.ignore`/the global file re-include with `!`); outside git, a pruned iterative walk
that never follows directory symlinks. `IgnoreRules` is applied to every result, so the
built-in defaults and ripgrep-style layers hold for tracked files too.

Reading is per file (`read_file`, through `open_confined`, the one guarded open) so an engine can
`stat_files` first and re-read only what changed; `discover` is the convenience generator over both
steps."""

from __future__ import annotations

import hashlib
import os
import stat
import threading
from collections.abc import Iterable, Iterator
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from zgrep.fsutil import open_regular, read_at_most, stat_signature
from zgrep.git import is_git_repo, try_run
from zgrep.index.ignore import GITIGNORE, IGNORE_FILE_NAMES, IgnoreRules
from zgrep.workspace import STATE_DIR

SKIP_REASONS = (
    "too_large",
    "binary",
    "not_utf8",
    "unreadable",
    "vanished",
    "not_regular",
    "outside_workspace",
    "undecodable_name",
)
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


@dataclass
class Tally:
    """What a listing left out: paths each ignore layer kept out (a directory counts once) and files
    skipped for another reason (`undecodable_name`)."""

    ignored: Counter[str] = field(default_factory=Counter)
    skipped: Counter[str] = field(default_factory=Counter)


def _ls_files(root: Path, tally: Tally, *args: str) -> list[str]:
    """NUL-separated `git ls-files` output as `/`-separated names (undecodable names counted, not
    listed)."""
    return _names(try_run(root, "ls-files", "-z", *args) or b"", tally)


def _names(out: bytes, tally: Tally) -> list[str]:
    """The names of `git ls-files -z` output, undecodable ones counted in `tally`."""
    names = []
    for raw in out.split(b"\0"):
        try:
            names.append(raw.decode("utf-8"))
        except UnicodeDecodeError:
            tally.skipped["undecodable_name"] += 1
    return [n for n in names if n]


# --- listing ---------------------------------------------------------------------------


def list_files(
    root: Path,
    rules: IgnoreRules,
    tally: Tally | None = None,
    stats: dict[str, tuple[int, int]] | None = None,
) -> list[str]:
    """Sorted, `/`-separated workspace-relative paths of the regular files to index; `tally` counts
    what was left out and why; `stats` receives each listed file's `stat_files` signature (one stat
    per file)."""
    root = Path(root)
    tally = tally if tally is not None else Tally()
    listed = _list_git(root, rules, tally) if is_git_repo(root) else _walk(root, rules, "", tally)
    confinement = Confinement(root)
    found = stats if stats is not None else {}
    for rel in set(listed):
        resolved = confinement.resolve(rel)
        if resolved is not None and resolved[1] is not None and stat.S_ISREG(resolved[1].st_mode):
            found[rel] = stat_signature(resolved[1])
    return sorted(found)


def _admitted(
    rules: IgnoreRules, rel: str, tally: Tally, is_dir: bool = False, tracked: bool = False
) -> bool:
    """`rules.admits`, counting the layer that says no."""
    layer = rules.excluded_by(rel, is_dir, tracked)
    if layer is not None and rel.rpartition("/")[2] not in IGNORE_FILE_NAMES:
        tally.ignored[layer] += 1
    return layer is None


# tracked files; untracked ones git does not ignore; the ignored ones (a directory as one entry)
_LISTINGS = (
    ("--cached",),
    ("--others", "--exclude-standard"),
    ("--others", "--ignored", "--exclude-standard", "--directory"),
)


def _side_by_side(root: Path, listings: tuple[tuple[str, ...], ...]) -> list[bytes]:
    """`git ls-files -z` output of each listing, the listings run side by side (Django's three: 0.24 s
    one after another); an exception in any is raised here."""
    outs: list[bytes] = [b""] * len(listings)
    errors: list[BaseException] = []

    def list_one(i: int) -> None:
        try:
            outs[i] = try_run(root, "ls-files", "-z", *listings[i]) or b""
        except BaseException as exc:  # re-raised by the caller's thread
            errors.append(exc)

    threads = [threading.Thread(target=list_one, args=(i,)) for i in range(1, len(listings))]
    for thread in threads:
        thread.start()
    list_one(0)
    for thread in threads:
        thread.join()
    if errors:
        raise errors[0]
    return outs


def _list_git(root: Path, rules: IgnoreRules, tally: Tally) -> Iterator[str]:
    """git's view (tracked files, untracked ones under the standard excludes) plus `!`-re-included
    ignored paths; a tracked file is never hidden by `.gitignore` or a built-in default."""
    tracked, others, ignored = (_names(out, tally) for out in _side_by_side(root, _LISTINGS))
    rules.listed([*tracked, *others, *ignored])
    try:
        yield from (rel for rel in tracked if _admitted(rules, rel, tally, tracked=True))
        for rel in others:
            if not rel.endswith("/") and _admitted(rules, rel, tally):
                yield rel
    finally:
        rules.unlisted()  # (what follows walks inside ignored directories: probed)
    for rel in ignored:
        if rel.endswith("/") and rules.reincludes(rel, is_dir=True):
            yield from _walk(root, rules, rel.rstrip("/"), tally)
        elif rules.reincludes(rel):
            yield rel
        elif rel.split("/", 1)[0] != STATE_DIR:
            tally.ignored[GITIGNORE] += 1


def filter_paths(root: Path, rules: IgnoreRules, rels: Iterable[str]) -> list[str]:
    """The subset of given paths (e.g. from a git hook) that `list_files` would list."""
    confinement = Confinement(root)
    rels = list(rels)
    tracked = _tracked_among(root, rels)
    return sorted(
        {
            r
            for r in rels
            if rules.admits(r, tracked=r in tracked) and _is_listable_file(confinement, r)
        }
    )


def _tracked_among(root: Path, rels: list[str]) -> set[str]:
    """Which of `rels` git tracks (literal pathspecs for a short list, else the whole index)."""
    if not rels or not is_git_repo(root):
        return set()
    if len(rels) > 256:
        return set(rels) & set(_ls_files(root, Tally(), "--cached"))
    return set(_ls_files(root, Tally(), "--cached", "--", *(":(literal)" + rel for rel in rels)))


def _walk(root: Path, rules: IgnoreRules, start: str, tally: Tally) -> Iterator[str]:
    """Admitted files below `root/start`, from `walk_dirs`."""
    for rel_dir, filenames in walk_dirs(root, rules, start, tally):
        prefix = rel_dir + "/" if rel_dir else ""
        yield from (prefix + f for f in filenames if _admitted(rules, prefix + f, tally))


def walk_dirs(
    root: Path, rules: IgnoreRules, start: str = "", tally: Tally | None = None
) -> Iterator[tuple[str, list[str]]]:
    """Each admitted directory below `root/start` ("" is the root) with the names of the files in it
    (not yet checked against the rules), top down and iteratively (no recursion limit); a symlinked
    directory is never entered, nor zgrep's own state directory, nor a nested git repository (a
    workspace of its own); a name that is not UTF-8 is counted in `tally` and left out."""
    tally = tally if tally is not None else Tally()
    stack = [start]
    while stack:
        rel_dir = stack.pop()
        prefix = rel_dir + "/" if rel_dir else ""
        try:
            with os.scandir(os.path.join(root, rel_dir) if rel_dir else root) as entries:
                listing = [(e.name, e.is_dir(follow_symlinks=False)) for e in entries]
        except OSError:
            continue
        dirs, files = [], []
        for name, is_dir in listing:
            if not _decodable(name):
                tally.skipped["undecodable_name"] += 1
            elif is_dir:
                if (
                    prefix + name != STATE_DIR
                    and not os.path.lexists(os.path.join(root, prefix + name, ".git"))
                    and _admitted(rules, prefix + name, tally, is_dir=True)
                ):
                    dirs.append(prefix + name)
            else:
                files.append(name)
        yield rel_dir, files
        stack.extend(sorted(dirs, reverse=True))


def _decodable(name: str) -> bool:
    """Whether a name from the OS is valid UTF-8 (else it holds surrogate escapes)."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


class Confinement:
    """Keeps workspace-relative paths inside the workspace the way the listing does: no symlinked
    directory on the way (checked once per directory) and a file symlink resolving inside."""

    def __init__(self, root: Path) -> None:
        self.real_root = os.path.realpath(root)
        self._dirs: dict[str, bool] = {}

    def _plain_dir(self, rel_dir: str) -> bool:
        """Whether the directory `rel_dir` is reached without following a symlink: no directory on
        the way is one (each looked at once, from the nearest known ancestor down)."""
        plain = self._dirs.get(rel_dir)
        if plain is not None:
            return plain
        todo = [rel_dir]
        while (parent := todo[-1].rpartition("/")[0]) and parent not in self._dirs:
            todo.append(parent)
        plain = self._dirs.get(todo[-1].rpartition("/")[0], True)
        for here in reversed(todo):
            plain = plain and not os.path.islink(os.path.join(self.real_root, here))
            self._dirs[here] = plain
        return plain

    def resolve(self, rel: str) -> tuple[str, os.stat_result | None] | None:
        """`(real path, its stat or None when missing)` of `rel` when it stays inside the workspace,
        else None."""
        parts = rel.split("/")
        if (
            not rel
            or "" in parts
            or "." in parts
            or ".." in parts
            or not self._plain_dir(rel.rpartition("/")[0])
        ):
            return None
        path = os.path.join(self.real_root, rel)
        try:
            st = os.lstat(path)
        except OSError:
            return path, None
        if not stat.S_ISLNK(st.st_mode):
            return path, st
        target = os.path.realpath(path)
        if os.path.commonpath([self.real_root, target]) != self.real_root:
            return None
        try:
            return target, os.stat(target)
        except OSError:
            return target, None

    def path(self, rel: str) -> str | None:
        """The real path of `rel` when it stays inside the workspace, else None."""
        resolved = self.resolve(rel)
        return resolved[0] if resolved else None


def _is_listable_file(confinement: Confinement, rel: str) -> bool:
    """A regular file, or a symlink to a regular file, confined to the workspace (not
    dirs/submodules)."""
    resolved = confinement.resolve(rel)
    return resolved is not None and resolved[1] is not None and stat.S_ISREG(resolved[1].st_mode)


# --- reading ---------------------------------------------------------------------------


def stat_files(root: Path, rels: Iterable[str]) -> dict[str, tuple[int, int]]:
    """`{rel: (size, mtime_ns)}` for files that still exist inside the workspace: the cheap
    "did it change?" test (a path whose real path leaves the workspace is left out)."""
    confinement = Confinement(root)
    result = {}
    for rel in rels:
        resolved = confinement.resolve(rel)
        if resolved is not None and resolved[1] is not None:
            result[rel] = stat_signature(resolved[1])
    return result


def open_confined(
    root: Path, rel: str, confinement: Confinement | None = None
) -> tuple[int, os.stat_result] | Skip:
    """THE guarded open of workspace content (indexing, ADR files and anchors, `zg read`, MCP,
    HTTP): the real path inside the workspace and outside `.git/` and `.zgrep/`, opened non-blocking
    without following a last-moment symlink, and a regular file by `fstat`. The caller closes the
    descriptor. An index run passes one `confinement` for all its files (directories checked once
    per run, as its listing does)."""
    confinement = confinement or Confinement(root)
    target = confinement.path(rel)
    if target is None or _in_state_dir(os.path.relpath(target, confinement.real_root)):
        return Skip(rel, "outside_workspace")
    try:
        return open_regular(target, follow_symlinks=False)
    except FileNotFoundError:
        return Skip(rel, "vanished")
    except PermissionError:
        return Skip(rel, "unreadable")
    except OSError:
        # a FIFO or device, a symlink loop, or a link swapped in since
        return Skip(rel, "not_regular")


def _in_state_dir(rel: str) -> bool:
    """A path inside git's or zgrep's own directory, which no reader serves."""
    return any(part in (".git", STATE_DIR) for part in rel.split(os.sep))


def read_bytes(
    root: Path,
    rel: str,
    *,
    max_bytes: int,
    sniff: bool = False,
    confinement: Confinement | None = None,
) -> tuple[bytes, os.stat_result] | Skip:
    """The bytes of one confined regular file of at most `max_bytes` (`too_large` otherwise, before
    reading any); with `sniff`, a file whose first bytes look binary is `binary` without reading the
    rest."""
    opened = open_confined(root, rel, confinement)
    if isinstance(opened, Skip):
        return opened
    fd, st = opened
    try:
        if st.st_size > max_bytes:
            return Skip(rel, "too_large")
        data = read_at_most(fd, min(BINARY_SNIFF_BYTES, max_bytes + 1)) if sniff else b""
        if sniff and looks_binary(data):
            return Skip(rel, "binary")
        data += read_at_most(fd, max_bytes + 1 - len(data))
    except OSError:
        return Skip(rel, "unreadable")
    finally:
        os.close(fd)
    if len(data) > max_bytes:
        return Skip(rel, "too_large")  # grew since fstat
    return data, st


def read_file(
    root: Path, rel: str, *, max_bytes: int, confinement: Confinement | None = None
) -> LoadedFile | Skip:
    """Read and decode one file, or say why not; never raises for the SKIP_REASONS cases."""
    read = read_bytes(root, rel, max_bytes=max_bytes, sniff=True, confinement=confinement)
    if isinstance(read, Skip):
        return read
    data, st = read
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


def discover(root: Path, rules: IgnoreRules, max_bytes: int) -> Iterator[LoadedFile | Skip]:
    """Lazily list and read every file: one item at a time, so memory stays flat."""
    for rel in list_files(root, rules):
        yield read_file(root, rel, max_bytes=max_bytes)
