"""MADR 2, 3 and 4: front matter (3/4) or a `* Status:` bullet list (2); title from the first
heading."""

from __future__ import annotations

import re
from typing import Any

from zgrep.adr.formats.body import (
    HEADING_RE,
    Fields,
    Line,
    heading,
    links,
    names,
    status_word,
    target_id,
)
from zgrep.adr.model import AdrError, date_text

BULLET_RE = re.compile(
    r"^\s*[*-]\s+(Status|Deciders|Decision-makers|Date)\s*:\s*(.*?)\s*(?:<!--.*-->)?\s*$",
    re.IGNORECASE,
)
MADR_KEYS = ("deciders", "decision-makers", "consulted", "informed")
MADR_SECTIONS = ("context and problem statement", "decision outcome", "considered options")
SUPERSEDED_RE = re.compile(r"superseded\s+by\s+(.+)$", re.IGNORECASE)


def bullets(body: list[Line]) -> dict[str, Line]:
    """MADR 2's metadata bullets (`* Status: accepted`) between the title and the first section."""
    out: dict[str, Line] = {}
    for line in body:
        m = None if line.fenced else HEADING_RE.match(line.text)
        if m and len(m.group(1)) >= 2:
            break
        b = None if line.fenced else BULLET_RE.match(line.text)
        if b:
            out.setdefault(b.group(1).lower(), Line(line.no, b.group(2), False))
    return out


def is_madr(front: dict[str, Any], body: list[Line]) -> bool:
    """MADR's front-matter keys, its status bullet, or its section names."""
    if any(k in front for k in MADR_KEYS) or "status" in bullets(body):
        return True
    return any(
        (m := HEADING_RE.match(line.text))
        and not line.fenced
        and len(m.group(1)) == 2
        and m.group(2).strip().lower() in MADR_SECTIONS
        for line in body
    )


def parse(
    front: dict[str, Any], key_lines: dict[str, int], body: list[Line], errors: list[AdrError]
) -> Fields:
    """Title, status (with "superseded by ADR-NNNN"), date and deciders; link bullets anywhere."""
    out = Fields()
    title = heading(body)
    if title is not None:
        out.title, out.title_line = title.text, title.no
    meta = bullets(body)
    out.links, out.link_lines = links(body, errors)
    status = (
        (str(front["status"]), key_lines.get("status", 1))
        if front.get("status")
        else (meta["status"].text, meta["status"].no)
        if meta.get("status")
        else None
    )
    if status is None:
        out.status = "accepted"  # MADR's status is optional: a written-down decision stands
    else:
        out.status, out.status_line = status_word(status[0], status[1], errors), status[1]
        m = SUPERSEDED_RE.search(status[0])
        if (
            m
            and (successor := target_id(m.group(1)))
            and successor not in out.links["superseded_by"]
        ):
            out.links["superseded_by"].append(successor)
            out.link_lines["superseded_by"] = status[1]
    out.date = date_text(front.get("date")) or (meta["date"].text if "date" in meta else "")
    people = front.get("decision-makers", front.get("deciders"))
    if people is None:
        people = (meta.get("deciders") or meta.get("decision-makers") or Line(0, "", False)).text
    out.deciders = names(people)
    return out
