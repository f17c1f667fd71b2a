"""The generic definition walker: one tree-sitter walk driven by a language's `ChunkSpec`."""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from typing import cast

from tree_sitter import Language, Node, Parser, Tree
from tree_sitter_language_pack import SupportedLanguage, get_language, get_parser

from zgrep.languages.registry import chunk_spec
from zgrep.languages.spec import ChunkSpec
from zgrep.qualname import qualify
from zgrep.types import Definition

IDENT_TYPES = frozenset(
    {
        "identifier",
        "type_identifier",
        "field_identifier",
        "property_identifier",
        "simple_identifier",
        "constant",
        "name",
        "word",
        "namespace_identifier",
        "variable_name",
        "private_property_identifier",
        "shorthand_property_identifier",
        "destructor_name",
        "operator_name",
        "package_identifier",
        "variable",  # (Haskell names a function by a `variable`)
        "IDENTIFIER",  # (Zig's grammar spells node types in capitals)
    }
)
_QUALIFIED_TYPES = frozenset(
    {
        "qualified_identifier",
        "scoped_identifier",
        "scoped_type_identifier",
        "dot_index_expression",
        "method_index_expression",
        "user_type",
        "qualified_name",
        "namespace_name",
        "dotted_name",
        "scope_resolution",
        "string",
        "string_literal",
    }
)
_NAME_FIELDS = ("name", "declarator", "left", "pattern", "property", "bound_identifier")
_VALUE_FIELDS = ("value", "right", "default_value")
_DESCEND = re.compile(r"declar|spec|element|binding|pattern|variable|list|assignment")
_SKIP = re.compile(r"modifier|comment|annotation|attribute|visibility|_kind$")
_FUNCTION_VALUES = {
    "arrow_function": "function",
    "function_expression": "function",
    "function": "function",
    "generator_function": "function",
    "lambda": "function",
    "lambda_expression": "function",
    "function_definition": "function",
    "closure_expression": "function",
    "anonymous_function": "function",
    "class": "class",
    "class_expression": "class",
}
# `const x = require("x")`, `const std = @import("std")`
_IMPORT_VALUE = re.compile(r"=\s*(?:require\b|@import\b)")
_MAX_DEPTH = 6
_PARSERS = threading.local()


@dataclass(frozen=True)
class DefinitionNode(Definition):
    """A definition as the walker finds it, with its place in the tree.

    `start` includes decorators/export wrappers, `lead` also the comments and attributes directly
    above, `head` is the line of the definition keyword itself; `children` are the definitions
    nested in it. `is_symbol` False: a named scope that is not itself a symbol (a Rust impl block);
    `is_value`: a declaration of data, not of a function or class."""

    head: int = 0
    lead: int = 0
    is_symbol: bool = True
    is_value: bool = False
    children: tuple[DefinitionNode, ...] = ()


def end_line(node: Node) -> int:
    """1-based inclusive last line of a node (a trailing newline does not count)."""
    row, col = node.end_point
    return row if col == 0 and row > node.start_point[0] else row + 1


def parser_for(language: str) -> Parser | None:
    """The tree-sitter parser for a language with a grammar (cached per thread), or None."""
    spec = chunk_spec(language)
    if spec is None:
        return None
    cache: dict[str, Parser] = _PARSERS.__dict__.setdefault("by_language", {})
    if language not in cache:
        cache[language] = get_parser(cast(SupportedLanguage, spec.grammar))
    return cache[language]


def grammar_of(language: str) -> Language:
    """The tree-sitter grammar of a language with a grammar."""
    return get_language(cast(SupportedLanguage, _spec(language).grammar))


def _spec(language: str) -> ChunkSpec:
    spec = chunk_spec(language)
    if spec is None:
        raise ValueError(f"no grammar for {language!r}")
    return spec


def node_text(node: Node) -> str:
    """A node's source text (undecodable bytes replaced)."""
    return (node.text or b"").decode("utf-8", errors="replace")


def parse(text: str, language: str) -> Tree:
    """Parse text with the language's grammar (a language with one). The last tree of each
    thread is kept, so chunking and relation extraction of one file string parse it once."""
    last = getattr(_PARSERS, "last", None)
    if last is not None and last[0] is text and last[1] == language:
        cached: Tree = last[2]
        return cached
    parser = parser_for(language)
    if parser is None:
        raise ValueError(f"no grammar for {language!r}")
    tree = parser.parse(text.encode("utf-8", errors="replace"))
    _PARSERS.last = (text, language, tree)
    return tree


def _split_qualified(text: str) -> tuple[str, str]:
    """`ns::C::out` -> ("out", "ns.C"); quotes and `$` dropped."""
    parts = [p for p in re.split(r"::|\.|:|->", text.strip().strip("\"'`")) if p]
    if not parts:
        return "", ""
    name = "".join(parts[-1].split()).lstrip("$@")
    return name, ".".join("".join(p.split()) for p in parts[:-1])


def _resolve(node: Node, loose: bool, depth: int = 0) -> tuple[str, str] | None:
    """Name (and qualifier) of a definition or declaration node; None when it has none.

    Definitions (`loose`) may take a direct identifier child (Kotlin); declarations only
    follow name fields and declarator-like children, so `x[0] = 1` names nothing.
    """
    if node.type in IDENT_TYPES or node.type in _QUALIFIED_TYPES:
        name, qual = _split_qualified(node_text(node))
        return (name, qual) if name else None
    if depth >= _MAX_DEPTH:
        return None
    for name_field in _NAME_FIELDS:
        child = node.child_by_field_name(name_field)
        if child is not None:
            return _resolve(child, loose, depth + 1)
    if not loose and not _DESCEND.search(node.type):
        return None
    for index, child in enumerate(node.named_children):
        if _SKIP.search(child.type) or node.field_name_for_named_child(index) is not None:
            continue
        if child.type in IDENT_TYPES or (not loose and _DESCEND.search(child.type)):
            return _resolve(child, loose, depth + 1)
    return None


def _value_kind(node: Node, spec: ChunkSpec) -> tuple[str, Node | None]:
    """ "function"/"class" when a declaration assigns a function or class, else "value"; with the
    body of a class assigned as a value (Zig's `const Parser = struct {...}`)."""
    level = [node]
    for _ in range(4):
        following: list[Node] = []
        for current in level:
            if current.type in spec.value_kinds:
                return spec.value_kinds[
                    current.type
                ], current if current.type in spec.containers else None
            declarator = current.child_by_field_name("declarator")
            while declarator is not None:
                if declarator.type == "function_declarator":
                    return "function", None
                declarator = declarator.child_by_field_name("declarator")
            for value_field in _VALUE_FIELDS:
                value = current.child_by_field_name(value_field)
                if value is not None:
                    if value.type == "expression_list" and value.named_child_count == 1:
                        value = value.named_children[0]
                    return _FUNCTION_VALUES.get(value.type, "value"), None
            following.extend(current.named_children)
        level = following
    return "value", None


def _kind(node: Node, spec: ChunkSpec) -> str:
    """The table's kind, unless a direct child hints otherwise (never for functions)."""
    kind = spec.defs[node.type]
    if spec.hints and kind != "function":
        for child in node.children:
            if child.type in spec.hints:
                return spec.hints[child.type]
    return kind


def _body(node: Node, spec: ChunkSpec) -> Node | None:
    """The container node holding a definition's members."""
    body = node.child_by_field_name("body")
    if body is not None and body.type in spec.containers:
        return body
    for child in node.named_children:
        if child.type in spec.containers:
            return child
    return None


def _is_comment(node: Node, spec: ChunkSpec) -> bool:
    return "comment" in node.type or node.type in spec.prefixes


def _lead(outer: Node, start: int, spec: ChunkSpec) -> int:
    """First line of the comments/attributes directly above a definition (no blank line)."""
    lead = start
    node = outer
    prev = node.prev_named_sibling
    while (
        prev is None
        and node.parent is not None
        and node.parent.start_point[0] == node.start_point[0]
    ):
        # the first statement of a body that opens on its line (Ruby's `body_statement`)
        node = node.parent
        prev = node.prev_named_sibling
    if prev is not None and not _is_comment(prev, spec) and prev.named_child_count:
        # a comment the grammar files under what precedes (Haskell's imports)
        last = prev.named_children[-1]
        prev = last if _is_comment(last, spec) and end_line(last) >= lead - 1 else prev
    while prev is not None and _is_comment(prev, spec) and end_line(prev) >= lead - 1:
        before = prev.prev_named_sibling
        if before is not None and end_line(before) >= prev.start_point[0] + 1:
            break
        lead = prev.start_point[0] + 1
        prev = before
    return lead


class _Walker:
    """Collects the definitions of one tree, nested by scope."""

    def __init__(self, spec: ChunkSpec) -> None:
        self.spec = spec

    def level(self, container: Node, scope: str) -> list[DefinitionNode]:
        found: list[DefinitionNode] = []
        for child in container.named_children:
            self._item(child, scope, found)
        return found

    def _item(self, child: Node, scope: str, found: list[DefinitionNode]) -> None:
        spec = self.spec
        if child.type == "ERROR" or child.type in spec.containers:
            for grandchild in child.named_children:
                self._item(grandchild, scope, found)
            return
        if child.type in spec.wrappers:
            inner = [
                c
                for c in child.named_children
                if c.type in spec.defs
                or c.type in spec.values
                or c.type in spec.wrappers
                or c.type in spec.assignments
            ]
            if len(inner) == 1:
                self._definition(inner[0], child, scope, found)
            else:
                for node in inner:
                    self._definition(node, node, scope, found)
            return
        if child.type in spec.defs or child.type in spec.values:
            self._definition(child, child, scope, found)
        elif spec.calls and child.type == "call":
            self._call_definition(child, scope, found)

    def _call_definition(self, node: Node, scope: str, found: list[DefinitionNode]) -> None:
        """A definition made by a macro call (`defmodule Phoenix.Channel do`, `def join(topic) when
        ...`)."""
        target = node.child_by_field_name("target")
        kind = self.spec.calls.get(node_text(target)) if target is not None else None
        arguments = next((c for c in node.named_children if c.type == "arguments"), None)
        if kind is None or arguments is None or not arguments.named_children:
            return
        subject: Node | None = arguments.named_children[0]
        # a guard: `def f(x) when g(x)`
        while subject is not None and subject.type == "binary_operator":
            subject = subject.child_by_field_name("left")
        if subject is not None and subject.type == "call":  # `def join(topic, payload)`
            subject = subject.child_by_field_name("target")
        if subject is None or subject.type not in ("alias", "identifier"):
            return
        name, qual = _split_qualified(node_text(subject))
        full_scope = qualify(scope, qual)
        start = node.start_point[0] + 1
        body = _body(node, self.spec) if kind != "function" else None
        children = self.level(body, qualify(full_scope, name)) if body is not None else []
        found.append(
            DefinitionNode(
                name,
                kind or "class",
                start,
                end_line(node),
                full_scope,
                head=start,
                lead=_lead(node, start, self.spec),
                is_symbol=bool(kind),
                children=tuple(children),
            )
        )

    def _definition(self, node: Node, outer: Node, scope: str, found: list[DefinitionNode]) -> None:
        spec = self.spec
        if node.type in spec.wrappers:
            self._item(node, scope, found)
            return
        is_value = node.type not in spec.defs
        kind, body = _value_kind(node, spec) if is_value else (_kind(node, spec), None)
        if kind == "value" and (
            node.type in spec.assignments or _IMPORT_VALUE.search(node_text(node))
        ):
            return  # `app.locals = {}` assigns data and `local job = require "job"` imports: not definitions
        if not (is_value or kind == "function"):
            body = _body(node, spec)
        name_field = spec.name_fields.get(node.type)
        named = node.child_by_field_name(name_field) if name_field else node
        resolved = _resolve(named, loose=not is_value) if named is not None else None
        name, qual = resolved if resolved else (spec.default_names.get(node.type, ""), "")
        if node.type in spec.scope_fields:
            receiver = node.child_by_field_name(spec.scope_fields[node.type])
            qual = _receiver_type(receiver) if receiver is not None else qual
        full_scope = qualify(scope, qual)
        if not name or (kind == "module" and body is None):
            if body is not None:
                self._item(body, scope, found)
            return
        start = outer.start_point[0] + 1
        children: list[DefinitionNode] = []
        if body is not None:
            children = self.level(body, qualify(full_scope, name))
        elif kind == "function" and not is_value and (inner := _body(node, spec)) is not None:
            # functions and classes defined in a function (redux's createStore defines dispatch),
            # not its locals
            children = [d for d in self.level(inner, qualify(full_scope, name)) if not d.is_value]
        found.append(
            DefinitionNode(
                name,
                kind or "class",
                start,
                end_line(outer),
                full_scope,
                head=node.start_point[0] + 1,
                lead=_lead(outer, start, spec),
                is_symbol=bool(kind),
                is_value=is_value and kind == "value",  # a function or class value defines
                children=tuple(children),
            )
        )


def _receiver_type(receiver: Node) -> str:
    """The type name inside a Go method receiver."""
    stack = [receiver]
    while stack:
        node = stack.pop()
        if node.type == "type_identifier":
            return node_text(node)
        stack.extend(reversed(node.named_children))
    return ""


def outermost_first(definitions: Sequence[DefinitionNode]) -> Iterator[DefinitionNode]:
    """Every definition of a forest and all nested in it, each before its children, in source order."""
    stack = list(reversed(definitions))
    while stack:
        definition = stack.pop()
        yield definition
        stack.extend(reversed(definition.children))


def symbols(definitions: Sequence[DefinitionNode]) -> list[Definition]:
    """The symbols of a forest (every definition but unnamed scopes), outermost first, as plain
    definitions."""
    return [
        Definition(d.name, d.kind, d.start, d.end, d.scope)
        for d in outermost_first(definitions)
        if d.is_symbol
    ]


def walk_definitions(tree: Tree, language: str) -> list[DefinitionNode]:
    """Top-level definitions of a parsed file, each with its nested definitions."""
    return _Walker(_spec(language)).level(tree.root_node, "")
