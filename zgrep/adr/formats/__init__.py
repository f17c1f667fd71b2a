"""Read a decision record in any format zg knows into the one record model (`Adr`).

zg's own front matter (`model.read_adr`), adr-tools/Nygard (`nygard`) and MADR 2/3/4 (`madr`); the
zg fields those formats lack (id, code_anchors, constraints, ...) may come from their front matter
or from a ```zg block in the body.
"""

from __future__ import annotations

import re

from zgrep.adr.formats import madr, nygard
from zgrep.adr.formats.body import Fields, Line, body_lines, file_number, zg_block
from zgrep.adr.model import (
    ID_RE,
    Adr,
    AdrError,
    Meta,
    front_matter_lines,
    optional_fields,
    read_adr,
)

FORMATS = ("zg", "madr", "nygard")
TITLE_PREFIX_RE = re.compile(r"^(?:ADR[-_ ]?\d+|\d+)\s*[:.]\s+", re.IGNORECASE)


def detect(front: dict[str, object] | None, body: list[Line]) -> str:
    """ "zg", "nygard", "madr", or "" when the text is none of them."""
    front = front if front is not None else {}
    if "title" in front:
        return "zg"
    if nygard.is_nygard(body):
        return "nygard"
    if madr.is_madr(front, body):
        return "madr"
    if "id" in front:
        return "zg"
    return "madr" if front else ""


def split(text: str) -> tuple[Meta | None, list[Line], list[AdrError]]:
    """Front-matter metadata (None when the file has none) and the numbered body lines after it."""
    lines = body_lines(text)
    try:
        fm_lines = front_matter_lines(text)
    except AdrError as exc:
        return None, lines, [exc]
    if fm_lines is None:
        return None, lines, []
    front, err = Meta.parse(fm_lines, 2)
    return front, lines[len(fm_lines) + 2 :], [err] if err else []


def record_format(text: str) -> str:
    """The format of a record's text ("" when zg cannot read it as a decision record)."""
    front, body, errors = split(text)
    return "zg" if errors else detect(front.data if front else None, body)


def read_record(text: str, path: str) -> tuple[Adr | None, list[AdrError]]:
    """Parse a record of any known format, collecting every error (see `model.read_adr`)."""
    front, body, errors = split(text)
    if errors:
        return None, errors
    fmt = detect(front.data if front else None, body)
    if fmt == "zg":
        return read_adr(text, path)
    if not fmt:
        return None, [
            AdrError(
                "not a decision record zg can read: no YAML front matter (zg, MADR 3/4), no `## Status` "
                "section (adr-tools) and no MADR status or sections",
                1,
            )
        ]
    block, errors = zg_block(text)
    meta = front or Meta()
    meta = meta.merged(block) if block else meta
    fields = (
        nygard.parse(body, errors)
        if fmt == "nygard"
        else madr.parse(meta.data, meta.key_lines, body, errors)
    )
    body_text = "".join(text.splitlines(keepends=True)[body[0].no - 1 :]) if body else ""
    return _record(path, fmt, meta, fields, body_text, errors), sorted(errors, key=lambda e: e.line)


def _record(
    path: str, fmt: str, meta: Meta, fields: Fields, body: str, errors: list[AdrError]
) -> Adr:
    """The Adr of a foreign-format record: its own fields plus the zg metadata it carries."""
    opt = optional_fields(meta, errors)
    links = fields.links or {}
    number = file_number(path) if file_number(path) is not None else fields.number
    adr_id = str(meta.data.get("id") or "")
    if adr_id and not ID_RE.match(adr_id):
        errors.append(
            AdrError(
                f"bad id {adr_id!r} (expected ADR-NNNN)", meta.key_lines.get("id", 1), "bad_id"
            )
        )
        adr_id = ""
    elif not adr_id and number is not None:
        adr_id = f"ADR-{number:04d}"
    elif not adr_id:
        errors.append(
            AdrError(
                "no id: name the file NNNN-title.md or add `id: ADR-NNNN` in a ```zg block",
                1,
                "missing_id",
            )
        )
    title = TITLE_PREFIX_RE.sub("", fields.title).strip()
    if not title:
        errors.append(
            AdrError(
                "no title: the record needs a `# Title` heading", fields.title_line, "empty_title"
            )
        )
    lines = {
        "title": fields.title_line,
        "status": fields.status_line,
        "date": 1,
        **(fields.link_lines or {}),
        **meta.key_lines,
    }
    return Adr(
        path=path,
        id=adr_id,
        title=title,
        status=fields.status,
        change_type=opt.change_type,
        date=fields.date,
        supersedes=_union(opt.supersedes, links.get("supersedes")),
        superseded_by=_union(opt.superseded_by, links.get("superseded_by")),
        anchors=opt.anchors,
        constraints=opt.constraints,
        tags=opt.tags,
        body=body,
        meta=meta.data,
        key_lines=lines,
        anchor_lines=opt.anchor_lines,
        format=fmt,
        amends=list(links.get("amends") or []),
        amended_by=list(links.get("amended_by") or []),
        deciders=fields.deciders or [],
        declared=frozenset(meta.data),
    )


def _union(first: list[str], second: list[str] | None) -> list[str]:
    return first + [x for x in second or [] if x not in first]
