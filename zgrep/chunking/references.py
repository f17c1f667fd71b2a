"""The tree-sitter query matching every identifier node of a language (relations extraction reads
it)."""

from __future__ import annotations

from functools import cache

from tree_sitter import Query

from zgrep.chunking.definitions import grammar_of
from zgrep.languages.registry import rel_spec

_REFERENCE_TYPES = (
    "identifier",
    "type_identifier",
    "field_identifier",
    "property_identifier",
    "simple_identifier",
    "constant",
    "name",
    "shorthand_property_identifier",
    "command_name",
    "variable_name",
    "namespace_identifier",
    "IDENTIFIER",
)


@cache
def identifier_query(language: str) -> Query:
    """One capture (`ref`) per identifier-like node kind the grammar has (with the language's own)."""
    grammar = grammar_of(language)
    spec = rel_spec(language)
    extra = sorted(spec.identifiers) if spec is not None else []
    kinds = [k for k in (*_REFERENCE_TYPES, *extra) if grammar.id_for_node_kind(k, True)]
    return Query(grammar, "[" + " ".join(f"({k})" for k in kinds) + "] @ref")
