"""ripgrep-style file types (`-t/-T`) and ripgrep-style path globs (`-g/--iglob`).

The types are the language records' (`zgrep.languages`), following ripgrep's
`crates/ignore/src/default_types.rs` for the names they share (one deliberate difference: `py`
also covers `*.pyi`). Globs follow ripgrep's
override semantics: `!` negates, a glob without `/` matches the file name at any depth,
the last matching glob wins, and when any non-negated glob is given a path must match one.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from zgrep.languages.registry import TYPES
from zgrep.wildmatch import Pattern, Unusable, translate

# Documentation: prose about the code (search ranks it below code, ADR suggestions skip it).
PROSE_SUFFIXES = (".md", ".markdown", ".mdx", ".rst", ".txt", ".adoc")


def is_prose(path: str) -> bool:
    """Whether a file is documentation by its name (`CMakeLists.txt` is code)."""
    name = path.rsplit("/", 1)[-1].lower()
    return name.endswith(PROSE_SUFFIXES) and name != "cmakelists.txt"


# records, not behaviour: JSON and line-oriented data, fuzzers' token dictionaries
DATA_SUFFIXES = (".json", ".jsonl", ".ndjson", ".csv", ".tsv", ".dict")


def is_data(path: str) -> bool:
    """Whether a file holds data records by its name (JSON, CSV/TSV, a fuzzing dictionary)."""
    return path.lower().endswith(DATA_SUFFIXES)


_TEST_PATH = re.compile(
    r"(^|/)(tests?|__tests__|spec|specs|testing)(/|$)|(^|/)(test_[^/]*|[^/]*_test\.\w+|conftest\.py"
    r"|[^/]*\.(test|spec)\.\w+|[^/]*Tests?\.\w+)$"
)


def is_test(path: str) -> bool:
    """Whether a path is test code (tests/ folders, test_*.py, *_test.go, *.test.ts, FooTest.java,
    conftest.py)."""
    return bool(_TEST_PATH.search(path))


def type_globs(name: str) -> tuple[str, ...]:
    """The globs of type `name`; ValueError with the user-facing message when unknown."""
    try:
        return TYPES[name]
    except KeyError:
        raise ValueError(f"unknown file type '{name}'; see zg search --type-list") from None


def path_has_type(path: str, name: str) -> bool:
    """True when the file name of `path` matches one of the type's globs."""
    return any(_compile(g, False).matches(path, False) for g in type_globs(name))


def type_list() -> str:
    """`name: glob, glob` lines, sorted, as `rg --type-list` prints them."""
    return "\n".join(f"{name}: {', '.join(globs)}" for name, globs in sorted(TYPES.items()))


class TypeFilter:
    """`-t` (any of) and `-T` (none of) type names applied to a path."""

    def __init__(self, types: Iterable[str] = (), types_not: Iterable[str] = ()) -> None:
        self._want = [_compile(g, False) for t in types for g in type_globs(t)]
        self._avoid = [_compile(g, False) for t in types_not for g in type_globs(t)]

    def matches(self, path: str) -> bool:
        """True when `path` has a wanted type (if any were given) and no excluded one."""
        if self._want and not any(g.matches(path, False) for g in self._want):
            return False
        return not any(g.matches(path, False) for g in self._avoid)


class GlobFilter:
    """`-g` globs then `--iglob` globs (case-insensitive), ripgrep override semantics."""

    def __init__(self, globs: Sequence[str] = (), iglobs: Sequence[str] = ()) -> None:
        self._globs: list[Pattern] = [_compile(g, False) for g in globs] + [
            _compile(g, True) for g in iglobs
        ]
        self._whitelist = any(not g.negated for g in self._globs)

    def matches(self, path: str) -> bool:
        """True when the `/`-separated workspace-relative file `path` passes the globs."""
        parts = path.split("/")
        for i in range(1, len(parts)):
            if self._verdict("/".join(parts[:i]), True) is False:
                return False  # ripgrep never descends into a directory a `!glob` matches
        verdict = self._verdict(path, False)
        return not self._whitelist if verdict is None else verdict

    def _verdict(self, path: str, is_dir: bool) -> bool | None:
        """The last matching glob's say (False for a `!glob`), None when none matches."""
        for glob in reversed(self._globs):
            if glob.matches(path, is_dir):
                return not glob.negated
        return None


def _compile(glob: str, icase: bool) -> Pattern:
    """Parse a gitignore-style glob (`!`, leading/trailing `/`, `**`, `{a,b}`, `[..]`) with the one
    glob translator (`zgrep.wildmatch`); ValueError when it is malformed (an unclosed `[` or `{`, as
    ripgrep says)."""
    negated = glob.startswith("!")
    body = glob[1:] if negated else glob
    dir_only = body.endswith("/") and len(body) > 1
    body = body.rstrip("/") if dir_only else body
    basename = "/" not in body
    body = body.lstrip("/")
    try:
        regex = translate(body, ripgrep=True)
    except Unusable as exc:
        raise ValueError(f"bad glob {body!r}: {_RG_REASONS.get(exc.what, str(exc))}") from None
    return Pattern(re.compile(regex, re.IGNORECASE if icase else 0), negated, dir_only, basename)


_RG_REASONS = {"class": "unclosed character class '['", "group": "unclosed alternate group '{'"}
