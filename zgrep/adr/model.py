"""ADR records: the front-matter schema, parsing with precise line numbers, anchor specs."""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass, field
from typing import Any, TypedDict

import yaml

STATUSES = ("proposed", "accepted", "deprecated", "superseded")
FOREIGN_STATUSES = (
    *STATUSES,
    "rejected",
)  # MADR's and adr-tools' vocabulary (rejected: never live)
LIVE_STATUSES = ("proposed", "accepted")
CHANGE_TYPES = ("architecture", "api", "dependency", "data", "security", "performance", "process")
ID_RE = re.compile(r"^ADR-(\d{4,})$")
KEY_RE = re.compile(r"^([A-Za-z_][\w-]*)\s*:")
_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # the C build of the same safe loader


class AdrError(ValueError):
    """A record that cannot be read; carries the file line (1-based) when known."""

    def __init__(
        self, message: str, line: int = 0, code: str = "front_matter", severity: str = "error"
    ) -> None:
        super().__init__(message)
        self.line = line
        self.code = code
        self.severity = severity


class AnchorDoc(TypedDict, total=False):
    """A code anchor as written into `code_anchors`: `path`, and `symbol` and `lines` when it has
    them."""

    path: str
    symbol: str
    lines: str  # START-END


@dataclass(frozen=True)
class Anchor:
    """A piece of code an ADR is about: a path, optionally a symbol and/or a line range."""

    path: str
    symbol: str = ""
    lines: tuple[int, int] | None = None

    def spec(self) -> str:
        """The `PATH[:SYMBOL][:START-END]` form used on the command line and in messages."""
        out = self.path + (f":{self.symbol}" if self.symbol else "")
        return out + (f":{self.lines[0]}-{self.lines[1]}" if self.lines else "")

    def to_yaml(self) -> AnchorDoc:
        """The mapping written into `code_anchors`."""
        out: AnchorDoc = {"path": self.path}
        if self.symbol:
            out["symbol"] = self.symbol
        if self.lines:
            out["lines"] = f"{self.lines[0]}-{self.lines[1]}"
        return out


class AdrDoc(TypedDict):
    """A record as JSON (`zg adr list --json`, MCP, HTTP)."""

    id: str
    path: str
    title: str
    status: str
    change_type: str
    date: str
    supersedes: list[str]
    superseded_by: list[str]
    code_anchors: list[AnchorDoc]
    constraints: list[str]
    tags: list[str]
    format: str
    amends: list[str]
    amended_by: list[str]
    deciders: list[str]


@dataclass
class Adr:
    """One parsed decision record of any format (`format`: zg, nygard, madr); `meta` is the raw zg
    metadata (front matter and/or ```zg block), `key_lines` maps fields to file lines, `declared`
    names the zg fields written in the record (not inferred from its file name or body)."""

    path: str
    id: str
    title: str
    status: str
    change_type: str
    date: str
    supersedes: list[str]
    superseded_by: list[str]
    anchors: list[Anchor]
    constraints: list[str]
    tags: list[str]
    body: str
    meta: dict[str, Any] = field(default_factory=dict)
    key_lines: dict[str, int] = field(default_factory=dict)
    anchor_lines: list[int] = field(default_factory=list)
    format: str = "zg"
    amends: list[str] = field(default_factory=list)
    amended_by: list[str] = field(default_factory=list)
    deciders: list[str] = field(default_factory=list)
    declared: frozenset[str] = frozenset()

    @property
    def live(self) -> bool:
        """Proposed and accepted ADRs are live: their anchors must resolve."""
        return self.status in LIVE_STATUSES

    def line_of(self, key: str) -> int:
        """File line of a front-matter key (1 if absent)."""
        return self.key_lines.get(key, 1)

    def line_of_anchor(self, anchor: Anchor) -> int:
        """File line of a `code_anchors` item (the key's line when items are written inline)."""
        if len(self.anchor_lines) == len(self.anchors) and anchor in self.anchors:
            return self.anchor_lines[self.anchors.index(anchor)]
        return self.line_of("code_anchors")

    def summary(self) -> dict[str, Any]:
        """Id, title, status and path: how the JSON of a check or suggest result names the record."""
        return {"id": self.id, "title": self.title, "status": self.status, "path": self.path}

    def to_json(self) -> AdrDoc:
        """A JSON-ready view of the record."""
        return {
            "id": self.id,
            "path": self.path,
            "title": self.title,
            "status": self.status,
            "change_type": self.change_type,
            "date": self.date,
            "supersedes": self.supersedes,
            "superseded_by": self.superseded_by,
            "code_anchors": [a.to_yaml() for a in self.anchors],
            "constraints": self.constraints,
            "tags": self.tags,
            "format": self.format,
            "amends": self.amends,
            "amended_by": self.amended_by,
            "deciders": self.deciders,
        }


def normalize_id(text: str) -> str:
    """`7`, `0007`, `adr-7` and `ADR-0007` all name ADR-0007."""
    m = re.fullmatch(r"(?:ADR-?)?(\d+)", text.strip(), flags=re.IGNORECASE)
    if not m:
        raise ValueError(f"not an ADR id: {text!r} (expected ADR-NNNN)")
    return f"ADR-{int(m.group(1)):04d}"


def parse_lines(text: str) -> tuple[int, int]:
    """Parse `START-END` (or a single line `N`) into a 1-based inclusive range."""
    m = re.fullmatch(r"\s*(\d+)\s*(?:-\s*(\d+)\s*)?", text)
    if not m:
        raise ValueError(f"bad line range {text!r} (expected START-END)")
    start, end = int(m.group(1)), int(m.group(2) or m.group(1))
    if start < 1 or end < start:
        raise ValueError(f"bad line range {text!r} (need 1 <= START <= END)")
    return start, end


def parse_anchor_spec(spec: str) -> Anchor:
    """Parse `PATH[:SYMBOL|:START-END]` (also `PATH:SYMBOL:START-END`)."""
    parts = spec.split(":")
    path, rest = parts[0], parts[1:]
    if not path or len(rest) > 2:
        raise ValueError(f"bad anchor {spec!r} (expected PATH[:SYMBOL|:START-END])")
    symbol, lines = "", None
    for part in rest:
        if re.fullmatch(r"\d+(-\d+)?", part):
            lines = parse_lines(part)
        elif part and not symbol:
            symbol = part
        else:
            raise ValueError(f"bad anchor {spec!r} (expected PATH[:SYMBOL|:START-END])")
    return Anchor(path, symbol, lines)


def split_front_matter(text: str) -> tuple[list[str], str]:
    """Split into front-matter lines (without the `---` fences) and the body."""
    lines = text.splitlines(keepends=True)
    if not lines or lines[0].strip() != "---":
        raise AdrError("no YAML front matter (the file must start with a '---' line)", 1)
    for i in range(1, len(lines)):
        if lines[i].strip() in ("---", "..."):
            return lines[1:i], "".join(lines[i + 1 :])
    raise AdrError("front matter is not closed by a '---' line", 1)


def front_matter_lines(text: str) -> list[str] | None:
    """The front-matter lines of a file that starts with a `---` line, None when it does not."""
    lines = text.splitlines()
    return split_front_matter(text)[0] if lines and lines[0].strip() == "---" else None


def key_lines(fm_lines: list[str], first: int = 2) -> dict[str, int]:
    """Map each top-level key to its file line (`first`: the file line of fm_lines[0])."""
    out: dict[str, int] = {}
    for i, line in enumerate(fm_lines):
        m = KEY_RE.match(line)
        if m:
            out.setdefault(m.group(1), i + first)
    return out


def item_lines(fm_lines: list[str], key: str, first: int = 2) -> list[int]:
    """File lines where the block-list items of a top-level key start."""
    out: list[int] = []
    indent = None
    inside = False
    for i, line in enumerate(fm_lines):
        m = KEY_RE.match(line)
        if m:
            inside = m.group(1) == key
            continue
        item = re.match(r"^(\s*)-(\s|$)", line)
        if inside and item and indent in (None, item.group(1)):
            indent = item.group(1)
            out.append(i + first)
    return out


def _str_list(meta: dict[str, Any], key: str, line: int) -> list[str]:
    value = meta.get(key)
    if value is None:
        return []
    if isinstance(value, (str, int)):
        return [str(value)]
    if isinstance(value, list) and all(isinstance(v, (str, int, float)) for v in value):
        return [str(v) for v in value]
    raise AdrError(f"`{key}` must be a list of strings", line)


def _ids(meta: dict[str, Any], key: str, line: int) -> list[str]:
    out = []
    for value in _str_list(meta, key, line):
        try:
            out.append(normalize_id(value))
        except ValueError as exc:
            raise AdrError(f"`{key}`: {exc}", line) from None
    return out


def anchor_from_yaml(item: Any, line: int = 0) -> Anchor:
    """One `code_anchors` entry (mapping or `PATH:SYMBOL` string) as an Anchor."""
    if isinstance(item, str):
        try:
            return parse_anchor_spec(item)
        except ValueError as exc:
            raise AdrError(f"`code_anchors`: {exc}", line) from None
    if not isinstance(item, dict) or not isinstance(item.get("path"), str) or not item["path"]:
        raise AdrError(
            "`code_anchors` entries need a `path` (and optionally `symbol`, `lines`)", line
        )
    unknown = set(item) - {"path", "symbol", "lines"}
    if unknown:
        raise AdrError(f"`code_anchors`: unknown key(s) {', '.join(sorted(unknown))}", line)
    lines = item.get("lines")
    try:
        rng = parse_lines(str(lines)) if isinstance(lines, (str, int)) else None
        if isinstance(lines, list) and len(lines) == 2:
            rng = parse_lines(f"{lines[0]}-{lines[1]}")
        elif lines is not None and rng is None:
            raise ValueError(f"bad line range {lines!r} (expected START-END)")
    except ValueError as exc:
        raise AdrError(f"`code_anchors`: {exc}", line) from None
    return Anchor(item["path"], str(item.get("symbol") or ""), rng)


def _field(errors: list[AdrError], fn: Any, *args: Any, default: Any = None) -> Any:
    """Run one field parser; record its AdrError and fall back to `default` instead of stopping."""
    try:
        return fn(*args)
    except AdrError as exc:
        errors.append(exc)
        return default


def load_yaml(lines: list[str], first: int) -> tuple[dict[str, Any] | None, AdrError | None]:
    """Parse YAML metadata lines (fm_lines[0] is file line `first`) into a mapping, or the error."""
    try:
        meta = yaml.load("".join(lines), Loader=_Loader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + first if mark else 1
        return None, AdrError(f"malformed YAML: {exc.problem or exc.context}", line, "yaml")
    except yaml.YAMLError as exc:
        return None, AdrError(f"malformed YAML: {exc}", 1, "yaml")
    meta = meta or {}
    if not isinstance(meta, dict):
        return None, AdrError("front matter must be a YAML mapping", first)
    return meta, None


@dataclass
class Meta:
    """zg metadata: the merged mapping, each key's file line, and the YAML blocks it came from
    (front matter, a ```zg block) as (lines, file line of the first)."""

    data: dict[str, Any] = field(default_factory=dict)
    key_lines: dict[str, int] = field(default_factory=dict)
    blocks: list[tuple[list[str], int]] = field(default_factory=list)

    @classmethod
    def parse(cls, lines: list[str], first: int) -> tuple[Meta | None, AdrError | None]:
        """Parse YAML lines starting at file line `first`."""
        data, err = load_yaml(lines, first)
        return (
            (None, err)
            if data is None
            else (cls(data, key_lines(lines, first), [(lines, first)]), None)
        )

    def merged(self, other: Meta) -> Meta:
        """This metadata with `other`'s keys added (a ```zg block beside front matter); `other`
        wins."""
        return Meta(
            {**self.data, **other.data},
            {**self.key_lines, **other.key_lines},
            self.blocks + other.blocks,
        )

    def item_lines(self, key: str) -> list[int]:
        """File lines of a key's block-list items, from the last YAML block that holds the key."""
        for lines, first in reversed(self.blocks):
            if key in key_lines(lines, first):
                return item_lines(lines, key, first)
        return []


@dataclass
class ZgFields:
    """The fields every format may carry in zg metadata (front matter or a ```zg block)."""

    change_type: str = ""
    supersedes: list[str] = field(default_factory=list)
    superseded_by: list[str] = field(default_factory=list)
    anchors: list[Anchor] = field(default_factory=list)
    anchor_lines: list[int] = field(default_factory=list)
    constraints: list[str] = field(default_factory=list)
    tags: list[str] = field(default_factory=list)


def optional_fields(meta: Meta, errors: list[AdrError]) -> ZgFields:
    """Parse change_type, supersedes/superseded_by, code_anchors, constraints, tags; errors
    collected."""
    data, line_of = meta.data, meta.key_lines.get
    out = ZgFields()
    out.change_type = str(data.get("change_type") or "")
    if out.change_type and out.change_type not in CHANGE_TYPES:
        errors.append(
            AdrError(
                f"unknown change_type {out.change_type!r} (expected one of {', '.join(CHANGE_TYPES)})",
                line_of("change_type", 1),
                "bad_change_type",
            )
        )
    raw_anchors = data.get("code_anchors") or []
    if not isinstance(raw_anchors, list):
        errors.append(AdrError("`code_anchors` must be a list", line_of("code_anchors", 1)))
        raw_anchors = []
    all_item_lines = meta.item_lines("code_anchors")
    if len(all_item_lines) != len(raw_anchors):
        all_item_lines = [line_of("code_anchors", 1)] * len(raw_anchors)
    for item, item_line in zip(raw_anchors, all_item_lines):
        anchor = _field(errors, anchor_from_yaml, item, item_line)
        if anchor is not None:
            out.anchors.append(anchor)
            out.anchor_lines.append(item_line)
    out.supersedes = _field(errors, _ids, data, "supersedes", line_of("supersedes", 1), default=[])
    out.superseded_by = _field(
        errors, _ids, data, "superseded_by", line_of("superseded_by", 1), default=[]
    )
    out.constraints = _field(
        errors, _str_list, data, "constraints", line_of("constraints", 1), default=[]
    )
    out.tags = _field(errors, _str_list, data, "tags", line_of("tags", 1), default=[])
    return out


def date_text(value: Any) -> str:
    """A date field as text (YAML may have parsed it into a date)."""
    value = value or ""
    return value.isoformat() if isinstance(value, (dt.date, dt.datetime)) else str(value)


def read_adr(text: str, path: str) -> tuple[Adr | None, list[AdrError]]:
    """Parse one record in zg's own front-matter format, collecting every field error.

    Fatal problems (no front matter, malformed YAML, not a mapping) give (None, [error]).
    Otherwise each field is validated on its own: an Adr is returned with whatever parsed
    (bad anchors left out, the others kept) plus the list of errors. A missing or malformed
    id still yields an Adr (its `id` is "") so its anchors can be checked; callers keep such
    records out of id-based lookups.
    """
    try:
        fm_lines, body = split_front_matter(text)
    except AdrError as exc:
        return None, [exc]
    meta, err = Meta.parse(fm_lines, 2)
    if meta is None:
        return None, [err] if err else []
    data, line_of = meta.data, meta.key_lines.get
    errors: list[AdrError] = []
    adr_id = str(data.get("id") or "")
    if not adr_id:
        errors.append(AdrError("missing required field `id` (e.g. id: ADR-0001)", 1, "missing_id"))
    elif not ID_RE.match(adr_id):
        errors.append(
            AdrError(f"bad id {data['id']!r} (expected ADR-NNNN)", line_of("id", 1), "bad_id")
        )
        adr_id = ""
    title = data.get("title")
    title = "" if title is None else str(title)
    if not title.strip():
        what = "empty title" if "title" in data else "missing required field `title`"
        errors.append(
            AdrError(
                f"{what} (give the decision a short title)", line_of("title", 1), "empty_title"
            )
        )
    status = str(data.get("status") or "")
    if status not in STATUSES:
        errors.append(
            AdrError(
                f"unknown status {status!r} (expected one of {', '.join(STATUSES)})",
                line_of("status", 1),
                "bad_status",
            )
        )
    opt = optional_fields(meta, errors)
    adr = Adr(
        path=path,
        id=adr_id,
        title=title,
        status=status,
        change_type=opt.change_type,
        date=date_text(data.get("date")),
        supersedes=opt.supersedes,
        superseded_by=opt.superseded_by,
        anchors=opt.anchors,
        constraints=opt.constraints,
        tags=opt.tags,
        body=body,
        meta=data,
        key_lines=meta.key_lines,
        anchor_lines=opt.anchor_lines,
        declared=frozenset(data),
    )
    errors.sort(key=lambda e: e.line)
    return adr, errors


def parse_adr(text: str, path: str) -> Adr:
    """Parse one ADR file; raise the first AdrError (by file line) when anything is wrong."""
    adr, errors = read_adr(text, path)
    if errors:
        raise errors[0]
    assert adr is not None
    return adr
