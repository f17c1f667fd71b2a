"""Type texts as relations keep them: `Cls`, `mod.Cls`, `[T]` (a container of T), `(A,B)` (a tuple),
`f()` (what a call returns), `x[]`/`x[0]` (an item); read from annotations by extraction, followed
by resolution."""

from __future__ import annotations

import re

TYPE_NAME = re.compile(r"[A-Za-z_][\w.]*")
_GENERIC = re.compile(r"([\w.]+)\[(.+)\]")
_SEQUENCES = frozenset(
    {
        "list",
        "List",
        "Sequence",
        "MutableSequence",
        "Iterable",
        "Iterator",
        "Collection",
        "set",
        "Set",
        "frozenset",
        "FrozenSet",
        "AbstractSet",
        "MutableSet",
        "Generator",
        "deque",
    }
)
_MAPPINGS = frozenset({"dict", "Dict", "Mapping", "MutableMapping", "OrderedDict", "defaultdict"})


def type_of(text: str) -> str:
    """The class an annotation names (`Optional["Context"]` -> Context), `[T]` for a container of T
    (`list[T]`, `dict[str, T]`, `cabc.Sequence[T]`), `(A,B)` for `tuple[A, B]`, "" when it names
    none."""
    text = re.sub(r"\s+", "", text).strip("\"'")
    parts = [p for p in split_top_level(text, "|") if p not in ("None", "")]
    if len(parts) != 1:
        return ""
    text = parts[0].strip("\"'")
    match = _GENERIC.fullmatch(text)
    if match is None:
        return text if TYPE_NAME.fullmatch(text) else ""
    outer, args = match.group(1).rsplit(".", 1)[-1], split_top_level(match.group(2), ",")
    if outer in ("Optional", "Type", "type", "Annotated", "ClassVar", "Final"):
        return type_of(args[0])
    if outer in ("tuple", "Tuple") and args[-1:] != ["..."]:
        return "(" + ",".join(type_of(a) for a in args) + ")"
    if outer in _SEQUENCES or outer in ("tuple", "Tuple"):
        inner = type_of(args[0])
    elif outer in _MAPPINGS and len(args) == 2:
        inner = type_of(args[1])
    else:
        return ""
    return f"[{inner}]" if inner and not inner.startswith("[") else ""


def split_top_level(text: str, separator: str) -> list[str]:
    """`text` split at `separator`s outside brackets."""
    parts, depth, start = [], 0, 0
    for index, char in enumerate(text):
        depth += {"[": 1, "]": -1, "(": 1, ")": -1}.get(char, 0)
        if char == separator and depth == 0:
            parts.append(text[start:index])
            start = index + 1
    return [*parts, text[start:]]
