"""adr-tools (Michael Nygard's format): `# N. Title`, `Date:`, a `## Status` section with link
lines."""

from __future__ import annotations

import re

from zgrep.adr.formats.body import LINK_LINE_RE, Fields, Line, heading, links, section, status_word
from zgrep.adr.model import AdrError

TITLE_RE = re.compile(r"^(\d+)\.\s+(.*)$")
DATE_RE = re.compile(r"^Date:\s*(\S.*?)\s*$")


def is_nygard(body: list[Line]) -> bool:
    """A `## Status` section is what adr-tools reads and writes."""
    return section(body, "status") is not None


def parse(body: list[Line], errors: list[AdrError]) -> Fields:
    """Number and title from the heading, the date line, the status and its link lines."""
    out = Fields()
    title = heading(body)
    if title is not None:
        m = TITLE_RE.match(title.text)
        out.number, out.title = (int(m.group(1)), m.group(2)) if m else (None, title.text)
        out.title_line = title.no
    date = next(
        (m.group(1) for line in body if not line.fenced and (m := DATE_RE.match(line.text))), ""
    )
    out.date = date
    status = section(body, "status") or []
    out.links, out.link_lines = links(status, errors)
    text = next(
        (
            line
            for line in status
            if line.text.strip() and not line.fenced and not LINK_LINE_RE.match(line.text)
        ),
        None,
    )
    if text is not None:
        out.status, out.status_line = status_word(text.text, text.no, errors), text.no
    elif out.links["superseded_by"]:  # adr-tools removes "Accepted" when it adds "Superseded by"
        out.status, out.status_line = "superseded", out.link_lines["superseded_by"]
    else:
        line = status[0].no - 1 if status else 1
        errors.append(
            AdrError(
                "the `## Status` section is empty (write Accepted, Proposed, ...)",
                line,
                "bad_status",
            )
        )
    if out.links["superseded_by"] and out.status in ("accepted", "proposed"):
        out.status = "superseded"
    return out
