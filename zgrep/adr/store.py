"""Load every ADR in the configured directory of a tree; find them by id or by code path."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from zgrep.adr.formats import read_record
from zgrep.adr.model import Adr, AdrError, normalize_id
from zgrep.adr.trees import IndexTree, WorkTree

FILE_RE = re.compile(r"^(\d{4,})-[^/]*\.md$")
NOT_RECORDS_RE = re.compile(r"^(?:readme|index|(?:adr-)?template(?:-[\w-]*)?)\.md$", re.IGNORECASE)


@dataclass
class AdrSet:
    """The ADRs of one tree plus every front-matter error found in its files.

    `adrs` holds the records with a valid id (even when another field is invalid: its errors are
    in `errors`); `unnamed` the records whose id is missing or malformed, kept only so their
    anchors are still checked.
    """

    adrs: list[Adr] = field(default_factory=list)
    errors: list[tuple[str, AdrError]] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    unnamed: list[Adr] = field(default_factory=list)

    def get(self, adr_id: str) -> Adr:
        """The ADR with this id (any spelling normalize_id accepts); KeyError if absent."""
        want = normalize_id(adr_id)
        for adr in self.adrs:
            if adr.id == want:
                return adr
        raise KeyError(f"no ADR {want}")

    def next_number(self) -> int:
        """One more than the highest number used by an id or a file name."""
        nums = [int(a.id[4:]) for a in self.adrs]
        nums += [int(m.group(1)) for f in self.files if (m := FILE_RE.match(f.rsplit("/", 1)[-1]))]
        return max(nums, default=0) + 1


def anchor_covers(anchor_path: str, path: str) -> bool:
    """An anchor on a file covers that file; on a directory, everything below it."""
    anchor_path = anchor_path.strip("/")
    return path == anchor_path or path.startswith(anchor_path + "/")


def load(tree: WorkTree | IndexTree, adr_dir: str) -> AdrSet:
    """Parse every `*.md` directly in `adr_dir` except README, index and template files (MADR's
    `adr-template*.md` too), in whichever format each is written."""
    out = AdrSet()
    for rel in tree.list_dir(adr_dir):
        name = rel.rsplit("/", 1)[-1]
        if not name.endswith(".md") or NOT_RECORDS_RE.match(name):
            continue
        out.files.append(rel)
        data = tree.read(rel) or b""
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            out.errors.append((rel, AdrError("not UTF-8 text", 1)))
            continue
        adr, errors = read_record(text, rel)
        out.errors += [(rel, err) for err in errors]
        if adr is not None:
            (out.adrs if adr.id else out.unnamed).append(adr)
    complete_links(out.adrs)
    return out


def complete_links(adrs: list[Adr]) -> None:
    """Fill in the back links a foreign-format record cannot write itself: MADR's successor rarely
    says "Supersedes", and an amendment link names only one side. zg's own records must say both
    sides."""
    by_id = {a.id: a for a in adrs}
    for adr in adrs:
        for attr, back in (
            ("superseded_by", "supersedes"),
            ("amends", "amended_by"),
            ("amended_by", "amends"),
        ):
            for other_id in getattr(adr, attr):
                other = by_id.get(other_id)
                if (
                    other is not None
                    and other.format != "zg"
                    and adr.id not in getattr(other, back)
                ):
                    getattr(other, back).append(adr.id)
