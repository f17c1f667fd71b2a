"""Every git command zgrep runs: queries, changed paths, the `--name-status -z` parser, a blob
reader.

Standard library only and cheap to import: the git hooks load it on their fast path. Git runs
without the repository-local variables a hook inherits (`git rev-parse --local-env-vars`), so a
command looks at the repository of the directory it names; `own_index=True` keeps GIT_INDEX_FILE,
which a staged check needs under `git commit -a` / `git commit PATH` (a temporary index)."""

from __future__ import annotations

import functools
import os
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
NULL_SHA = "0" * 40
TIMEOUT_S = 60
INDEX_VAR = "GIT_INDEX_FILE"
# Variables git documents as settings of the user or transport, never of a repository.
_NOT_LOCAL = (
    "GIT_SSL_",
    "GIT_SSH",
    "GIT_HTTP_",
    "GIT_PROXY_",
    "GIT_ASKPASS",
    "GIT_TERMINAL_PROMPT",
    "GIT_AUTHOR_",
    "GIT_COMMITTER_",
    "GIT_EDITOR",
    "GIT_PAGER",
    "GIT_TRACE",
    "GIT_CURL_",
)


class GitError(RuntimeError):
    """git failed or is missing; the message is git's last line of complaint."""


@functools.cache
def local_env_vars() -> frozenset[str]:
    """The variables that point git at a repository (GIT_DIR, GIT_INDEX_FILE, ...), as git lists
    them."""
    try:
        proc = subprocess.run(
            ["git", "rev-parse", "--local-env-vars"],
            capture_output=True,
            check=False,
            timeout=TIMEOUT_S,
        )
    except (OSError, subprocess.TimeoutExpired):
        return frozenset()
    return frozenset(proc.stdout.decode().split())


def environment(own_index: bool = False) -> dict[str, str]:
    """os.environ without git's repository-local variables (GIT_INDEX_FILE kept, absolute, if
    `own_index`)."""
    if not any(name.startswith("GIT_") and not name.startswith(_NOT_LOCAL) for name in os.environ):
        return dict(os.environ)  # nothing to remove: spare the `--local-env-vars` call
    drop = local_env_vars() - ({INDEX_VAR} if own_index else set())
    env = {k: v for k, v in os.environ.items() if k not in drop}
    if INDEX_VAR in env and INDEX_VAR not in drop:
        # `git -C` would read a relative one from elsewhere
        env[INDEX_VAR] = os.path.abspath(env[INDEX_VAR])
    return env


def run(cwd: Path, *args: str, stdin: bytes | None = None, own_index: bool = False) -> bytes:
    """stdout of `git -C cwd ARGS`; GitError when git fails or is missing."""
    try:
        proc = subprocess.run(
            ["git", "-C", str(cwd), *args],
            input=stdin,
            capture_output=True,
            env=environment(own_index),
            check=False,
            timeout=TIMEOUT_S,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise GitError(f"git {args[0] if args else ''} did not run: {exc}") from None
    if proc.returncode != 0:
        lines = proc.stderr.decode("utf-8", "replace").strip().splitlines()
        raise GitError(lines[-1] if lines else f"git {args[0] if args else ''} failed")
    return proc.stdout


def try_run(cwd: Path, *args: str, own_index: bool = False) -> bytes | None:
    """stdout of `git -C cwd ARGS`, or None when git fails or is missing."""
    try:
        return run(cwd, *args, own_index=own_index)
    except GitError:
        return None


def split_names(out: bytes | None) -> list[str]:
    """The names of NUL-separated git output (`-z`), undecodable bytes kept as surrogates."""
    return [name for name in (out or b"").decode("utf-8", "surrogateescape").split("\0") if name]


def git_toplevel(path: str | Path) -> Path | None:
    """The work tree top level containing `path`, or None outside git (or without git)."""
    out = try_run(Path(path), "rev-parse", "--show-toplevel")
    return Path(os.fsdecode(out.rstrip(b"\n"))) if out else None


def is_git_repo(root: Path) -> bool:
    """True when `root` is inside a git work tree."""
    return try_run(Path(root), "rev-parse", "--is-inside-work-tree") == b"true\n"


def head_commit(root: Path) -> str | None:
    """The commit HEAD points at, or None outside git / before the first commit."""
    out = try_run(Path(root), "rev-parse", "-q", "--verify", "HEAD")
    return (out.decode().strip() or None) if out else None


# --- changes: one `--name-status -z` parser ------------------------------------------------


@dataclass(frozen=True)
class Change:
    """One `--name-status` entry: status letter(s), the path, and the source path of a rename/copy."""

    status: str
    path: str
    old: str | None = None

    @property
    def is_rename(self) -> bool:
        """A rename (not a copy): `old` moved to `path`."""
        return self.status.startswith("R")

    @property
    def paths(self) -> tuple[str, ...]:
        """Every path the entry touches (both sides of a rename or copy)."""
        return (self.old, self.path) if self.old is not None else (self.path,)


def parse_name_status(out: bytes) -> list[Change]:
    """Entries of `--name-status -z` output, in order (blank separators between commits skipped)."""
    fields = out.decode("utf-8", "surrogateescape").split("\0")
    changes: list[Change] = []
    i = 0
    while i < len(fields):
        status = fields[i]
        if not status:
            i += 1
        elif status[:1] in ("R", "C"):
            changes.append(Change(status, fields[i + 2], fields[i + 1]))
            i += 3
        else:
            changes.append(Change(status, fields[i + 1]))
            i += 2
    return changes


def changes(
    cwd: Path, command: str, *args: str, stdin: bytes | None = None, own_index: bool = False
) -> list[Change]:
    """The entries of `git COMMAND --name-status -z ARGS` (diff, diff-tree, log)."""
    return parse_name_status(
        run(cwd, command, "--name-status", "-z", *args, stdin=stdin, own_index=own_index)
    )


def touched(entries: list[Change]) -> list[str]:
    """Every path the entries name (both sides of renames), sorted, once each."""
    return sorted({path for entry in entries for path in entry.paths})


def changed_paths(root: Path, old: str | None, new: str = "HEAD") -> list[str]:
    """Every path touched between `old` and `new` (both sides of renames); old=None: all of `new`."""
    base = old if old and old != NULL_SHA else EMPTY_TREE
    return touched(changes(root, "diff", "-M", base, new, "--"))


def commit_paths(root: Path, rev: str = "HEAD") -> list[str]:
    """Paths commit `rev` changed against its first parent (a root commit: all its files)."""
    return touched(
        changes(
            root, "diff-tree", "-r", "-M", "--root", "-m", "--first-parent", "--no-commit-id", rev
        )
    )


def pair_paths(root: Path, pairs: list[tuple[str, str]]) -> list[str]:
    """Paths that differ between each (old, new) commit pair, in one git call (post-rewrite)."""
    if not pairs:
        return []
    lines = "".join(f"{new} {old}\n" for old, new in pairs).encode()
    return touched(changes(root, "diff-tree", "--stdin", "-r", "-M", "--no-commit-id", stdin=lines))


def range_paths(root: Path, spec: str) -> list[str]:
    """Paths changed by a revision range as git spells it: `A..B`, `A...B` (since the merge
    base), `A..` / `A` (to HEAD)."""
    if "..." in spec:
        left, _, right = spec.partition("...")
        return touched(changes(root, "diff", "-M", f"{left or 'HEAD'}...{right or 'HEAD'}", "--"))
    old, _, new = spec.partition("..")
    return changed_paths(root, old or None, new or "HEAD")


# --- blobs: one `cat-file --batch` reader --------------------------------------------------

_HUNK = re.compile(rb"^@@ -\d+(?:,\d+)? \+(\d+)(?:,(\d+))? @@")
_ESCAPE = re.compile(rb"\\([0-7]{3}|.)")
_ESCAPED = {
    b"a": b"\a",
    b"b": b"\b",
    b"t": b"\t",
    b"n": b"\n",
    b"v": b"\v",
    b"f": b"\f",
    b"r": b"\r",
}


@dataclass
class StagedFile:
    """One file of the staged diff: its old and new paths (None for a side that does not exist), the
    new side's hunks as (start, count), and the added lines as (line number, text)."""

    old: str | None
    path: str | None
    hunks: list[tuple[int, int]]
    added: list[tuple[int, str]]


def staged_diff(root: Path) -> list[StagedFile]:
    """The staged change (`git diff --cached -U0`, no renames), file by file; GitError when git
    fails."""
    out = run(
        root,
        "diff",
        "--cached",
        "-U0",
        "--no-color",
        "--no-ext-diff",
        "--no-renames",
        "--src-prefix=a/",
        "--dst-prefix=b/",
        own_index=True,
    )
    files: list[StagedFile] = []
    for block in re.split(rb"^diff --git ", out, flags=re.MULTILINE)[1:]:
        head, _, body = block.partition(b"\n@@")
        minus = re.search(rb"^--- (.*)$", head, re.MULTILINE)
        plus = re.search(rb"^\+\+\+ (.*)$", head, re.MULTILINE)
        if minus is None or plus is None:
            continue
        staged = StagedFile(
            diff_path(minus.group(1), b"a/"), diff_path(plus.group(1), b"b/"), [], []
        )
        line = 0
        for raw in (b"@@" + body).splitlines() if body else []:
            if (hunk := _HUNK.match(raw)) is not None:
                line = int(hunk.group(1))
                staged.hunks.append((line, int(hunk.group(2) or b"1")))
            elif raw.startswith(b"+"):  # in a hunk, `+++ x` is the added line `++ x`
                staged.added.append((line, raw[1:].decode("utf-8", "replace")))
                line += 1
        files.append(staged)
    return files


def diff_path(raw: bytes, prefix: bytes) -> str | None:
    """The path of a `---`/`+++` line (None for /dev/null): git C-quotes a name with unusual bytes
    (`"b/caf\\303\\251.py"`) and ends a name holding a space with a tab."""
    raw = raw.removesuffix(b"\t")
    if raw == b"/dev/null":
        return None
    if raw.startswith(b'"') and raw.endswith(b'"') and len(raw) > 1:
        raw = _ESCAPE.sub(lambda m: _unescape(m.group(1)), raw[1:-1])
    return raw.removeprefix(prefix).decode(errors="replace")


def _unescape(code: bytes) -> bytes:
    if len(code) == 3:
        return bytes([int(code, 8) & 0xFF])
    return _ESCAPED.get(code, code)


class BlobReader:
    """Reads objects through one long-lived `git cat-file --batch`; `close` stops it."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._proc: subprocess.Popen[bytes] | None = None

    def read(self, sha: str) -> bytes:
        """The content of object `sha`; GitError when git cannot read it."""
        if self._proc is None:
            self._proc = subprocess.Popen(
                ["git", "-C", str(self.root), "cat-file", "--batch"],
                env=environment(),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
            )
        assert self._proc.stdin and self._proc.stdout
        self._proc.stdin.write(sha.encode() + b"\n")
        self._proc.stdin.flush()
        header = self._proc.stdout.readline().split()
        if len(header) < 3:
            raise GitError(f"git cat-file: cannot read {sha}")
        return self._proc.stdout.read(int(header[2]) + 1)[:-1]

    def close(self) -> None:
        """Stop the cat-file process (idempotent)."""
        if self._proc is not None:
            assert self._proc.stdin
            self._proc.stdin.close()
            self._proc.wait()
            self._proc = None
