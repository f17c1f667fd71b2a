"""What a Python use means: scoped imports (re-exports followed), module attributes, and class
members found along the class's bases in the project. Standard-library and third-party modules are
outside: never guessed."""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass

from zgrep.relations.graph import REEXPORT_DEPTH, Graph, Match, Use
from zgrep.relations.typetext import split_top_level
from zgrep.types import Definition

MAX_BASES = 12
_GUESS_LIMIT = 1  # how many same-named methods an untyped `obj.name` may stand for
_CONTAINER_METHODS = frozenset(
    {
        "get",
        "set",
        "setdefault",
        "update",
        "pop",
        "popitem",
        "items",
        "keys",
        "values",
        "copy",
        "clear",
        "append",
        "extend",
        "insert",
        "remove",
        "index",
        "count",
        "sort",
        "add",
        "discard",
        "join",
        "split",
        "strip",
        "format",
        "encode",
        "decode",
        "read",
        "write",
        "close",
        "open",
        "send",
        "replace",
        "startswith",
        "endswith",
        "lower",
        "upper",
        "readline",
        "flush",
        "seek",
        "tell",
        "__init__",
        "__call__",
        "__enter__",
        "__exit__",
    }
)


@dataclass(frozen=True)
class _Module:
    files: frozenset[str]


@dataclass(frozen=True)
class _Classes:
    """Classes, or instances of them: attributes are looked up along their bases."""

    defs: tuple[Definition, ...]


@dataclass(frozen=True)
class _Function:
    """A function: calling it gives its annotated return type."""

    definition: Definition


@dataclass(frozen=True)
class _Container:
    """A list, set or mapping whose items (values) are `items`."""

    items: Entity


@dataclass(frozen=True)
class _Tuple:
    """A fixed tuple: `parts[i]` is what item i is."""

    parts: tuple[Entity, ...]


_EXTERNAL = "external"  # a module outside the workspace (or something of one)
_UNKNOWN = "unknown"  # an object whose type the source does not say
Entity = _Module | _Classes | _Function | _Container | _Tuple | str
_PART = re.compile(r"(\w*)(\(\))?((?:\[\d*\])*)")
_INDEX = re.compile(r"\[(\d*)\]")
# a container's methods that give one of its items
_ITEM_METHODS = frozenset({"get", "pop", "setdefault"})
# A method annotated `-> Self` (or found returning `cls(...)` / `self`) gives an instance of the
# class it was looked up on, so `cache = Cache.read(mode)` makes `cache.write()` a call of
# Cache.write.
SELF_TYPES = frozenset({"Self", "typing.Self", "t.Self", "te.Self", "typing_extensions.Self"})
# Match.via of `obj.name` whose `obj` has no type the source says
UNKNOWN_RECEIVER = "unknown_receiver"
MAX_HOPS = 6


def resolve(graph: Graph, use: Use) -> Match | None:
    """The definitions a Python use resolves to, or None."""
    if not use.qualifier:
        if use.home is not None:
            found = [d for d in graph.defs(use.name) if d.path == use.path and d.scope == use.home]
            return Match(found, True, "local") if found else None
        return _imported(graph, use.path, use.name, use.caller_qualname)
    if use.qualifier == "super()":
        cls = _class_at(graph, use.path, use.home or "")
        found = _member(graph, cls, use.name, True) if cls else []
        return Match(found, True, "self") if found else None
    entity: Entity = _UNKNOWN
    if use.qualifier != "?":
        entity = _expression(graph, use.path, use.qualifier, use.caller_qualname, use.home, 0)
    if isinstance(entity, _Module):
        found = graph.follow(use.name, set(entity.files), REEXPORT_DEPTH, module_level=True)
        return Match(found, True, "import") if found else None
    if isinstance(entity, _Classes):
        found = list(
            dict.fromkeys(d for cls in entity.defs for d in _member(graph, cls, use.name, False))
        )
        return Match(found, True, "self" if use.qualifier == "self" else "class") if found else None
    if entity != _UNKNOWN:
        return None
    guessed = _guess(graph, use)
    if guessed is None and use.qualifier != "super()":
        return Match([], False, UNKNOWN_RECEIVER)
    return guessed


def _guess(graph: Graph, use: Use) -> Match | None:
    """A method called on an object of unknown type: the one project class method of that name,
    unresolved."""
    if use.kind != "call" or use.name in _CONTAINER_METHODS:
        return None
    candidates = [
        d
        for d in graph.defs(use.name)
        if d.scope and d.kind == "function" and graph.member_of_type(d)
    ]
    if not candidates or len({d.qualname for d in candidates}) > _GUESS_LIMIT:
        return None
    return Match(candidates, False, "member")


def _visible(graph: Graph, path: str, caller: str) -> list[tuple[str, str, str, str]]:
    """The imports a definition sees: the file's, and those made in it or around it (innermost
    first)."""
    found = [
        i
        for i in graph.imports(path)
        if not i[3] or caller == i[3] or caller.startswith(i[3] + ".")
    ]
    return sorted(found, key=lambda i: -len(i[3]))


def _imported(graph: Graph, path: str, name: str, caller: str) -> Match | None:
    """What a bare name imported into `path` (or a star import) means; an import of a project module
    that is gone gives every module-level definition of the name, unresolved."""
    starred: set[str] = set()
    for module, imported, alias, _ in _visible(graph, path, caller):
        if imported == "*":
            starred |= graph.files_of(path, module)
        elif alias == name:
            if not imported:
                return None
            files = graph.files_of(path, module)
            found = graph.follow(imported, files, REEXPORT_DEPTH, module_level=True)
            if found:
                return Match(found, True, "import")
            if files or not _in_project(graph, path, module):
                return None
            candidates = [d for d in graph.defs(imported) if not d.scope]
            return Match(candidates, False, "unresolved_import") if candidates else None
    found = graph.follow(name, starred, 0, module_level=True) if starred else []
    return Match(found, True, "import") if found else None


def _in_project(graph: Graph, path: str, module: str) -> bool:
    """Whether a module is meant to be the project's: relative, or under a package the project has."""
    if module.startswith("."):
        return True
    top = module.split(".", 1)[0]
    return bool(graph.files_of(path, top))


def _expression(
    graph: Graph, path: str, text: str, caller: str, home: str | None, hops: int
) -> Entity:
    """What a dotted expression (`mod.sub`, `Class`, `self.app`, `get_ctx().obj`, `self.items[]`)
    names in `path`; `[T]` is a container of T."""
    if hops > MAX_HOPS:
        return _UNKNOWN
    if text.startswith("[") and text.endswith("]"):
        return _Container(_expression(graph, path, text[1:-1], caller, home, hops + 1))
    if text.startswith("(") and text.endswith(")"):
        return _Tuple(
            tuple(
                _expression(graph, path, part, caller, home, hops + 1) if part else _UNKNOWN
                for part in split_top_level(text[1:-1], ",")
            )
        )
    parts = text.split(".")
    match = _PART.fullmatch(parts[0])
    if match is None or not match.group(1):
        return _UNKNOWN
    head, rest = match.group(1), [_suffix(match), *parts[1:]]
    if head == "self" and home is not None:
        cls = _class_at(graph, path, home)
        return _walk(graph, _Classes((cls,)), rest, hops) if cls else _UNKNOWN
    for module, imported, alias, _ in _visible(graph, path, caller):
        if imported == "*":
            continue
        if not imported and (text == alias or text.startswith(alias + ".")):
            files = graph.files_of(path, module)
            return (
                _walk(graph, _Module(frozenset(files)), parts[len(alias.split(".")) :], hops)
                if files
                else _EXTERNAL
            )
        if imported and head == alias:
            files = graph.files_of(path, module)
            if not files:
                return _EXTERNAL
            return _walk(
                graph, _Module(frozenset(files)), [imported + _suffix(match), *parts[1:]], hops
            )
    local = [d for d in graph.defs(head) if d.path == path and not d.scope]
    return _walk(graph, _entity(graph, local, hops), rest, hops) if local else _UNKNOWN


def _suffix(match: re.Match[str]) -> str:
    return (match.group(2) or "") + (match.group(3) or "")


def _entity(graph: Graph, defs: list[Definition], hops: int) -> Entity:
    """What a name bound to these definitions is: classes, a function, or the type of a typed value."""
    classes = tuple(d for d in defs if d.kind == "class")
    if classes:
        return _Classes(classes)
    functions = [d for d in defs if d.kind == "function"]
    if functions:
        return _Function(functions[-1])
    typed = next((d for d in defs if d.type), None)
    if typed is None:
        return _UNKNOWN
    return _typed(graph, typed, typed.type, hops)


def _typed(graph: Graph, owner: Definition, text: str, hops: int) -> Entity:
    """A type written in `owner`'s file (attributes of a class may say `self.x`)."""
    home = owner.scope if owner.kind != "class" else owner.qualname
    return _expression(graph, owner.path, text, owner.scope, home or None, hops + 1)


def _call(graph: Graph, entity: Entity, hops: int) -> Entity:
    """The result of calling an entity: an instance of a class, a function's annotated return type."""
    if isinstance(entity, _Classes):
        return entity
    if isinstance(entity, _Function) and entity.definition.type:
        return _typed(graph, entity.definition, entity.definition.type, hops)
    return _EXTERNAL if entity == _EXTERNAL else _UNKNOWN


def _walk(graph: Graph, entity: Entity, rest: list[str], hops: int) -> Entity:
    """Follow attribute names (each maybe called `()` and indexed `[]`, `[0]`) from what the head
    named."""
    for raw in rest:
        match = _PART.fullmatch(raw)
        if match is None:
            return _UNKNOWN
        part, called = match.group(1), bool(match.group(2))
        if isinstance(entity, _Module) and part:
            sub = _submodule(graph, entity.files, part)
            if sub and not called:
                entity = _Module(frozenset(sub))
            else:
                defs = graph.follow(part, set(entity.files), REEXPORT_DEPTH, module_level=True)
                entity = _entity(graph, defs, hops) if defs else _UNKNOWN
        elif isinstance(entity, _Classes) and part:
            defs = list(
                dict.fromkeys(d for cls in entity.defs for d in _member(graph, cls, part, False))
            )
            member = _entity(graph, defs, hops) if defs else _UNKNOWN
            if called and isinstance(member, _Function) and member.definition.type in SELF_TYPES:
                called = False  # an instance of the classes the method was looked up on
            else:
                entity = member
        elif isinstance(entity, _Container) and part in _ITEM_METHODS and called:
            entity, called = entity.items, False
        elif isinstance(entity, _Container) and part in ("values", "copy") and called:
            called = False
        elif part:
            return _EXTERNAL if entity == _EXTERNAL else _UNKNOWN
        if called:
            entity = _call(graph, entity, hops)
        for index in _INDEX.findall(match.group(3)):
            entity = _item(entity, index)
    return entity


def _item(entity: Entity, index: str) -> Entity:
    """`entity[index]` (index "" = any item, as iteration gives)."""
    if isinstance(entity, _Container):
        return entity.items
    if isinstance(entity, _Tuple) and index and int(index) < len(entity.parts):
        return entity.parts[int(index)]
    return _UNKNOWN


def _submodule(graph: Graph, files: frozenset[str], name: str) -> set[str]:
    """`name` as a module inside the package whose `__init__` is among `files`."""
    found: set[str] = set()
    for path in files:
        if posixpath.basename(path) in ("__init__.py", "__init__.pyi"):
            base = posixpath.join(posixpath.dirname(path), name)
            found |= {
                p
                for p in (f"{base}.py", f"{base}.pyi", f"{base}/__init__.py")
                if p in graph.files.languages
            }
    return found


def _class_at(graph: Graph, path: str, qualname: str) -> Definition | None:
    scope, _, name = qualname.rpartition(".")
    return next(
        (d for d in graph.defs(name) if d.path == path and d.scope == scope and d.kind == "class"),
        None,
    )


def _member(graph: Graph, cls: Definition, name: str, skip_self: bool) -> list[Definition]:
    """`name` as looked up on a class: the first class along its bases (itself first unless super)
    defining it."""
    for klass in _mro(graph, cls)[1 if skip_self else 0 :]:
        found = [d for d in graph.defs(name) if d.path == klass.path and d.scope == klass.qualname]
        if found:
            return found
    return []


def _mro(graph: Graph, cls: Definition) -> list[Definition]:
    """The class and its project bases, depth first, each once (close to Python's order for simple
    trees), at most MAX_BASES: a walk with its own stack, so no chain of bases in a workspace file
    can exhaust Python's, and cycles end at the first repeat."""
    key = ("mro", cls)
    if key not in graph.cache:
        order = [cls]
        pending = list(reversed(_bases(graph, cls)))
        while pending and len(order) < MAX_BASES:
            klass = pending.pop()
            if klass not in order:
                order.append(klass)
                pending.extend(reversed(_bases(graph, klass)))
        graph.cache[key] = order
    result: list[Definition] = graph.cache[key]
    return result


def _bases(graph: Graph, cls: Definition) -> list[Definition]:
    """The project classes a class names as its bases."""
    found: list[Definition] = []
    for use in graph.uses(
        "path = ? AND caller_start = ? AND caller_name = ? AND kind = 'inherit'",
        (cls.path, cls.start, cls.name),
    ):
        if use.qualifier:
            entity = _expression(
                graph, use.path, f"{use.qualifier}.{use.name}", cls.qualname, None, 0
            )
            found += list(entity.defs) if isinstance(entity, _Classes) else []
        elif use.home is not None:
            found += [
                d
                for d in graph.defs(use.name)
                if d.path == use.path and d.scope == use.home and d.kind == "class"
            ]
        else:
            match = _imported(graph, use.path, use.name, cls.qualname)
            found += (
                [d for d in match.defs if d.kind == "class"]
                if match is not None and match.resolved
                else []
            )
    return [d for d in found if d != cls]
