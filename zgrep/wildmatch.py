"""Globs as regexes that cannot backtrack exponentially: git's ignore-file lines (gitignore(5),
git's dir.c and wildmatch.c), and with `ripgrep` ripgrep's `-g` globs (`{a,b}` alternates), which
`filetypes` parses.

A run of `*` inside a path segment is one star; a star followed by another in the same segment, and
a `**/` followed by another `**`, match their next piece at its leftmost place inside an atomic
group (`(?>…)`), which gives the same answer as trying every place (the next star absorbs the rest)
in time polynomial in the path's length and the pattern's. A line git cannot use (a trailing
backslash, an unclosed `[`, an empty pattern) never matches, as in git, and is returned as a
`BadLine` for one warning."""

from __future__ import annotations

import re
from dataclasses import dataclass

_POSIX_CLASSES = {
    "alnum": ("az", "AZ", "09"),
    "alpha": ("az", "AZ"),
    "blank": (" ", "\t"),
    "cntrl": ("\x00\x1f", "\x7f"),
    "digit": ("09",),
    "graph": ("!~",),
    "lower": ("az",),
    "print": (" ~",),
    "punct": ("!/", ":@", "[`", "{~"),
    "space": (" ", "\t\r"),
    "upper": ("AZ",),
    "xdigit": ("09", "af", "AF"),
}
"""Each class as single characters or two-character ranges (first and last)."""


class Unusable(ValueError):
    """Why a glob can never match (git skips such a line; ripgrep refuses such a glob); `what` names
    the part at fault: "class" for an unclosed `[`, "group" for an unclosed `{`, "" otherwise."""

    def __init__(self, why: str, what: str = "") -> None:
        super().__init__(why)
        self.what = what


@dataclass(frozen=True)
class Pattern:
    """One usable line: `regex` matches the whole subject (the basename when `basename`, else the
    path relative to the ignore file's directory)."""

    regex: re.Pattern[str]
    negated: bool
    dir_only: bool
    basename: bool

    def matches(self, rel: str, is_dir: bool) -> bool:
        """Whether this line names `rel` (`/`-separated, relative to the ignore file's directory)."""
        if self.dir_only and not is_dir:
            return False
        return self.regex.fullmatch(rel.rpartition("/")[2] if self.basename else rel) is not None


@dataclass(frozen=True)
class BadLine:
    """A line skipped because git can never match it."""

    source: str
    line: int
    text: str
    why: str

    def __str__(self) -> str:
        return f"{self.source}:{self.line}: skipped {self.text!r}: {self.why} (git never matches it either)"


def parse_lines(lines: list[str], source: str) -> tuple[list[Pattern], list[BadLine]]:
    """The usable patterns of an ignore file's lines, in file order, and the lines skipped."""
    patterns, bad = [], []
    for number, raw in enumerate(lines, 1):
        text = _trim_trailing_spaces(raw.rstrip("\r"))
        if not text or text.startswith("#"):
            continue
        try:
            patterns.append(parse_line(text))
        except Unusable as exc:
            bad.append(BadLine(source, number, raw, str(exc)))
    return patterns, bad


def parse_line(text: str) -> Pattern:
    """One non-comment line as dir.c's parse_path_pattern reads it; Unusable when it can never
    match."""
    negated = text.startswith("!")
    body = text[1:] if negated else text
    dir_only = body.endswith("/")
    if dir_only:
        body = body[:-1]
    basename = "/" not in body
    if not basename and body.startswith("/"):
        body = body[1:]
    if not body:
        raise Unusable("an empty pattern")
    return Pattern(re.compile(translate(body), re.DOTALL), negated, dir_only, basename)


def _trim_trailing_spaces(text: str) -> str:
    """Unescaped trailing spaces dropped (dir.c's trim_trailing_spaces); `\\ ` keeps its space."""
    last_space = None
    i = 0
    while i < len(text):
        ch = text[i]
        if ch == " ":
            last_space = i if last_space is None else last_space
        elif ch == "\\":
            i += 1
            if i == len(text):
                return text
            last_space = None
        else:
            last_space = None
        i += 1
    return text if last_space is None else text[:last_space]


# --- wildmatch ------------------------------------------------------------------------------------------------

_STAR, _ANY_DIRS, _ANY = (
    "*",
    "**/",
    "**",
)  # a star within a segment; `**/` (zero or more dirs); trailing `**`
_OPEN, _OR, _CLOSE = "(?:", "|", ")"  # ripgrep's `{`, `,` and `}`


def translate(pattern: str, ripgrep: bool = False) -> str:
    """A regex (for fullmatch) equivalent to git's wildmatch of `pattern` with WM_PATHNAME; with
    `ripgrep`, as ripgrep's globs: `{a,b}` matches either alternate, and only `**` itself (not
    `***`) spans directories."""
    return _render(_tokens(pattern, ripgrep))


def _tokens(pattern: str, ripgrep: bool) -> list[str]:
    """Regex pieces for single characters and classes, the three star tokens and the alternates'
    tokens."""
    out: list[str] = []
    i, n = 0, len(pattern)
    depth = 0
    while i < n:
        ch = pattern[i]
        if ripgrep and (ch == "{" or (depth and ch in ",}")):
            depth += {"{": 1, "}": -1}.get(ch, 0)
            out.append({"{": _OPEN, ",": _OR, "}": _CLOSE}[ch])
            i += 1
            continue
        if ch == "*":
            start = i
            while i < n and pattern[i] == "*":
                i += 1
            bounded_before = start == 0 or pattern[start - 1] == "/"
            if (
                (i - start == 2 or (i - start > 2 and not ripgrep))
                and bounded_before
                and (i == n or pattern[i] == "/" or pattern[i : i + 2] == "\\/")
            ):
                if i == n:
                    out.append(_ANY)
                else:
                    i += 1 if pattern[i] == "/" else 2
                    out.append(_ANY_DIRS)
            elif not out or out[-1] != _STAR:
                out.append(_STAR)
            continue
        if ch == "?":
            out.append("[^/]")
        elif ch == "[":
            piece, i = _bracket(pattern, i)
            out.append(piece)
            continue
        elif ch == "\\":
            i += 1
            if i == n:
                raise Unusable("a trailing backslash")
            out.append(re.escape(pattern[i]))
        else:
            out.append(re.escape(ch))
        i += 1
    if depth:
        raise Unusable("an unclosed {", "group")
    return out


def _bracket(pattern: str, i: int) -> tuple[str, int]:
    """The class starting at `pattern[i] == "["` as a regex piece that never matches `/`, and the
    index after it."""
    n = len(pattern)
    i += 1
    negated = i < n and pattern[i] in "!^"
    if negated:
        i += 1
    items: list[str] = []  # one character or a two-character range
    prev: str | None = None
    first = True
    while True:
        if i >= n:
            raise Unusable("an unclosed [", "class")
        ch = pattern[i]
        if ch == "]" and not first:
            break
        first = False
        if ch == "\\":
            i += 1
            if i >= n:
                raise Unusable("an unclosed [", "class")
            ch = pattern[i]
            items.append(ch)
            prev = ch
        elif ch == "-" and prev is not None and i + 1 < n and pattern[i + 1] != "]":
            i += 1
            hi = pattern[i]
            if hi == "\\":
                i += 1
                if i >= n:
                    raise Unusable("an unclosed [", "class")
                hi = pattern[i]
            items[-1] = prev + hi
            prev = None
        elif ch == "[" and pattern[i + 1 : i + 2] == ":":
            close = pattern.find("]", i + 2)
            if close < 0:
                raise Unusable("an unclosed [", "class")
            if pattern[close - 1] != ":" or close - 1 < i + 2:
                items.append("[")
                prev = "["
            else:
                name = pattern[i + 2 : close - 1]
                if name not in _POSIX_CLASSES:
                    raise Unusable(f"an unknown class [:{name}:]")
                items.extend(_POSIX_CLASSES[name])
                prev = None
                i = close
        else:
            items.append(ch)
            prev = ch
        i += 1
    body = "".join(
        re.escape(it) if len(it) == 1 else f"{re.escape(it[0])}-{re.escape(it[1])}"
        for it in items
        if len(it) == 1 or it[0] <= it[1]
    )
    if negated:
        return f"[^/{body}]", i + 1
    return (f"(?!/)[{body}]" if body else "(?!)"), i + 1


def _render(tokens: list[str]) -> str:
    """Join the pieces; a star or `**/` that another of its kind follows matches lazily inside an
    atomic group (an alternate's bounds end the piece a star is followed by: a group never straddles
    an atomic one)."""
    out: list[str] = []
    i, n = 0, len(tokens)
    while i < n:
        token = tokens[i]
        if token == _ANY:
            out.append(".*")
        elif token in (_STAR, _ANY_DIRS):
            ends = (_STAR, "/", _ANY_DIRS, _ANY) if token == _STAR else (_ANY_DIRS, _ANY)
            j = i + 1
            while j < n and tokens[j] not in ends and tokens[j] not in (_OPEN, _OR, _CLOSE):
                j += 1
            follows = j < n and (tokens[j] == _STAR if token == _STAR else tokens[j] in ends)
            step = "[^/]*" if token == _STAR else "(?:[^/]*/)*"
            piece = _render(tokens[i + 1 : j])
            out.append(f"(?>{step}?{piece})" if follows else step + piece)
            i = j
            continue
        else:
            out.append(token)
        i += 1
    return "".join(out)
