"""Write records: create a new ADR from the template, edit an existing one in place."""

from __future__ import annotations

import datetime as dt
import re
from importlib import resources
from pathlib import Path
from collections.abc import Callable
from typing import Any

from zgrep.adr.edit import FrontMatter, anchor_lines, list_lines
from zgrep.adr.formats import record_format
from zgrep.adr.formats.body import block
from zgrep.adr.model import Anchor, AdrError, anchor_from_yaml
from zgrep.fsutil import atomic_write


def template_text(fmt: str = "zg") -> str:
    """The shipped template of a record format (zg, madr, nygard)."""
    name = "template.md" if fmt == "zg" else f"{fmt}.md"
    return resources.files("zgrep.adr").joinpath(f"templates/{name}").read_text(encoding="utf-8")


def slugify(title: str) -> str:
    """`Use ZeroMQ for IPC!` → `use-zeromq-for-ipc`."""
    return re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")[:60].rstrip("-") or "decision"


def render_new(
    number: int,
    title: str,
    status: str,
    change_type: str,
    anchors: list[Anchor],
    constraints: list[str],
    fmt: str = "zg",
) -> tuple[str, str]:
    """(id, text) of a new ADR filled in from the template of format `fmt`."""
    adr_id = f"ADR-{number:04d}"
    if fmt != "zg":
        return adr_id, _render_foreign(
            fmt, number, adr_id, title, status, change_type, anchors, constraints
        )
    fm = FrontMatter(template_text())
    for key, value in (
        ("id", adr_id),
        ("title", title),
        ("status", status),
        ("date", dt.date.today()),
        ("change_type", change_type),
    ):
        fm.set_scalar(key, value)
    if anchors:
        fm.replace_block("code_anchors", anchor_lines(anchors))
    if constraints:
        fm.replace_block("constraints", list_lines("constraints", constraints))
    fm.body = re.sub(r"(?m)^# ADR-0000: .*$", lambda _: f"# {adr_id}: {title}", fm.body, count=1)
    return adr_id, fm.text()


def _render_foreign(
    fmt: str,
    number: int,
    adr_id: str,
    title: str,
    status: str,
    change_type: str,
    anchors: list[Anchor],
    constraints: list[str],
) -> str:
    """An adr-tools or MADR record; zg's fields (id, change_type, anchors, constraints) in a ```zg
    block."""
    text = template_text(fmt)
    values = {
        "NUMBER": str(number),
        "DATE": dt.date.today().isoformat(),
        "STATUS": status.capitalize() if fmt == "nygard" else status,
        "TITLE": title,
    }
    # one pass: a title may spell DATE
    text = re.sub("|".join(values), lambda m: values[m.group(0)], text)
    keys = [f"id: {adr_id}\n", f"change_type: {change_type}\n"]
    keys += anchor_lines(anchors)
    keys += list_lines("constraints", constraints) if constraints else []
    return text + "".join(block(keys))


def anchor_matcher(spec: Anchor) -> Callable[[Any], bool]:
    """A predicate on raw `code_anchors` items: same path, and same symbol/lines where the spec
    gives them."""

    def match(value: Any) -> bool:
        try:
            a = anchor_from_yaml(value)
        except AdrError:
            return False
        return (
            a.path.strip("/") == spec.path.strip("/")
            and (not spec.symbol or a.symbol == spec.symbol)
            and (not spec.lines or a.lines == spec.lines)
        )

    return match


def write(path: Path, fm: FrontMatter) -> None:
    """Atomically write an edited record back."""
    atomic_write(path, fm.text())


def merge_anchors(path: Path, text: str, anchors: list[Anchor]) -> int:
    """Add anchors not already in the document's `code_anchors` (front matter created if absent; an
    adr-tools or MADR record gets them in its ```zg block)."""
    if not text.startswith("---") and not record_format(text):
        lines = list_lines("code_anchors", [a.to_yaml() for a in anchors])
        atomic_write(path, "".join(["---\n", *lines, "---\n", text]))
        return len(anchors)
    fm = FrontMatter.of_record(text, "code_anchors")
    existing = fm.value("code_anchors") or []
    have = set()
    for item in existing if isinstance(existing, list) else []:
        try:
            have.add(anchor_from_yaml(item))
        except AdrError:
            continue
    new = [a for a in anchors if a not in have]
    if new:
        fm.add_items("code_anchors", [a.to_yaml() for a in new])
        write(path, fm)
    return len(new)
