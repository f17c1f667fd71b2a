"""Markdown pieces the foreign formats share: the title heading, sections, link lines, the ```zg
block."""

from __future__ import annotations

import re
from dataclasses import dataclass

from zgrep.adr.model import FOREIGN_STATUSES, AdrError, Meta, front_matter_lines

FENCE_RE = re.compile(r"^(```|~~~)")
ZG_OPEN_RE = re.compile(r"^```\s*zg\s*$")
HEADING_RE = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
FILE_NUMBER_RE = re.compile(r"^(\d{1,})-")
# `Supersedes [2. Use X](0002-use-x.md)`, `* Superseded by [ADR-0005](0005-x.md)`, `Amended by
# ADR-0007`
LINK_LINE_RE = re.compile(
    r"^\s*(?:[*-]\s+)?(Supersedes|Superseded by|Amends|Amended by)\b:?\s*(.+?)\s*$", re.IGNORECASE
)
LINK_FIELD = {
    "supersedes": "supersedes",
    "superseded by": "superseded_by",
    "amends": "amends",
    "amended by": "amended_by",
}
STATUS_ALIASES = {"draft": "proposed", "approved": "accepted", "obsolete": "deprecated"}


@dataclass(frozen=True)
class Line:
    """One body line with its file line number (1-based); lines inside code fences are marked."""

    no: int
    text: str
    fenced: bool


def body_lines(text: str) -> list[Line]:
    """Every line of the file, numbered, with fenced-code lines marked (headings there are not
    headings)."""
    out, fence = [], ""
    for i, raw in enumerate(text.splitlines()):
        m = FENCE_RE.match(raw.lstrip())
        inside = bool(fence)
        if m and (not fence or raw.lstrip().startswith(fence)):
            fence = "" if fence else m.group(1)
            inside = True
        out.append(Line(i + 1, raw, inside))
    return out


def heading(lines: list[Line], level: int = 1) -> Line | None:
    """The first heading of `level` outside code fences."""
    for line in lines:
        m = HEADING_RE.match(line.text)
        if m and not line.fenced and len(m.group(1)) == level:
            return Line(line.no, m.group(2), False)
    return None


def section(lines: list[Line], name: str) -> list[Line] | None:
    """The lines under the `## name` heading (case-insensitive) up to the next heading of level 1 or
    2."""
    out: list[Line] | None = None
    for line in lines:
        m = None if line.fenced else HEADING_RE.match(line.text)
        if m and len(m.group(1)) <= 2:
            if out is not None:
                return out
            if len(m.group(1)) == 2 and m.group(2).strip().lower() == name:
                out = []
        elif out is not None:
            out.append(line)
    return out


def target_id(text: str) -> str:
    """The ADR a link names: `[3. Title](0003-title.md)`, `[ADR-0005](...)`, `ADR-0123`, `3. Title`."""
    for pattern in (
        r"\]\(\s*(?:[^)\s]*/)?(\d+)-[^)]*\)",
        r"\bADR[-_ ]?(\d+)\b",
        r"^\[?\s*(\d+)[.:]",
        r"^(\d+)\b",
    ):
        m = re.search(pattern, text, flags=re.IGNORECASE)
        if m:
            return f"ADR-{int(m.group(1)):04d}"
    return ""


def links(lines: list[Line], errors: list[AdrError]) -> tuple[dict[str, list[str]], dict[str, int]]:
    """Supersession/amendment link lines (adr-tools' status section, MADR's Links bullets) by field."""
    out: dict[str, list[str]] = {f: [] for f in LINK_FIELD.values()}
    where: dict[str, int] = {}
    for line in lines:
        m = None if line.fenced else LINK_LINE_RE.match(line.text)
        if not m:
            continue
        name = LINK_FIELD[m.group(1).lower()]
        target = target_id(m.group(2))
        if not target:
            errors.append(
                AdrError(
                    f"`{m.group(1)}` link names no ADR (expected a link to NNNN-title.md or ADR-NNNN)",
                    line.no,
                    "unknown_link",
                    "warning",
                )
            )
            continue
        if target not in out[name]:
            out[name].append(target)
        where.setdefault(name, line.no)
    return out, where


def status_word(text: str, line: int, errors: list[AdrError]) -> str:
    """The zg status of a free-text status (`Accepted`, `superseded by ADR-0005`, `Draft`); unknown
    words are kept (not live) with a warning."""
    words = re.findall(r"[A-Za-z]+", text)
    word = words[0].lower() if words else ""
    word = STATUS_ALIASES.get(word, word)
    if word not in FOREIGN_STATUSES:
        errors.append(
            AdrError(
                f"unknown status {text.strip()!r}: zg treats the record as not live "
                f"(known: {', '.join(FOREIGN_STATUSES)})",
                line,
                "bad_status",
                "warning",
            )
        )
    return word


def zg_block(text: str) -> tuple[Meta | None, list[AdrError]]:
    """The optional ```zg fenced block of zg metadata (anchors, constraints, id ...) in a record's
    body."""
    opener = zg_opener(text)
    if opener is None:
        return None, []
    lines = text.splitlines()
    try:
        close = zg_close(lines, opener)
    except AdrError as exc:
        return None, [exc]
    meta, err = Meta.parse([f"{line}\n" for line in lines[opener + 1 : close]], opener + 2)
    return meta, [err] if err else []


def zg_opener(text: str) -> int | None:
    """Index of the ```zg line that opens a record's zg block (the first after any front matter),
    None when the record has none; reading, edits and `zg adr import` all find the block here."""
    lines = text.splitlines()
    fm_lines = front_matter_lines(text)
    start = 0 if fm_lines is None else len(fm_lines) + 2
    return next((i for i in range(start, len(lines)) if ZG_OPEN_RE.match(lines[i])), None)


def zg_close(lines: list[str], opener: int) -> int:
    """Index of the ``` line that closes the ```zg block opened at line index `opener`."""
    close = next(
        (j for j in range(opener + 1, len(lines)) if lines[j].strip().startswith("```")), None
    )
    if close is None:
        raise AdrError("the ```zg block is not closed by a ``` line", opener + 1, "yaml")
    return close


def block(keys: list[str]) -> list[str]:
    """A ```zg block (after a blank line) holding the given YAML lines."""
    return ["\n", "```zg\n", *keys, "```\n"]


def file_number(path: str) -> int | None:
    """The number a record's file name starts with (`0007-use-x.md` → 7)."""
    m = FILE_NUMBER_RE.match(path.rsplit("/", 1)[-1])
    return int(m.group(1)) if m else None


@dataclass
class Fields:
    """What a format parser read from a record's body (and MADR front matter)."""

    title: str = ""
    title_line: int = 1
    number: int | None = None
    status: str = ""
    status_line: int = 1
    date: str = ""
    deciders: list[str] | None = None
    links: dict[str, list[str]] | None = None
    link_lines: dict[str, int] | None = None


def names(value: object) -> list[str]:
    """A people field (`deciders`, `decision-makers`): a YAML list or a comma-separated string."""
    if isinstance(value, list):
        return [str(v).strip() for v in value if str(v).strip()]
    return [part.strip() for part in str(value or "").split(",") if part.strip()]
