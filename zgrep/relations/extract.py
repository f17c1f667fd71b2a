"""Definitions, reference sites and imports of one source file, from its tree-sitter parse.

A language's record may add a `RelSpec` naming the node types involved; the walk itself is generic.
A language with its own extraction (Python's scoped one, `relations.python`) names it there, and
`extract` hands it the parse. Changed files are parsed a second time (after the chunker): parsing is
~1/6 of chunking plus extraction and far below embedding, while sharing the tree would change
`chunk_file`'s contract."""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable
from functools import cache

from tree_sitter import Node, Query, QueryCursor, Tree

from zgrep.chunking.definitions import grammar_of, node_text, parse, symbols, walk_definitions
from zgrep.chunking.references import identifier_query
from zgrep.languages.registry import chunk_spec, detect_language, rel_spec
from zgrep.languages.spec import RelSpec
from zgrep.relations.model import FileRelations, Import, Ref
from zgrep.types import Definition

__all__ = ["FileRelations", "Import", "Ref", "extract"]

_IGNORED = frozenset(
    {
        "self",
        "cls",
        "this",
        "super",
        "true",
        "false",
        "null",
        "nil",
        "None",
        "True",
        "False",
        "undefined",
        "it",
        "_",
    }
)
_QUALIFIER = re.compile(r"[\w$.:]+\Z")
_BINDING_PARENT = re.compile(
    r"assignment|declarator|declaration|parameter|binding|for_|let|keyword_argument|pattern"
)
_BINDING_FIELDS = frozenset({"left", "name", "pattern", "key"})
_LISTS = frozenset({"expression_list", "pattern_list", "tuple_pattern", "identifier_list"})


@cache
def _import_query(language: str, imports: frozenset[str]) -> Query:
    grammar = grammar_of(language)
    kinds = [k for k in sorted(imports) if grammar.id_for_node_kind(k, True)]
    return Query(grammar, "[" + " ".join(f"({k})" for k in kinds) + "] @imp")


@cache
def _extractor(name: str) -> Callable[[Tree, FileRelations], None]:
    """A language's own extraction, by its "module:function" name."""
    module, _, function = name.partition(":")
    found: Callable[[Tree, FileRelations], None] = getattr(
        importlib.import_module(module), function
    )
    return found


def extract(path: str, text: str) -> FileRelations:
    """Definitions, references and imports of one file; empty for unsupported or unparsable files."""
    language = detect_language(path, text)
    result = FileRelations(path, language, text.count("\n") + (0 if text.endswith("\n") else 1))
    if chunk_spec(language) is None or not text.strip():
        return result
    spec = rel_spec(language)
    try:
        tree = parse(text, language)
        if spec is not None and spec.extractor:
            _extractor(spec.extractor)(tree, result)
            return result
        result.defs = symbols(walk_definitions(tree, language))
        # (the walker sees TypeScript's, not object methods)
        if spec is not None and spec.nested_functions:
            seen = {(d.name, d.start) for d in result.defs}
            result.defs += [
                d
                for d in _nested_functions(tree.root_node, result.defs)
                if (d.name, d.start) not in seen
            ]
        result.defs.sort(key=lambda d: (d.start, -d.end))
        spans = _import_spans(tree.root_node, language, spec, result)
        result.refs = _references(tree.root_node, language, spec, result, spans) + _import_refs(
            result
        )
    except Exception:  # a grammar failure costs this file's relations, never the index run
        result.defs, result.refs, result.imports = [], [], []
    return result


def _import_spans(
    root: Node, language: str, spec: RelSpec | None, result: FileRelations
) -> list[tuple[int, int]]:
    """Record the file's imports; return the byte spans of import statements."""
    if spec is None or spec.parse_imports is None or not spec.imports:
        return []
    spans = []
    nodes = QueryCursor(_import_query(language, spec.imports)).captures(root).get("imp", [])
    for node in sorted(nodes, key=_source_order):
        found = spec.parse_imports(node_text(node))
        if node.type in ("variable_declarator", "export_statement") and not found:
            continue
        spans.append((node.start_byte, node.end_byte))
        result.imports.extend(Import(m, n, a, node.start_point[0] + 1) for m, n, a in found if m)
    spans.sort()
    return spans


def _source_order(node: Node) -> tuple[int, int, str]:
    """Where a captured node is in the file, outer first: tree-sitter's captures come in an order
    that differs from run to run (among matches of an alternation)."""
    return node.start_byte, -node.end_byte, node.type


def _import_refs(result: FileRelations) -> list[Ref]:
    """Each name an import statement binds, as a use of kind `import` by the code around it."""
    owner = _innermost(result.defs, result.lines)
    return list(
        {
            (i.alias, i.line): Ref(
                i.alias, "", i.line, owner[i.line] if i.line < len(owner) else None, "import"
            )
            for i in result.imports
            if i.name not in ("", "*") and i.alias
        }.values()
    )


_JS_FUNCTION_VALUES = frozenset(
    {"arrow_function", "function_expression", "function", "generator_function"}
)


def _nested_functions(root: Node, defs: list[Definition]) -> list[Definition]:
    """Functions declared inside functions (and object-literal methods there):
    `createStore.dispatch`."""
    found: list[Definition] = []
    stack = [root]
    while stack:
        node = stack.pop()
        stack.extend(reversed(node.named_children))
        name, outer = None, node
        if node.type in (
            "function_declaration",
            "generator_function_declaration",
            "method_definition",
        ):
            name = node.child_by_field_name("name")
        elif node.type == "variable_declarator":
            value = node.child_by_field_name("value")
            if value is not None and value.type in _JS_FUNCTION_VALUES:
                name = node.child_by_field_name("name")
                outer = (
                    node.parent
                    if node.parent is not None and node.parent.named_child_count == 1
                    else node
                )
        if name is None or name.type not in ("identifier", "property_identifier"):
            continue
        start, end = outer.start_point[0] + 1, outer.end_point[0] + 1
        owners = [
            d for d in (*defs, *found) if d.kind == "function" and d.start < start and end <= d.end
        ]
        if owners:
            owner = max(owners, key=lambda d: d.start)
            found.append(Definition(node_text(name), "function", start, end, owner.qualname))
    return found


def _innermost(defs: list[Definition], lines: int) -> list[Definition | None]:
    """For each line (index = line number), the innermost definition containing it."""
    owner: list[Definition | None] = [None] * (lines + 2)
    for definition in sorted(defs, key=lambda d: d.start - d.end):
        for line in range(definition.start, min(definition.end, lines + 1) + 1):
            owner[line] = definition
    return owner


def _is_binding(node: Node) -> bool:
    """Whether an identifier is bound here (parameter, assignment target, keyword) rather than used."""
    child, parent = node, node.parent
    if parent is not None and parent.type in _LISTS:
        child, parent = parent, parent.parent
    if parent is None or not _BINDING_PARENT.search(parent.type) or "type" in node.type:
        return False
    if "parameter" in parent.type:
        return True
    for index in range(parent.child_count):
        if parent.children[index].id == child.id:
            return parent.field_name_for_child(index) in _BINDING_FIELDS
    return False


def _qualifier(node: Node, spec: RelSpec | None) -> str:
    """The object in front of a member name (`m` in `m.f`, `a::b` in `a::b::f`), "?" for an
    expression."""
    parent = node.parent
    if spec is None or parent is None:
        return ""
    target = None
    if parent.type in spec.suffixes:
        target = parent.prev_named_sibling
    elif (
        parent.type in spec.members
        and parent.named_child_count > 1
        and parent.named_children[0].id != node.id
    ):
        target = parent.named_children[0]
    if target is None:
        return ""
    text = node_text(target)
    return text if len(text) <= 200 and _QUALIFIER.match(text) else "?"


def _references(
    root: Node,
    language: str,
    spec: RelSpec | None,
    result: FileRelations,
    spans: list[tuple[int, int]],
) -> list[Ref]:
    """Distinct (name, qualifier, caller) uses in the file, each at its first line."""
    from bisect import bisect_right

    grammar = chunk_spec(language)
    # `defmodule`, `def`: how definitions are written, not uses
    definers = grammar.calls if grammar is not None else {}
    owner = _innermost(result.defs, result.lines)
    seen: dict[tuple[str, str, Definition | None, str], Ref] = {}
    nodes = QueryCursor(identifier_query(language)).captures(root).get("ref", [])
    nodes.sort(key=_source_order)
    local = (
        _function_locals(nodes, owner, result.defs)
        if spec is not None and spec.nested_functions
        else {}
    )
    for node in nodes:
        at = bisect_right(spans, (node.start_byte, 1 << 62)) - 1
        if at >= 0 and spans[at][0] <= node.start_byte < spans[at][1]:
            continue
        name = node_text(node).lstrip("$")
        if not name or name in _IGNORED or name in definers or _is_binding(node):
            continue
        if (
            local
            and _shadowed(name, owner[node.start_point[0] + 1], local)
            and not _qualifier(node, spec)
        ):
            continue
        line = node.start_point[0] + 1
        caller = owner[line] if line < len(owner) else None
        if (
            caller is not None
            and caller.name == name
            and line <= caller.start + 1
            and _names_itself(node)
        ):
            continue
        key = (name, _qualifier(node, spec), caller, _edge(node, spec))
        if key not in seen:
            seen[key] = Ref(name, key[1], line, caller, key[3])
    return list(seen.values())


def _function_locals(
    nodes: list[Node], owner: list[Definition | None], defs: list[Definition]
) -> dict[str, set[str]]:
    """Per function (qualified name), the parameters and variables it binds (not its nested
    functions)."""
    nested = {(d.scope, d.name) for d in defs}
    found: dict[str, set[str]] = {}
    for node in nodes:
        caller = owner[node.start_point[0] + 1] if node.start_point[0] + 1 < len(owner) else None
        if caller is None or caller.kind != "function" or not _is_binding(node):
            continue
        name = node_text(node)
        if (caller.qualname, name) not in nested and not (
            caller.name == name and node.start_point[0] + 1 == caller.start
        ):
            found.setdefault(caller.qualname, set()).add(name)
    return found


def _shadowed(name: str, caller: Definition | None, local: dict[str, set[str]]) -> bool:
    """Whether a bare name used in `caller` is a parameter or variable of it or of a function around
    it."""
    if caller is None:
        return False
    qualname = caller.qualname
    while qualname:
        if name in local.get(qualname, ()):
            return True
        qualname = qualname.rpartition(".")[0]
    return False


_CALLS = re.compile(r"call|invocation|new_expression|object_creation")
_CONTEXTS = (
    ("type_annotation", "annotation"),
    ("decorator", "decorator"),
    ("annotation", "decorator"),
    ("heritage", "inherit"),
    ("extends", "inherit"),
    ("implements", "inherit"),
    ("superclass", "inherit"),
    ("super_interfaces", "inherit"),
    ("base_class", "inherit"),
    ("type_arguments", "annotation"),
    ("type_parameters", "annotation"),
)


def _edge(node: Node, spec: RelSpec | None) -> str:
    """The edge kind of a use: called, decorating, inherited, in a type annotation, or a plain
    reference."""
    target = node
    parent = node.parent
    if (
        spec is not None
        and parent is not None
        and parent.type in spec.members
        and parent.named_children[0].id != node.id
    ):
        target, parent = parent, parent.parent
    if (
        parent is not None
        and _CALLS.search(parent.type)
        and parent.named_child_count
        and (
            parent.named_children[0].id == target.id or parent.child_by_field_name("name") == target
        )
    ):
        return "call"
    ancestor = node.parent
    for _ in range(6):
        if ancestor is None:
            break
        for marker, kind in _CONTEXTS:
            if marker in ancestor.type:
                return kind
        ancestor = ancestor.parent
    return "reference"


def _names_itself(node: Node) -> bool:
    """Whether an identifier is the name of the definition it sits in (not a recursive call)."""
    parent = node.parent
    while parent is not None and parent.type in (
        "function_declarator",
        "pointer_declarator",
        "identifier",
    ):
        parent = parent.parent
    return parent is not None and not parent.type.endswith(
        ("call", "call_expression", "invocation")
    )
