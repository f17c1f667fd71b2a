"""Surgical front-matter edits: change one key's lines, keep every other byte as it was."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import yaml

from zgrep.adr.formats.body import block, zg_close, zg_opener
from zgrep.adr.model import KEY_RE, Anchor, front_matter_lines, split_front_matter

ITEM_RE = re.compile(r"^(\s*)-(\s|$)")


def dump_inline(value: Any) -> str:
    """One-line YAML for a scalar, flow list or flow mapping."""
    text = yaml.safe_dump(
        value, default_flow_style=True, sort_keys=False, width=1 << 30, allow_unicode=True
    )
    return text.removesuffix("\n").removesuffix("\n...").strip()


def list_lines(key: str, values: list[Any]) -> list[str]:
    """`key:` and one `  - value` line per value (a YAML block list)."""
    return [f"{key}:\n", *(f"  - {dump_inline(v)}\n" for v in values)]


def anchor_lines(anchors: list[Anchor]) -> list[str]:
    """The `code_anchors` key of a record's new anchors (`code_anchors: []` when there are none)."""
    return (
        list_lines("code_anchors", [a.to_yaml() for a in anchors])
        if anchors
        else ["code_anchors: []\n"]
    )


class FrontMatter:
    """A document split into front-matter lines and the untouched rest."""

    def __init__(self, text: str) -> None:
        self.lines, self.body = split_front_matter(text)
        raw = text.splitlines(keepends=True)
        self.head, self.close = raw[0], raw[len(self.lines) + 1]

    @classmethod
    def of_record(cls, text: str, key: str) -> FrontMatter:
        """The zg metadata of a record in any format, to edit `key` in: the front matter when it
        holds the key or the record has no ```zg block (zg records, MADR 3/4), else the ```zg block
        (a new one at the end of a record that has neither)."""
        lines = text.splitlines(keepends=True)
        fm_lines = front_matter_lines(text)
        opener = zg_opener(text)
        if fm_lines is not None and (
            opener is None or any((m := KEY_RE.match(ln)) and m.group(1) == key for ln in fm_lines)
        ):
            return cls(text)
        if opener is None:
            lines += ([] if not lines or text.endswith("\n") else ["\n"]) + block([])
            opener = len(lines) - 2
        close = zg_close(lines, opener)
        out = cls.__new__(cls)
        out.head, out.lines, out.close = (
            "".join(lines[: opener + 1]),
            lines[opener + 1 : close],
            lines[close],
        )
        out.body = "".join(lines[close + 1 :])
        return out

    def text(self) -> str:
        """Reassemble the document."""
        return self.head + "".join(self.lines) + self.close + self.body

    def span(self, key: str) -> tuple[int, int] | None:
        """Line span [start, end) of a top-level key, trailing blanks and comments excluded."""
        start = next(
            (i for i, ln in enumerate(self.lines) if (m := KEY_RE.match(ln)) and m.group(1) == key),
            None,
        )
        if start is None:
            return None
        end = next(
            (j for j in range(start + 1, len(self.lines)) if KEY_RE.match(self.lines[j])),
            len(self.lines),
        )
        while end > start + 1 and (
            not self.lines[end - 1].strip() or self.lines[end - 1].startswith("#")
        ):
            end -= 1
        return start, end

    def value(self, key: str) -> Any:
        """The parsed value of one key (None if absent)."""
        sp = self.span(key)
        return (
            None
            if sp is None
            else (yaml.safe_load("".join(self.lines[sp[0] : sp[1]])) or {}).get(key)
        )

    def replace_block(self, key: str, new_lines: list[str]) -> None:
        """Replace a key's lines (or append them at the end of the front matter)."""
        sp = self.span(key)
        if sp is None:
            self.lines.extend(new_lines)
        else:
            self.lines[sp[0] : sp[1]] = new_lines

    def set_scalar(self, key: str, value: Any) -> None:
        """Set `key: value` on one line, keeping a trailing comment on that line."""
        sp = self.span(key)
        comment = ""
        if sp is not None and sp[1] - sp[0] == 1:
            m = re.search(r"\s+#[^'\"]*$", self.lines[sp[0]].rstrip("\n"))
            comment = m.group(0) if m else ""
        rendered = "" if value is None else " " + dump_inline(value)
        self.replace_block(key, [f"{key}:{rendered}{comment}\n"])

    def items(self, key: str) -> tuple[str, list[tuple[int, int]]] | None:
        """Block-list items of a key as (indent, [(start, end)]); None if not a block list."""
        sp = self.span(key)
        if sp is None or self.lines[sp[0]].split(":", 1)[1].split("#")[0].strip():
            return None
        starts, indent = [], None
        for i in range(sp[0] + 1, sp[1]):
            m = ITEM_RE.match(self.lines[i])
            if m and (indent is None or m.group(1) == indent):
                indent = m.group(1)
                starts.append(i)
        if indent is None:
            return None
        return indent, [(s, e) for s, e in zip(starts, [*starts[1:], sp[1]])]

    def item_value(self, start: int, end: int, indent: str) -> Any:
        """Parse one block-list item."""
        text = "".join(
            ln[len(indent) :] if ln.startswith(indent) else ln for ln in self.lines[start:end]
        )
        parsed = yaml.safe_load(text)
        return parsed[0] if isinstance(parsed, list) and parsed else None

    def add_items(self, key: str, values: list[Any], style: str = "block") -> None:
        """Append items to a list key, keeping the style it is written in.

        A block list gets new `- item` lines after its last item; a non-empty flow list
        (`[a, b]`) stays a flow list on its key line. An absent key, an empty `[]`/null value
        or a lone scalar becomes a list in `style` ("block" or "flow").
        """
        block = self.items(key)
        if block is not None:
            indent, spans = block
            end = spans[-1][1]
            self.lines[end:end] = [f"{indent}- {dump_inline(v)}\n" for v in values]
            return
        current = self.value(key)
        flow_now = isinstance(current, list) and bool(current)
        current = [] if current is None or current == "" else current
        current = current if isinstance(current, list) else [current]
        if flow_now or style == "flow":
            self.replace_block(
                key, [f"{key}: {dump_inline([*current, *values])}{self._comment(key)}\n"]
            )
        else:
            self.replace_block(key, list_lines(key, [*current, *values]))

    def _comment(self, key: str) -> str:
        """The trailing `# comment` of a one-line key (kept when the line is rewritten)."""
        sp = self.span(key)
        if sp is None or sp[1] - sp[0] != 1:
            return ""
        m = re.search(r"\s+#[^'\"\]]*$", self.lines[sp[0]].rstrip("\n"))
        return m.group(0) if m else ""

    def remove_items(self, key: str, match: Callable[[Any], bool]) -> int:
        """Remove list items for which `match` is true; return how many went."""
        block = self.items(key)
        if block is None:
            current = self.value(key)
            if not isinstance(current, list):
                return 0
            kept = [v for v in current if not match(v)]
            if len(kept) != len(current):
                self.replace_block(key, [f"{key}: {dump_inline(kept)}\n"])
            return len(current) - len(kept)
        indent, spans = block
        doomed = [(s, e) for s, e in spans if match(self.item_value(s, e, indent))]
        for s, e in reversed(doomed):
            del self.lines[s:e]
        if doomed and len(doomed) == len(spans):
            self.replace_block(key, [f"{key}: []\n"])
        return len(doomed)

    def replace_item(self, key: str, match: Callable[[Any], bool], new: Any) -> bool:
        """Replace the first matching list item, in the style (flow or block) it was written in."""
        block = self.items(key)
        if block is None:
            current = self.value(key)
            if not isinstance(current, list):
                return False
            idx = next((i for i, v in enumerate(current) if match(v)), None)
            if idx is None:
                return False
            current[idx] = new
            self.replace_block(key, [f"{key}: {dump_inline(current)}\n"])
            return True
        indent, spans = block
        for s, e in spans:
            if match(self.item_value(s, e, indent)):
                if e - s == 1 or not isinstance(new, dict):
                    self.lines[s:e] = [f"{indent}- {dump_inline(new)}\n"]
                else:
                    inner = indent + "  "
                    rows = [f"{k}: {dump_inline(v)}\n" for k, v in new.items()]
                    self.lines[s:e] = [f"{indent}- {rows[0]}"] + [inner + r for r in rows[1:]]
                return True
        return False
