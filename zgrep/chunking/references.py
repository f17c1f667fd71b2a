"""Identifiers a chunk references, from one tree-sitter query per language."""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from functools import cache

from tree_sitter import Query, QueryCursor, Tree

from zgrep.chunking.definitions import grammar_of, node_text

MAX_REFERENCES = 64

_REFERENCE_TYPES = (
    "identifier", "type_identifier", "field_identifier", "property_identifier",
    "simple_identifier", "constant", "name", "shorthand_property_identifier",
    "command_name", "variable_name", "namespace_identifier",
)
_IDENTIFIER = re.compile(r"[A-Za-z_][\w$]*\Z")
_IGNORED = frozenset({
    "self", "cls", "this", "super", "true", "false", "null", "nil", "None", "True", "False",
    "undefined", "it", "_",
})


@cache
def _query(language: str) -> Query:
    grammar = grammar_of(language)
    kinds = [k for k in _REFERENCE_TYPES if grammar.id_for_node_kind(k, True)]
    return Query(grammar, "[" + " ".join(f"({k})" for k in kinds) + "] @ref")


class ReferenceIndex:
    """Identifier occurrences of a parsed file, by line, for cheap per-chunk lookups."""

    def __init__(self, tree: Tree, language: str) -> None:
        nodes = QueryCursor(_query(language)).captures(tree.root_node).get("ref", [])
        nodes.sort(key=lambda node: node.start_byte)
        self._rows = [node.start_point[0] + 1 for node in nodes]
        self._names = [node_text(node).lstrip("$") for node in nodes]

    def between(self, start: int, end: int, exclude: str = "") -> tuple[str, ...]:
        """Distinct identifiers on lines start..end in order of first appearance, capped."""
        seen: dict[str, None] = {}
        for name in self._names[bisect_left(self._rows, start): bisect_right(self._rows, end)]:
            if (len(name) > 1 and name != exclude and name not in _IGNORED
                    and name not in seen and _IDENTIFIER.match(name)):
                seen[name] = None
                if len(seen) >= MAX_REFERENCES:
                    break
        return tuple(seen)
