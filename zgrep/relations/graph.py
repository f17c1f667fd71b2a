"""Read-only view of one workspace's relations: definitions, imports, references, and what a
reference means in languages without a resolver of their own (Python's is `pyresolve`). A reference
counts for a definition in file F when the referencing file defines the name itself (or its package
does), imports it from F's module (following re-exports), or, failing both, when exactly one file
defines the name; anything else is reported with resolved=false."""

from __future__ import annotations

import posixpath
import sqlite3
from dataclasses import dataclass
from typing import Any

from zgrep.relations.resolve import FileSet, local_files, module_files, resolver, submodule
from zgrep.qualname import qualify
from zgrep.types import Definition

SELF_NAMES = frozenset({"self", "this", "cls", "Self", "super"})
REEXPORT_DEPTH = 3
_STRENGTH = ("call", "inherit", "decorator", "reference", "annotation", "import")


@dataclass(frozen=True)
class Use:
    """A row of `refs`: a name used in `path` by the definition `caller_*` (name "" = module code)."""

    path: str
    name: str
    qualifier: str
    line: int
    kind: str
    home: str | None
    caller_name: str
    caller_scope: str
    caller_kind: str
    caller_start: int
    caller_end: int

    @property
    def caller_qualname(self) -> str:
        return qualify(self.caller_scope, self.caller_name)


# a `Definition`'s fields, in order
DEF_COLUMNS = "name, kind, start_line, end_line, scope, path, type"
USE_COLUMNS = (
    "path, name, qualifier, line, kind, home, caller_name, caller_scope, caller_kind, caller_start, "
    "caller_end"
)


@dataclass(frozen=True)
class Target:
    """What a reference means: the symbol's name and the files it may live in (None = anywhere)."""

    symbol: str
    files: set[str] | None
    via: str


@dataclass(frozen=True)
class Match:
    """The definitions a reference resolves to."""

    defs: list[Definition]
    resolved: bool
    via: str


def strongest(kinds: set[str]) -> str:
    """The edge kind that says most about a caller (a call over a mere reference)."""
    return min(kinds, key=_STRENGTH.index)


class Graph:
    """Read-only view of one workspace's relations with per-query caches."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db
        self.files = FileSet(dict(db.execute("SELECT path, language FROM files")))
        self._defs: dict[str, list[Definition]] = {}
        self._imports: dict[str, list[tuple[str, str, str, str]]] = {}
        # query.meaning's cache
        self.matches: dict[tuple[str, str, str, str | None, str], Match | None] = {}
        # followed re-exports, module files, the Python resolver's classes and bases
        self.cache: dict[Any, Any] = {}

    def defs(self, name: str) -> list[Definition]:
        """Every definition named `name`."""
        if name not in self._defs:
            self._defs[name] = [
                Definition(*row)
                for row in self.db.execute(
                    f"SELECT {DEF_COLUMNS} FROM defs WHERE name = ? ORDER BY path, start_line",
                    (name,),
                )
            ]
        return self._defs[name]

    def defs_in(self, path: str) -> list[Definition]:
        """Every definition of one file, in line order."""
        return [
            Definition(*row)
            for row in self.db.execute(
                f"SELECT {DEF_COLUMNS} FROM defs WHERE path = ? ORDER BY start_line", (path,)
            )
        ]

    def imports(self, path: str) -> list[tuple[str, str, str, str]]:
        """(module, name, alias, scope) of the imports of `path`."""
        if path not in self._imports:
            self._imports[path] = list(
                self.db.execute(
                    "SELECT module, name, alias, scope FROM imports WHERE path = ? ORDER BY line",
                    (path,),
                )
            )
        return self._imports[path]

    def uses(self, where: str, params: tuple[Any, ...]) -> list[Use]:
        """Rows of `refs` matching an SQL condition."""
        return [
            Use(*row)
            for row in self.db.execute(
                f"SELECT {USE_COLUMNS} FROM refs WHERE {where} ORDER BY path, line", params
            )
        ]

    # ----- other languages ---------------------------------------------------------------------------
    def _target(self, path: str, name: str, qualifier: str) -> Target | None:
        """Where the name used in `path` (as `qualifier.name` when qualified) is defined."""
        language = self.files.languages.get(path, "")
        if qualifier and qualifier != "?":
            if qualifier in SELF_NAMES:
                return Target(name, local_files(self.files, path), "local")
            for module, imported, alias, _ in self.imports(path):
                if alias and (
                    qualifier == alias or qualifier.startswith((alias + ".", alias + "::"))
                ):
                    rest = qualifier[len(alias) :]
                    whole = submodule(language, module, imported) if imported else module
                    found = module_files(self.files, path, whole + rest) if whole else set()
                    if imported and not rest:
                        found |= module_files(self.files, path, module)
                    return Target(name, found, "import")
            found = module_files(self.files, path, qualifier)
            return Target(name, found, "import") if found else Target(name, None, "member")
        for module, imported, alias, _ in self.imports(path):
            if alias == name and imported not in ("", "*"):
                symbol = name if imported == "default" else imported
                return Target(symbol, module_files(self.files, path, module), "import")
            if alias == name:
                return None  # the module object itself
        local = local_files(self.files, path)
        if any(d.path in local for d in self.defs(name)):
            return Target(name, local, "local")
        starred: set[str] = set()
        for module, imported, _, _ in self.imports(path):
            if imported == "*":
                starred |= module_files(self.files, path, module)
        if starred and any(d.path in starred for d in self.defs(name)):
            return Target(name, starred, "import")
        return Target(name, None, "fallback")

    def generic(self, use: Use) -> Match | None:
        """What a use means in a language without its own resolver."""
        target = self._target(use.path, use.name, use.qualifier)
        if target is None:
            return None
        candidates = self.defs(target.symbol)
        # `obj.name` of an unknown object: a method of some class, when called
        if target.via == "member":
            candidates = (
                [d for d in candidates if self.member_of_type(d)] if use.kind == "call" else []
            )
            if len({(d.path, d.qualname) for d in candidates}) > 1:
                return Match(candidates, False, "ambiguous")
        # this.name: the enclosing class first
        elif target.via == "local" and use.qualifier in SELF_NAMES:
            own = [
                d
                for d in candidates
                if d.path == use.path
                and d.scope
                and (
                    use.caller_qualname == d.scope or use.caller_qualname.startswith(d.scope + ".")
                )
            ]
            candidates = own or candidates
        if not candidates and not (target.files and target.via == "import"):
            return None  # (an imported name may be defined under another: a renamed re-export)
        if target.files:
            found = self.follow(target.symbol, target.files, REEXPORT_DEPTH)
            return Match(found, True, target.via) if found else None
        if target.files is not None:  # an import we could not place: never guess silently
            return Match(candidates, False, "unresolved_import")
        resolved = len({d.path for d in candidates}) == 1
        return Match(candidates, resolved, "unique" if resolved else "ambiguous")

    def member_of_type(self, definition: Definition) -> bool:
        """Whether a definition is a member of a class, interface or similar type (not a nested
        function)."""
        key = ("types", definition.path)
        if key not in self.cache:
            self.cache[key] = {
                d.qualname
                for d in self.defs_in(definition.path)
                if d.kind not in ("function", "value")
            }
        return definition.scope in self.cache[key]

    def follow(
        self, symbol: str, files: set[str] | frozenset[str], depth: int, module_level: bool = False
    ) -> list[Definition]:
        """Definitions of `symbol` in `files`, else where those files re-export it from, under the
        name it has there (`export { parse as parseUrl } from './url'` leads to `parse` in url.ts).
        `module_level` keeps top-level definitions and imports only (Python's resolver). Memoised.
        """
        key = ("follow", symbol, frozenset(files), depth, module_level)
        if key not in self.cache:
            self.cache[key] = self._follow(symbol, frozenset(files), depth, module_level)
        found: list[Definition] = self.cache[key]
        return found

    def _follow(
        self, symbol: str, files: frozenset[str], depth: int, module_level: bool
    ) -> list[Definition]:
        found = [d for d in self.defs(symbol) if d.path in files and not (module_level and d.scope)]
        if found or depth == 0:
            return found
        for path in sorted(files):
            for module, imported, alias, scope in self.imports(path):
                if (module_level and scope) or not (
                    imported == "*" or (alias == symbol and imported)
                ):
                    continue
                onward = self.files_of(path, module) - files
                name = symbol if imported in ("*", "default") else imported
                found += self.follow(name, onward, depth - 1, module_level) if onward else []
        return list(dict.fromkeys(found))

    def files_of(self, path: str, module: str) -> set[str]:
        """The project files a module named in `path` is (memoised `module_files`, by what it reads
        of the importer: its language and folder, and its own name when the resolver reads it:
        `super` in a Rust mod.rs is the folder's parent)."""
        language = self.files.languages.get(path, "")
        key = (
            "module",
            module,
            language,
            path if resolver(language).by_name else posixpath.dirname(path),
        )
        if key not in self.cache:
            self.cache[key] = module_files(self.files, path, module)
        files: set[str] = self.cache[key]
        return files
