"""What extraction records per file: definitions (`zgrep.types.Definition`), references (with their
edge kind) and imports."""

from __future__ import annotations

from dataclasses import dataclass, field

from zgrep.types import Definition

EDGE_KINDS = ("call", "reference", "import", "annotation", "decorator", "inherit")


@dataclass(frozen=True)
class Ref:
    """An identifier used on `line`, with its object (`m` in `m.f`) and the definition around it.

    kind: one of EDGE_KINDS. home: where the name is bound when the file says so (Python: the scope
    of the definition a bare name means, the enclosing class of `self.f`/`super().f`); None =
    resolve by imports."""

    name: str
    qualifier: str
    line: int
    caller: Definition | None
    kind: str = "reference"
    home: str | None = None


@dataclass(frozen=True)
class Import:
    """`module` as written; `name` "" binds the module itself, "*" everything; `alias` the local
    name; `scope` the definition it is made in ("" the whole file)."""

    module: str
    name: str
    alias: str
    line: int
    scope: str = ""


@dataclass
class FileRelations:
    """Everything the relations store keeps for one file."""

    path: str
    language: str
    lines: int
    defs: list[Definition] = field(default_factory=list)
    refs: list[Ref] = field(default_factory=list)
    imports: list[Import] = field(default_factory=list)
