"""The three ignore layers (built-in defaults, workspace ignore files, user-global file).

Precedence, highest first (as ripgrep): `.zgignore` > `.ignore` > `.gitignore` > the
user-global file > built-in defaults. Within one kind of file the deepest directory wins.
A `!pattern` in a higher layer re-includes what a lower one ignored; nothing can re-include
a path whose parent directory is ignored (git's rule). Hidden paths are skipped unless
`include_hidden` or an explicit `!` re-include names them.

A file git tracks is never hidden by `.gitignore` (git's rule) nor by a built-in default (only
zgrep's and git's own state directories and binary file names stay out). For a remote embedding
provider (`strict`), a `!` cannot re-include what `.gitignore` ignores, and well-known secret files
stay out unless the user's own config names them. Patterns follow git's wildmatch
(`index.wildmatch`); a line git cannot use is skipped and kept in `bad_lines` for one warning.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from pathlib import Path

from zgrep.fsutil import read_regular
from zgrep.wildmatch import BadLine, Pattern, parse_lines

IGNORE_FILE_NAMES = (".zgignore", ".ignore", ".gitignore")
"""Workspace ignore files, highest precedence first; they are never indexed themselves."""

IGNORE_FILE_MAX_BYTES = 1024 * 1024
GITIGNORE = ".gitignore"
GLOBAL_LAYER = "global"
DEFAULTS_LAYER = "defaults"
HIDDEN_LAYER = "hidden"
SECRETS_LAYER = "secrets"
_REINCLUDING_LAYERS = frozenset({".zgignore", ".ignore", GLOBAL_LAYER})

_STATE_DIRS = (".git", ".zgrep", ".hg", ".svn")
_DEFAULT_DIRS = (
    "node_modules/",
    "dist/",
    "build/",
    "target/",
    ".venv/",
    "venv/",
    "__pycache__/",
    ".mypy_cache/",
    ".pytest_cache/",
    ".ruff_cache/",
    ".tox/",
    ".nox/",
    "*.egg-info/",
)
_DEFAULT_FILES = (
    "*.pyc",
    "*.pyo",
    "*.min.js",
    "*.min.css",
    "*.map",
    "package-lock.json",
    "yarn.lock",
    "pnpm-lock.yaml",
    "Cargo.lock",
    "poetry.lock",
    "uv.lock",
    "Gemfile.lock",
    "composer.lock",
    "go.sum",
    "Pipfile.lock",
    "bun.lockb",
)
SECRET_PATTERNS = (".env*", "*.pem", "id_rsa*", ".npmrc", "credentials*")
"""File names (any case) never sent to a remote embedding provider unless the user's own config names them."""
_BINARY_EXTENSIONS = frozenset(
    {
        # images
        "png",
        "jpg",
        "jpeg",
        "gif",
        "bmp",
        "ico",
        "icns",
        "webp",
        "tif",
        "tiff",
        "psd",
        "heic",
        "avif",
        "svg",
        # archives and compressed data
        "zip",
        "tar",
        "gz",
        "tgz",
        "bz2",
        "xz",
        "7z",
        "rar",
        "zst",
        "lz4",
        "jar",
        "war",
        "whl",
        "egg",
        # compiled objects and executables
        "so",
        "dll",
        "dylib",
        "exe",
        "o",
        "a",
        "obj",
        "lib",
        "class",
        "pyd",
        "wasm",
        "bin",
        # fonts
        "ttf",
        "otf",
        "woff",
        "woff2",
        "eot",
        # audio and video
        "mp3",
        "mp4",
        "m4a",
        "wav",
        "ogg",
        "flac",
        "avi",
        "mov",
        "mkv",
        "webm",
        # office documents and pdf
        "pdf",
        "doc",
        "docx",
        "xls",
        "xlsx",
        "ppt",
        "pptx",
        "odt",
        "ods",
        "odp",
        # databases
        "db",
        "sqlite",
        "sqlite3",
    }
)


DEFAULT_PATTERNS: tuple[str, ...] = _STATE_DIRS + _DEFAULT_DIRS + _DEFAULT_FILES
"""Default gitignore patterns; binary extensions are a set lookup (any case), not patterns."""


def global_ignore_path() -> Path:
    """`$XDG_CONFIG_HOME/zgrep/ignore`, or `~/.config/zgrep/ignore` (relative XDG ignored)."""
    xdg = os.environ.get("XDG_CONFIG_HOME", "")
    base = Path(xdg) if xdg and os.path.isabs(xdg) else Path.home() / ".config"
    return base / "zgrep" / "ignore"


class PatternList:
    """One ignore file's usable lines; the last line that matches decides (git's rule)."""

    def __init__(self, patterns: Iterable[Pattern]) -> None:
        self._last_first = list(patterns)[::-1]

    def check(self, rel: str, is_dir: bool) -> bool | None:
        """True ignored, False re-included by `!`, None no line matched."""
        for pattern in self._last_first:
            if pattern.matches(rel, is_dir):
                return not pattern.negated
        return None


def _names_regex(patterns: Iterable[str]) -> re.Pattern[str]:
    """One regex over a basename for ignore-only, slash-free default patterns (`dir/` ones
    included)."""
    parsed, bad = parse_lines([p.rstrip("/") for p in patterns], "defaults")
    assert not bad and all(p.basename and not p.negated for p in parsed), "defaults are plain names"
    return re.compile("|".join(f"(?:{p.regex.pattern})" for p in parsed), re.DOTALL)


_STATE_REGEX = _names_regex(_STATE_DIRS)
_DEFAULT_DIRS_REGEX = _names_regex(_DEFAULT_DIRS)
_DEFAULT_FILES_REGEX = _names_regex(_DEFAULT_FILES)
_SECRETS_REGEX = _names_regex(SECRET_PATTERNS)


def load_patterns(path: str | Path, label: str, bad_lines: list[BadLine]) -> PatternList | None:
    """Parse one ignore file (lines split at `\\n` only, as git does); a missing or unreadable file is no
    rules at all. Lines git cannot use go to `bad_lines`, named `label:line`."""
    try:
        text = read_regular(path, IGNORE_FILE_MAX_BYTES).decode("utf-8", errors="replace")
    except OSError:  # missing, a FIFO or device, or too large: no rules
        return None
    patterns, bad = parse_lines(text.split("\n"), label)
    bad_lines.extend(bad)
    return PatternList(patterns)


_Layer = tuple[str, str, PatternList]
"""(ignore file name, directory it sits in, its patterns)."""


class IgnoreRules:
    """Decides whether a workspace-relative path is admitted; loads per-directory files lazily."""

    def __init__(
        self,
        root: Path,
        global_spec: PatternList | None,
        include_hidden: bool,
        *,
        strict: bool = False,
        allowed_secrets: PatternList | None = None,
        bad_lines: list[BadLine] | None = None,
    ) -> None:
        self.root = root
        self._root_text = str(root).rstrip("/")
        self.include_hidden = include_hidden
        self.strict = strict
        self.bad_lines: list[BadLine] = bad_lines if bad_lines is not None else []
        self._global = global_spec
        self._allowed_secrets = allowed_secrets
        self._chains: dict[str, tuple[_Layer, ...]] = {}
        # (directories git's listing covers, the ignore files it lists there): see `listed`
        self._listing: tuple[set[str], set[str]] | None = None
        self._dir_verdicts: dict[tuple[str, bool], str | None] = {}

    @classmethod
    def for_root(
        cls,
        root: Path,
        *,
        global_ignore_file: Path | None = None,
        include_hidden: bool = False,
        strict: bool = False,
        allowed_secrets: Iterable[str] = (),
    ) -> IgnoreRules:
        """Rules for the workspace at `root`; `global_ignore_file` defaults to the XDG one.
        `strict`: the files may leave the machine (see the module's docstring); `allowed_secrets`
        are the user's own patterns of secret-looking files that may."""
        global_file = global_ignore_file if global_ignore_file is not None else global_ignore_path()
        bad: list[BadLine] = []
        global_spec = load_patterns(global_file, str(global_file), bad)
        allowed, bad_allowed = parse_lines(list(allowed_secrets), "embedding.allow_secret_files")
        bad.extend(bad_allowed)
        return cls(
            Path(root),
            global_spec,
            include_hidden,
            strict=strict,
            allowed_secrets=PatternList(allowed),
            bad_lines=bad,
        )

    def listed(self, paths: Iterable[str]) -> None:
        """What git's listings of the tree hold (`ls-files` tracked, untracked and ignored names, an
        ignored directory as `dir/`): in a directory they cover, an ignore file exists only when they
        name it (git lists every file of a directory it walks), so it is not probed for (Django:
        3,209 directories, three failed opens each). `unlisted()` ends it."""
        dirs: set[str] = {""}
        present: set[str] = set()
        for rel in paths:
            parent, _, name = rel.rstrip("/").rpartition("/")
            if name in IGNORE_FILE_NAMES and not rel.endswith("/"):
                present.add(rel)
            while parent not in dirs:  # an ignored `dir/` covers its parent, not itself
                dirs.add(parent)
                parent = parent.rpartition("/")[0]
        self._listing = (dirs, present)

    def unlisted(self) -> None:
        """Probe for ignore files again (the listing may be out of date)."""
        self._listing = None

    def admits(self, rel_path: str, is_dir: bool = False, tracked: bool = False) -> bool:
        """True when `rel_path` (`/`-separated, relative to the root) should be indexed; `tracked`:
        git tracks it."""
        return self.excluded_by(rel_path, is_dir, tracked) is None

    def excluded_by(self, rel_path: str, is_dir: bool = False, tracked: bool = False) -> str | None:
        """The layer that keeps `rel_path` out (an ignore file's name, "global", "defaults",
        "hidden", "secrets"), or None when it is admitted."""
        rel = rel_path.strip("/")
        if not rel:
            return None
        parent, _, name = rel.rpartition("/")
        if not is_dir and name in IGNORE_FILE_NAMES:
            return DEFAULTS_LAYER
        if parent:
            layer = self._dir_excluded_by(parent, tracked)
            if layer is not None:
                return layer
        return self._entry_excluded_by(rel, is_dir, tracked)

    def reincludes(self, rel_path: str, is_dir: bool = False) -> bool:
        """True when a `!` in `.zgignore`, `.ignore` or the global file admits this git-ignored path
        (never when `strict`: what git ignores does not leave the machine)."""
        if self.strict:
            return False
        ignored, layer = self._decide(rel_path.strip("/"), is_dir, False)
        return ignored is False and layer in _REINCLUDING_LAYERS and self.admits(rel_path, is_dir)

    def _dir_excluded_by(self, rel_dir: str, tracked: bool) -> str | None:
        """Cached: the layer that keeps the directory or one of its ancestors out (walked down from
        the top, iteratively: no recursion limit on deep trees)."""
        key = (rel_dir, tracked)
        if key in self._dir_verdicts:
            return self._dir_verdicts[key]
        parts = rel_dir.split("/")
        verdict: str | None = None
        for depth in range(1, len(parts) + 1):
            here = "/".join(parts[:depth])
            cached = self._dir_verdicts.get((here, tracked), "?")
            if cached == "?":
                cached = (
                    verdict if verdict is not None else self._entry_excluded_by(here, True, tracked)
                )
                self._dir_verdicts[(here, tracked)] = cached
            verdict = cached
        return verdict

    def _entry_excluded_by(self, rel: str, is_dir: bool, tracked: bool) -> str | None:
        """Verdict for one path given that its parent directory is admitted."""
        name = rel.rpartition("/")[2]
        if _STATE_REGEX.fullmatch(name):
            return DEFAULTS_LAYER
        if (
            self.strict
            and not is_dir
            and _SECRETS_REGEX.fullmatch(name.lower())
            and not (self._allowed_secrets is not None and self._allowed_secrets.check(rel, False))
        ):
            return SECRETS_LAYER
        ignored, layer = self._decide(rel, is_dir, tracked)
        if ignored is not None:
            return layer if ignored else None
        if self.include_hidden or not name.startswith("."):
            return None
        return HIDDEN_LAYER

    def _decide(self, rel: str, is_dir: bool, tracked: bool) -> tuple[bool | None, str]:
        """(ignored?, deciding layer) from the first layer with a matching pattern."""
        git_ignored: bool | None = None
        for kind, base, spec in self._chain(rel.rpartition("/")[0]):
            if tracked and kind == GITIGNORE:
                continue
            ignored = spec.check(rel[len(base) + 1 :] if base else rel, is_dir)
            if ignored is None:
                continue
            if kind == GITIGNORE or not self.strict or ignored:
                return ignored, kind
            git_ignored = (
                git_ignored if git_ignored is not None else self._git_ignored(rel, is_dir, tracked)
            )
            return (True, GITIGNORE) if git_ignored else (False, kind)
        if self._global is not None:
            ignored = self._global.check(rel, is_dir)
            if ignored is not None:
                return ignored, GLOBAL_LAYER
        name = rel.rpartition("/")[2]
        if not tracked and (
            _DEFAULT_DIRS_REGEX.fullmatch(name) if is_dir else _DEFAULT_FILES_REGEX.fullmatch(name)
        ):
            return True, DEFAULTS_LAYER
        if not is_dir and _has_binary_extension(name):
            return True, DEFAULTS_LAYER
        return None, ""

    def _git_ignored(self, rel: str, is_dir: bool, tracked: bool) -> bool:
        """Whether the `.gitignore` files alone ignore `rel` (a strict re-include cannot override
        them)."""
        if tracked:
            return False
        for kind, base, spec in self._chain(rel.rpartition("/")[0]):
            if kind == GITIGNORE:
                ignored = spec.check(rel[len(base) + 1 :] if base else rel, is_dir)
                if ignored is not None:
                    return ignored
        return False

    def _chain(self, rel_dir: str) -> tuple[_Layer, ...]:
        """Workspace ignore files governing entries of `rel_dir`, highest precedence first (built
        from the top down, iteratively)."""
        chain = self._chains.get(rel_dir)
        if chain is not None:
            return chain
        parts = rel_dir.split("/") if rel_dir else []
        inherited: tuple[_Layer, ...] = ()
        for depth in range(len(parts) + 1):
            here = "/".join(parts[:depth])
            chain = self._chains.get(here)
            if chain is None:
                # string paths: a pathlib join per probe cost more than the failed open (Django's
                # 3,209 directories: 0.17 s against 0.04 s)
                where = f"{self._root_text}/{here}/" if here else f"{self._root_text}/"
                listing = self._listing if self._listing and here in self._listing[0] else None
                own = {
                    kind: load_patterns(where + kind, label, self.bad_lines)
                    for kind in IGNORE_FILE_NAMES
                    for label in [f"{here}/{kind}" if here else kind]
                    if listing is None or label in listing[1]
                }
                chain = tuple(
                    layer
                    for kind in IGNORE_FILE_NAMES
                    for layer in [
                        (kind, here, spec) for spec in (own.get(kind),) if spec is not None
                    ]
                    + [entry for entry in inherited if entry[0] == kind]
                )
                self._chains[here] = chain
            inherited = chain
        return inherited


def _has_binary_extension(name: str) -> bool:
    """`logo.PNG`, `lib.so`: a file name whose extension (any case) is a default skip."""
    stem, dot, ext = name.rpartition(".")
    return bool(dot and stem) and ext.lower() in _BINARY_EXTENSIONS
