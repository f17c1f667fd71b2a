"""The three ignore layers (built-in defaults, workspace ignore files, user-global file).

Precedence, highest first (as ripgrep): `.zgignore` > `.ignore` > `.gitignore` > the
user-global file > built-in defaults. Within one kind of file the deepest directory wins.
A `!pattern` in a higher layer re-includes what a lower one ignored; nothing can re-include
a path whose parent directory is ignored (git's rule). Hidden paths are skipped unless
`include_hidden` or an explicit `!` re-include names them.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pathspec

IGNORE_FILE_NAMES = (".zgignore", ".ignore", ".gitignore")
"""Workspace ignore files, highest precedence first; they are never indexed themselves."""

_GLOBAL_LAYER = "global"
_DEFAULTS_LAYER = "defaults"
_REINCLUDING_LAYERS = frozenset({".zgignore", ".ignore", _GLOBAL_LAYER})

_DEFAULT_DIRS = (
    ".git", ".zgrep", ".hg", ".svn", "node_modules/", "dist/", "build/", "target/",
    ".venv/", "venv/", "__pycache__/", ".mypy_cache/", ".pytest_cache/", ".ruff_cache/",
    ".tox/", ".nox/", "*.egg-info/",
)
_DEFAULT_FILES = (
    "*.pyc", "*.pyo", "*.min.js", "*.min.css", "*.map",
    "package-lock.json", "yarn.lock", "pnpm-lock.yaml", "Cargo.lock", "poetry.lock",
    "uv.lock", "Gemfile.lock", "composer.lock", "go.sum", "Pipfile.lock", "bun.lockb",
)
_BINARY_EXTENSIONS = frozenset({
    # images
    "png", "jpg", "jpeg", "gif", "bmp", "ico", "icns", "webp", "tif", "tiff", "psd", "heic",
    "avif", "svg",
    # archives and compressed data
    "zip", "tar", "gz", "tgz", "bz2", "xz", "7z", "rar", "zst", "lz4", "jar", "war", "whl",
    "egg",
    # compiled objects and executables
    "so", "dll", "dylib", "exe", "o", "a", "obj", "lib", "class", "pyd", "wasm", "bin",
    # fonts
    "ttf", "otf", "woff", "woff2", "eot",
    # audio and video
    "mp3", "mp4", "m4a", "wav", "ogg", "flac", "avi", "mov", "mkv", "webm",
    # office documents and pdf
    "pdf", "doc", "docx", "xls", "xlsx", "ppt", "pptx", "odt", "ods", "odp",
    # databases
    "db", "sqlite", "sqlite3",
})


DEFAULT_PATTERNS: tuple[str, ...] = _DEFAULT_DIRS + _DEFAULT_FILES
"""Default gitignore patterns; binary extensions are a set lookup (any case), not patterns."""


def global_ignore_path() -> Path:
    """`$XDG_CONFIG_HOME/zgrep/ignore`, or `~/.config/zgrep/ignore` (relative XDG ignored)."""
    xdg = os.environ.get("XDG_CONFIG_HOME", "")
    base = Path(xdg) if xdg and os.path.isabs(xdg) else Path.home() / ".config"
    return base / "zgrep" / "ignore"


_Layer = tuple[str, str, pathspec.GitIgnoreSpec]
"""(ignore file name, directory it sits in, its patterns)."""


def _combined_regex(patterns: tuple[str, ...]) -> re.Pattern[str]:
    """One regex for ignore-only gitignore patterns, from pathspec's own translations."""
    spec = pathspec.GitIgnoreSpec.from_lines(patterns)
    assert all(p.include for p in spec.patterns), "defaults cannot hold `!` patterns"
    parts = (re.sub(r"\(\?P<\w+>", "(?:", p.regex.pattern) for p in spec.patterns if p.regex is not None)
    return re.compile("|".join(f"(?:{part})" for part in parts))


_DEFAULTS_REGEX = _combined_regex(DEFAULT_PATTERNS)


def _load_spec(path: Path) -> pathspec.GitIgnoreSpec | None:
    """Parse one ignore file; a missing or unreadable file is no rules at all."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    return pathspec.GitIgnoreSpec.from_lines(text.splitlines())


class IgnoreRules:
    """Decides whether a workspace-relative path is admitted; loads per-directory files lazily."""

    def __init__(self, root: Path, global_spec: pathspec.GitIgnoreSpec | None,
                 include_hidden: bool) -> None:
        self.root = root
        self.include_hidden = include_hidden
        self._global = global_spec
        self._chains: dict[str, tuple[_Layer, ...]] = {}
        self._dir_verdicts: dict[str, bool] = {}

    @classmethod
    def for_root(cls, root: Path, *, global_ignore_file: Path | None = None,
                 include_hidden: bool = False) -> IgnoreRules:
        """Rules for the workspace at `root`; `global_ignore_file` defaults to the XDG one."""
        global_file = global_ignore_file if global_ignore_file is not None else global_ignore_path()
        return cls(Path(root), _load_spec(global_file), include_hidden)

    def admits(self, rel_path: str, is_dir: bool = False) -> bool:
        """True when `rel_path` (`/`-separated, relative to the root) should be indexed."""
        rel = rel_path.strip("/")
        if not rel:
            return True
        parent, _, name = rel.rpartition("/")
        if not is_dir and name in IGNORE_FILE_NAMES:
            return False
        if parent and not self._dir_admitted(parent):
            return False
        return self._admits_entry(rel, is_dir)

    def reincludes(self, rel_path: str, is_dir: bool = False) -> bool:
        """True when a `!` in `.zgignore`, `.ignore` or the global file admits this very path."""
        ignored, layer = self._decide(rel_path.strip("/"), is_dir)
        return ignored is False and layer in _REINCLUDING_LAYERS and self.admits(rel_path, is_dir)

    def _dir_admitted(self, rel_dir: str) -> bool:
        """Cached: the directory and all of its ancestors are admitted."""
        verdict = self._dir_verdicts.get(rel_dir)
        if verdict is None:
            parent = rel_dir.rpartition("/")[0]
            parent_ok = not parent or self._dir_admitted(parent)
            verdict = parent_ok and self._admits_entry(rel_dir, True)
            self._dir_verdicts[rel_dir] = verdict
        return verdict

    def _admits_entry(self, rel: str, is_dir: bool) -> bool:
        """Verdict for one path given that its parent directory is admitted."""
        ignored, _ = self._decide(rel, is_dir)
        if ignored is not None:
            return not ignored
        return self.include_hidden or not rel.rpartition("/")[2].startswith(".")

    def _decide(self, rel: str, is_dir: bool) -> tuple[bool | None, str]:
        """(ignored?, deciding layer) from the first layer with a matching pattern."""
        for kind, base, spec in self._chain(rel.rpartition("/")[0]):
            ignored = _check(spec, rel[len(base) + 1:] if base else rel, is_dir)
            if ignored is not None:
                return ignored, kind
        if self._global is not None:
            ignored = _check(self._global, rel, is_dir)
            if ignored is not None:
                return ignored, _GLOBAL_LAYER
        if _DEFAULTS_REGEX.search(rel + "/" if is_dir else rel) or (
                not is_dir and _has_binary_extension(rel.rpartition("/")[2])):
            return True, _DEFAULTS_LAYER
        return None, ""

    def _chain(self, rel_dir: str) -> tuple[_Layer, ...]:
        """Workspace ignore files governing entries of `rel_dir`, highest precedence first."""
        chain = self._chains.get(rel_dir)
        if chain is None:
            inherited = self._chain(rel_dir.rpartition("/")[0]) if rel_dir else ()
            own = {kind: _load_spec(self.root / rel_dir / kind) for kind in IGNORE_FILE_NAMES}
            chain = tuple(
                layer for kind in IGNORE_FILE_NAMES
                for layer in [(kind, rel_dir, spec) for spec in (own[kind],) if spec is not None]
                + [entry for entry in inherited if entry[0] == kind]
            )
            self._chains[rel_dir] = chain
        return chain


def _check(spec: pathspec.GitIgnoreSpec, rel: str, is_dir: bool) -> bool | None:
    """True ignored, False re-included by `!`, None no pattern matched."""
    return spec.check_file(rel + "/" if is_dir else rel).include


def _has_binary_extension(name: str) -> bool:
    """`logo.PNG`, `lib.so`: a file name whose extension (any case) is a default skip."""
    stem, dot, ext = name.rpartition(".")
    return bool(dot and stem) and ext.lower() in _BINARY_EXTENSIONS
