"""`zg adr import`: give existing records zg's own fields (id, code_anchors) by adding lines only.

A foreign-format record (adr-tools, MADR) gets them in a ```zg block (its existing one, or a new one
at the end) so the format's own tools still read it; a zg record missing a key gets it at the end of
its front matter. Anchors are proposed from the code the record mentions (`zg adr anchor`'s logic).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from zgrep.adr.edit import anchor_lines
from zgrep.adr.formats.body import block, zg_opener
from zgrep.adr.model import Adr, Anchor, split_front_matter
from zgrep.adr.propose import propose
from zgrep.adr.settings import AdrSettings
from zgrep.adr.store import AdrSet
from zgrep.fsutil import atomic_write


@dataclass
class Plan:
    """The lines to insert into one record (at line index `at`) and what they say."""

    path: str
    id: str
    at: int
    lines: list[str]
    anchors: list[Anchor] = field(default_factory=list)
    ambiguous: dict[str, int] = field(default_factory=dict)
    unknown: list[str] = field(default_factory=list)


def plan(settings: AdrSettings, adrs: AdrSet) -> list[Plan]:
    """What `zg adr import` adds to each record lacking `id` or `code_anchors` (records in path
    order)."""
    out = []
    number = adrs.next_number()
    for adr in sorted([*adrs.adrs, *adrs.unnamed], key=lambda a: a.path):
        missing = [k for k in ("id", "code_anchors") if k not in adr.declared]
        if not missing:
            continue
        adr_id = adr.id
        if not adr_id:
            adr_id, number = f"ADR-{number:04d}", number + 1
        text = (settings.root / adr.path).read_text(encoding="utf-8")
        keys = [f"id: {adr_id}\n"] if "id" in missing else []
        item = Plan(adr.path, adr_id, 0, [])
        if "code_anchors" in missing:
            found = propose(settings.root, adr.path, text, (settings.dir, *settings.doc_dirs))
            item.anchors, item.ambiguous, item.unknown = (
                found.anchors,
                found.ambiguous,
                found.unknown,
            )
            keys += anchor_lines(found.anchors)
        item.at, item.lines = _placement(adr, text, keys)
        out.append(item)
    return out


def _placement(adr: Adr, text: str, keys: list[str]) -> tuple[int, list[str]]:
    """Where the key lines go (line index) and the lines to insert there."""
    lines = text.splitlines(keepends=True)
    if adr.format == "zg":
        fm_lines, _ = split_front_matter(text)
        return len(fm_lines) + 1, keys
    opener = zg_opener(text)
    if opener is not None:
        return opener + 1, keys
    if not lines or text.endswith("\n"):
        return len(lines), block(keys)
    # no final newline: after the title line, not by editing the last
    return adr.key_lines.get("title", 1), block(keys)


def apply(settings: AdrSettings, item: Plan) -> None:
    """Insert the planned lines; every existing byte stays as it was."""
    path = settings.root / item.path
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    lines[item.at : item.at] = item.lines
    atomic_write(path, "".join(lines))
