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
from dataclasses import dataclass

from zgrep.languages.registry import TYPES

# Documentation: prose about the code (search ranks it below code, ADR suggestions skip it).
PROSE_SUFFIXES = (".md", ".markdown", ".mdx", ".rst", ".txt", ".adoc")


def is_prose(path: str) -> bool:
    """Whether a file is documentation by its name (`CMakeLists.txt` is code)."""
    name = path.rsplit("/", 1)[-1].lower()
    return name.endswith(PROSE_SUFFIXES) and name != "cmakelists.txt"


_TEST_PATH = re.compile(r"(^|/)(tests?|__tests__|spec|specs|testing)(/|$)|(^|/)(test_[^/]*|[^/]*_test\.\w+|conftest\.py"
                        r"|[^/]*\.(test|spec)\.\w+|[^/]*Tests?\.\w+)$")


def is_test(path: str) -> bool:
    """Whether a path is test code (tests/ folders, test_*.py, *_test.go, *.test.ts, FooTest.java, conftest.py)."""
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


@dataclass(frozen=True)
class _Glob:
    regex: re.Pattern[str]
    negated: bool
    dir_only: bool
    basename: bool

    def matches(self, path: str, is_dir: bool) -> bool:
        """Whether this glob applies to `path` (a file, or a directory when `is_dir`)."""
        if self.dir_only and not is_dir:
            return False
        subject = path.rpartition("/")[2] if self.basename else path
        return self.regex.fullmatch(subject) is not None


class GlobFilter:
    """`-g` globs then `--iglob` globs (case-insensitive), ripgrep override semantics."""

    def __init__(self, globs: Sequence[str] = (), iglobs: Sequence[str] = ()) -> None:
        self._globs = [_compile(g, False) for g in globs] + [_compile(g, True) for g in iglobs]
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


def _compile(glob: str, icase: bool) -> _Glob:
    """Parse a gitignore-style glob (`!`, leading/trailing `/`, `**`, `{a,b}`, `[..]`); ValueError when it is
    malformed (an unclosed `[` or `{`, as ripgrep says)."""
    negated = glob.startswith("!")
    body = glob[1:] if negated else glob
    dir_only = body.endswith("/") and len(body) > 1
    body = body.rstrip("/") if dir_only else body
    basename = "/" not in body
    body = body.lstrip("/")
    flags = re.IGNORECASE if icase else 0
    return _Glob(re.compile(_glob_to_regex(body), flags), negated, dir_only, basename)


def _glob_to_regex(glob: str) -> str:
    """Translate a glob to a regex where `*`/`?` stop at `/` and `**` spans directories. A run of `*` is one star,
    and a star that another follows in the same segment matches lazily inside an atomic group (as in
    index.wildmatch): no glob can make the match backtrack exponentially."""
    out, i, depth = [], 0, 0
    star: int | None = None  # where in `out` the segment's last star is, while only fixed-width pieces follow it
    while i < len(glob):
        c = glob[i]
        if glob.startswith("**/", i) and (i == 0 or glob[i - 1] == "/"):
            out.append("(?:.*/)?")
            i += 3
            star = None
            continue
        if glob.startswith("**", i) and i + 2 == len(glob) and (i == 0 or glob[i - 1] == "/"):
            out.append(".*")
            i += 2
            continue
        if c == "*":
            if star is not None and star == len(out) - 1:
                i += 1  # `**` inside a name is one star
                continue
            if star is not None:
                out[star] = "(?>[^/]*?"
                out.append(")")
            out.append("[^/]*")
            star = len(out) - 1
        elif c in "/{},":
            star = None
            if c == "/":
                out.append("/")
            elif c == "{":
                depth += 1
                out.append("(?:")
            elif c == "}" and depth:
                depth -= 1
                out.append(")")
            elif c == "," and depth:
                out.append("|")
            else:
                out.append(re.escape(c))
        elif c == "?":
            out.append("[^/]")
        elif c == "[" and "]" in glob[i + 2:]:
            end = glob.index("]", i + 2)
            out.append(_char_class(glob[i + 1:end]))
            i = end + 1
            continue
        elif c == "[":
            raise ValueError(f"bad glob {glob!r}: unclosed character class '['")
        elif c == "\\" and i + 1 < len(glob):
            i += 1
            out.append(re.escape(glob[i]))
        else:
            out.append(re.escape(c))
        i += 1
    if depth:
        raise ValueError(f"bad glob {glob!r}: unclosed alternate group '{{'")
    return "".join(out)


def _char_class(body: str) -> str:
    """`[..]` body to a regex class; `!`/`^` negate (never matching `/`)."""
    negated = body[:1] in ("!", "^")
    body = body[1:] if negated else body
    body = body.replace("\\", "\\\\").replace("[", "\\[")
    return f"[^/{body}]" if negated else f"[{body}]"
