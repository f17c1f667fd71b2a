"""Python relations from one tree-sitter parse: scoped definitions, bindings, and typed reference
edges.

Pass 1 records every scope's bindings (defs, imports, variables, parameters); pass 2 walks the uses
and keeps only those that can name a definition: a name bound as a local variable is dropped, a name
bound by a definition remembers the scope it lives in (`home`), `self.x`/`super().x` remember their
class."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from tree_sitter import Node, Tree

from zgrep.chunking.definitions import end_line, node_text
from zgrep.relations.model import FileRelations, Import, Ref
from zgrep.relations.typetext import TYPE_NAME, type_of
from zgrep.types import Definition

_FUNCTION_SCOPES = frozenset({"function", "lambda", "comprehension"})
_COMPREHENSIONS = frozenset(
    {"list_comprehension", "set_comprehension", "dictionary_comprehension", "generator_expression"}
)
_TARGETS = frozenset(
    {
        "pattern_list",
        "tuple_pattern",
        "list_pattern",
        "tuple",
        "list",
        "parenthesized_expression",
        "list_splat_pattern",
        "as_pattern_target",
    }
)
_PARAMETERS = frozenset(
    {
        "typed_parameter",
        "default_parameter",
        "typed_default_parameter",
        "list_splat_pattern",
        "dictionary_splat_pattern",
    }
)
# nodes pass 1 has nothing to do at, and nothing under (names, numbers, literals, string parts):
# about half the nodes of a file, each a visit of its own otherwise
_BIND_LEAVES = frozenset(
    {
        "identifier",
        "integer",
        "float",
        "true",
        "false",
        "none",
        "comment",
        "string_start",
        "string_content",
        "string_end",
        "escape_sequence",
    }
)
_SKIP = frozenset(
    {
        "global_statement",
        "nonlocal_statement",
        "comment",
        "integer",
        "float",
        "future_import_statement",
        "string_content",
        "string_start",
        "string_end",
        "escape_sequence",
    }
)


@dataclass
class _Scope:
    """A module, class, function, lambda or comprehension scope and the names bound in it."""

    kind: str
    prefix: str  # the `scope` of definitions made in it ("" module, "C" class C, "C.f" method f)
    parent: _Scope | None
    bindings: dict[str, str] = field(default_factory=dict)  # name -> def | import | var | param
    declared_global: set[str] = field(default_factory=set)
    types: dict[str, str] = field(default_factory=dict)  # local name -> type expression

    def bind(self, name: str, how: str) -> None:
        order = ("var", "param", "import", "def")
        if (
            order.index(how) >= order.index(self.bindings.get(name, "var"))
            or name not in self.bindings
        ):
            self.bindings[name] = how


def _join(*parts: str) -> str:
    return ".".join(p for p in parts if p)


class _Extractor:
    """One file's walk: pass 1 (`_bind`) then pass 2 (`_use`)."""

    def __init__(self, result: FileRelations) -> None:
        self.result = result
        self.scopes: dict[int, _Scope] = {}
        # definition node id -> its Definition (overload stubs -> the implementation)
        self.defs: dict[int, Definition] = {}
        self.bound: set[int] = set()  # identifier nodes that bind a name
        self.overloads: list[tuple[int, Definition]] = []
        self.override: dict[int, str] = {}  # identifier node id -> edge kind
        self.refs: dict[tuple[str, str, Definition | None, str, str | None], Ref] = {}
        self.attributes: set[tuple[str, str]] = set()
        self._binds: list[tuple[Node, _Scope]] = []
        self._uses: list[tuple[Node, _Scope, Definition | None, str]] = []

    # ----- pass 1: definitions and bindings ---------------------------------------------------------------
    def bind_all(self, root: Node) -> None:
        """Pass 1 over the whole file, in document order, with a stack (no recursion on deep
        expressions)."""
        module = _Scope("module", "", None)
        self.scopes[root.id] = module
        stack = [(child, module) for child in reversed(root.named_children)]
        while stack:
            node, scope = stack.pop()
            self._binds = []
            self._bind_node(node, scope)
            stack.extend(reversed(self._binds))
        self._fold_overloads()

    def _bind(self, node: Node, scope: _Scope) -> None:
        """Visit `node` in pass 1 (after the node being visited now)."""
        self._binds.append((node, scope))

    def _bind_node(self, node: Node, scope: _Scope) -> None:
        kind = node.type
        if kind == "decorated_definition":
            inner = node.child_by_field_name("definition")
            if inner is not None:
                for child in node.named_children:
                    if child.type == "decorator":
                        self._bind(child, scope)
                self._definition(inner, node, scope)
            return
        if kind in ("function_definition", "class_definition"):
            self._definition(node, node, scope)
            return
        if kind in ("import_statement", "import_from_statement"):
            self._import(node, scope)
            return
        if kind == "lambda" or kind in _COMPREHENSIONS:
            inner_scope = _Scope(
                "lambda" if kind == "lambda" else "comprehension", scope.prefix, scope
            )
            self.scopes[node.id] = inner_scope
            if kind == "lambda":
                self._parameters(node.child_by_field_name("parameters"), inner_scope)
            for child in node.named_children:
                if child.type == "for_in_clause":
                    self._target(child.child_by_field_name("left"), inner_scope)
                self._bind(child, inner_scope)
            return
        if kind in ("global_statement", "nonlocal_statement"):
            names = {node_text(c) for c in node.named_children if c.type == "identifier"}
            if kind == "global_statement":
                scope.declared_global |= names
            return
        if kind == "assignment":
            self._assignment(node, scope)
            return
        if kind in ("augmented_assignment", "for_statement", "for_in_clause"):
            left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
            self._target(left, scope)
            items = _norm(right) if right is not None and kind != "augmented_assignment" else ""
            items = self._local_type(items, scope) if items else ""
            if left is not None and left.type == "identifier" and items:
                scope.types.setdefault(node_text(left), items + "[]")
            elif (
                left is not None
                and left.type in ("pattern_list", "tuple_pattern")
                and right is not None
            ):
                self._unpacked_items(left, right, scope)
        elif kind == "as_pattern":
            alias = node.child_by_field_name("alias")
            self._target(alias, scope)
            value = node.named_children[0] if node.named_children else None
            targets = alias.named_children if alias is not None else []
            if (
                node.parent is not None
                and node.parent.type == "except_clause"
                and value is not None
                and len(targets) == 1
                and targets[0].type == "identifier"
                and value.type in ("identifier", "attribute")
            ):
                scope.types.setdefault(node_text(targets[0]), _norm(value))
        elif kind == "named_expression":
            self._target(node.child_by_field_name("name"), scope)
        elif kind == "type_alias_statement":
            left = node.child_by_field_name("left")
            name = node_text(left).strip() if left is not None else ""
            if name.isidentifier() and scope.kind in ("module", "class"):
                self.result.defs.append(
                    Definition(name, "alias", node.start_point[0] + 1, end_line(node), scope.prefix)
                )
                scope.bind(name, "def")
            return
        for child in node.named_children:
            if child.type not in _BIND_LEAVES:
                self._bind(child, scope)

    def _definition(self, node: Node, outer: Node, scope: _Scope) -> None:
        name_node = node.child_by_field_name("name")
        if name_node is None:
            return
        name = node_text(name_node)
        is_class = node.type == "class_definition"
        returns = node.child_by_field_name("return_type")
        if returns is not None:
            typed = type_of(node_text(returns))
        else:
            typed = (
                ""
                if is_class or scope.kind != "class"
                else _constructed(node.child_by_field_name("body"))
            )
        definition = Definition(
            name,
            "class" if is_class else "function",
            outer.start_point[0] + 1,
            end_line(outer),
            scope.prefix,
            type=typed,
        )
        self.result.defs.append(definition)
        self.defs[node.id] = definition
        self.bound.add(name_node.id)
        scope.bind(name, "def")
        if outer is not node and any(
            _is_overload(d) for d in outer.named_children if d.type == "decorator"
        ):
            self.overloads.append((node.id, definition))
        inner = _Scope("class" if is_class else "function", _join(scope.prefix, name), scope)
        self.scopes[node.id] = inner
        if is_class:
            superclasses = node.child_by_field_name("superclasses")
            if superclasses is not None:
                self._bind(superclasses, scope)
        else:
            self._parameters(node.child_by_field_name("parameters"), inner, scope)
        body = node.child_by_field_name("body")
        if body is not None:
            for child in body.named_children:
                self._bind(child, inner)

    def _parameters(
        self, parameters: Node | None, inner: _Scope, outer: _Scope | None = None
    ) -> None:
        if parameters is None:
            return
        for parameter in parameters.named_children:
            target = parameter
            if parameter.type in _PARAMETERS:
                target = (
                    parameter.child_by_field_name("name")
                    or _first_identifier(parameter)
                    or parameter
                )
                annotation = parameter.child_by_field_name("type")
                if annotation is not None and target.type == "identifier":
                    inner.types[node_text(target)] = type_of(node_text(annotation))
                for child in parameter.named_children:
                    if child.id != target.id:
                        self._bind(child, outer or inner)
            if target.type == "identifier":
                inner.bind(node_text(target), "param")
                self.bound.add(target.id)

    def _assignment(self, node: Node, scope: _Scope) -> None:
        left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
        annotation = node.child_by_field_name("type")
        typed = type_of(node_text(annotation)) if annotation is not None else ""
        if not typed and right is not None:
            typed = self._value_type(right, scope)
        if left is not None and left.type == "identifier":
            name = node_text(left)
            if scope.kind in ("module", "class"):
                self.result.defs.append(
                    Definition(
                        name,
                        "value",
                        node.start_point[0] + 1,
                        end_line(node),
                        scope.prefix,
                        type=typed,
                    )
                )
            elif typed:
                scope.types.setdefault(name, typed)
        elif left is not None and left.type == "attribute" and typed and scope.kind == "function":
            self._attribute_def(left, scope, typed, node)
        elif left is not None and left.type in ("pattern_list", "tuple_pattern") and typed:
            for index, target in enumerate(left.named_children):
                if target.type == "identifier" and scope.kind in _FUNCTION_SCOPES:
                    scope.types.setdefault(node_text(target), f"{typed}[{index}]")
        self._target(left, scope)
        for child in (annotation, right):
            if child is not None:
                self._bind(child, scope)

    def _value_type(self, value: Node, scope: _Scope) -> str:
        """The type an assigned expression gives its target: a typed parameter's, or the expression
        itself."""
        text = _norm(value)
        if not text or value.type not in ("identifier", "attribute", "call", "subscript"):
            return ""
        return self._local_type(text, scope)

    def _local_type(self, text: str, scope: _Scope) -> str:
        """`text` with a leading local variable replaced by what it was assigned (`v.m()` ->
        `Cls().m()`)."""
        for _ in range(3):
            head, dot, rest = text.partition(".")
            base = re.sub(r"(\(\)|\[\d*\])+$", "", head)
            binding = _lookup(scope, base)
            if (
                binding is None
                or binding[0].kind not in _FUNCTION_SCOPES
                or binding[1] not in ("var", "param")
            ):
                return text
            typed = binding[0].types.get(base, "")
            if not typed:
                return text if base in ("self", "cls") else ""
            text = typed + head[len(base) :] + dot + rest
        return text

    def _unpacked_items(self, left: Node, right: Node, scope: _Scope) -> None:
        """`for i, x in enumerate(xs)`, `for k, v in d.items()`: x and v are items; `for a, b in
        pairs`: parts."""
        targets = left.named_children
        function = right.child_by_field_name("function") if right.type == "call" else None
        arguments = right.child_by_field_name("arguments") if right.type == "call" else None
        if (
            function is not None
            and node_text(function) == "enumerate"
            and arguments is not None
            and arguments.named_child_count
        ):
            items, which = self._local_type(_norm(arguments.named_children[0]), scope), {1: "[]"}
        elif (
            function is not None
            and function.type == "attribute"
            and node_text(function).endswith(".items")
        ):
            obj = function.child_by_field_name("object")
            items, which = self._local_type(_norm(obj), scope) if obj is not None else "", {1: "[]"}
        else:
            items, which = (
                self._local_type(_norm(right), scope),
                {i: f"[][{i}]" for i in range(len(targets))},
            )
        for index, suffix in which.items():
            if items and index < len(targets) and targets[index].type == "identifier":
                scope.types.setdefault(node_text(targets[index]), items + suffix)

    def _attribute_def(self, target: Node, scope: _Scope, typed: str, node: Node) -> None:
        """`self.x = <typed>` in a method records attribute x of the class with its type (first one
        wins)."""
        obj, attr = target.child_by_field_name("object"), target.child_by_field_name("attribute")
        owner = scope.parent
        if (
            obj is None
            or attr is None
            or node_text(obj) != "self"
            or owner is None
            or owner.kind != "class"
        ):
            return
        name = node_text(attr)
        if name in owner.bindings or (owner.prefix, name) in self.attributes:
            return
        self.attributes.add((owner.prefix, name))
        self.result.defs.append(
            Definition(
                name, "value", node.start_point[0] + 1, end_line(node), owner.prefix, type=typed
            )
        )

    def _target(self, node: Node | None, scope: _Scope) -> None:
        """Bind the names an assignment-like target assigns (attributes and subscripts bind none)."""
        if node is None:
            return
        if node.type == "identifier":
            scope.bind(node_text(node), "var")
            self.bound.add(node.id)
        elif node.type in _TARGETS:
            for child in node.named_children:
                self._target(child, scope)
        else:
            self._bind(node, scope)

    def _import(self, node: Node, scope: _Scope) -> None:
        line = node.start_point[0] + 1
        module_node = node.child_by_field_name("module_name")
        module = re.sub(r"\s+", "", node_text(module_node)) if module_node is not None else ""
        for child in node.named_children:
            if child.id == (module_node.id if module_node is not None else -1):
                continue
            if child.type == "wildcard_import":
                self.result.imports.append(Import(module, "*", "", line, scope.prefix))
                continue
            alias_node = (
                child.child_by_field_name("alias") if child.type == "aliased_import" else None
            )
            name_node = (
                child.child_by_field_name("name") if child.type == "aliased_import" else child
            )
            if name_node is None:
                continue
            dotted = re.sub(r"\s+", "", node_text(name_node))
            alias = node_text(alias_node) if alias_node is not None else dotted
            if module_node is not None:
                self.result.imports.append(Import(module, dotted, alias, line, scope.prefix))
                scope.bind(alias, "import")
            else:
                self.result.imports.append(Import(dotted, "", alias, line, scope.prefix))
                scope.bind(alias.split(".", 1)[0], "import")

    def _fold_overloads(self) -> None:
        """`@overload` stubs fold into the implementation that follows them (or the first stub)."""
        if not self.overloads:
            return
        stubs = {id(d) for _, d in self.overloads}
        for node_id, stub in self.overloads:
            later = [
                d
                for d in self.result.defs
                if d.name == stub.name
                and d.scope == stub.scope
                and id(d) not in stubs
                and d.start > stub.start
            ]
            first = next(
                d for _, d in self.overloads if d.name == stub.name and d.scope == stub.scope
            )
            self.defs[node_id] = later[0] if later else first
        kept = {id(d) for d in self.defs.values()}
        self.result.defs = [d for d in self.result.defs if id(d) not in stubs or id(d) in kept]

    # ----- pass 2: uses -------------------------------------------------------------------------------
    def use_all(self, root: Node) -> None:
        """Pass 2 over the whole file, in document order, with a stack."""
        module = self.scopes[root.id]
        stack: list[tuple[Node, _Scope, Definition | None, str]] = [
            (c, module, None, "") for c in reversed(root.named_children)
        ]
        while stack:
            item = stack.pop()
            self._uses = []
            self._use_node(*item)
            stack.extend(reversed(self._uses))

    def _use(self, node: Node, scope: _Scope, caller: Definition | None, context: str) -> None:
        """Visit `node` in pass 2 (after the node being visited now)."""
        self._uses.append((node, scope, caller, context))

    def _use_node(self, node: Node, scope: _Scope, caller: Definition | None, context: str) -> None:
        """Record the uses at `node` and queue its parts; `context` is decorator/annotation there."""
        kind = node.type
        if kind in _SKIP:
            return
        if kind == "identifier":
            if node.id not in self.bound:
                self._name(node, scope, caller, self._edge(node, context))
            return
        if kind == "decorated_definition":
            inner = node.child_by_field_name("definition")
            definition = self.defs.get(inner.id) if inner is not None else None
            for child in node.named_children:
                if child.type == "decorator":
                    self._use(child, scope, definition or caller, "decorator")
            if inner is not None:
                self._use(inner, scope, caller, context)
            return
        if kind in ("function_definition", "class_definition"):
            self._definition_uses(node, scope)
            return
        if kind in ("import_statement", "import_from_statement"):
            if node.child_by_field_name("module_name") is not None:
                for child in node.children_by_field_name("name"):
                    local = (
                        child.child_by_field_name("alias")
                        if child.type == "aliased_import"
                        else child
                    )
                    if local is not None:
                        self._add(node_text(local), "", node, caller, "import", None)
            return
        if kind == "type":
            for child in node.named_children:
                self._annotation(child, scope, caller)
            return
        if kind == "call":
            function = node.child_by_field_name("function")
            if function is not None:
                called = (
                    function.child_by_field_name("attribute")
                    if function.type == "attribute"
                    else function
                )
                if called is not None and called.type == "identifier":
                    self.override.setdefault(called.id, "call")
        elif kind == "attribute":
            self._attribute(node, scope, caller, context)
            return
        elif kind == "keyword_argument":
            value = node.child_by_field_name("value")
            if value is not None:
                self._use(value, scope, caller, context)
            return
        inner_scope = (
            self.scopes.get(node.id, scope)
            if (kind == "lambda" or kind in _COMPREHENSIONS)
            else scope
        )
        for child in node.named_children:
            if child.type not in _SKIP:  # (a visit that would return at once)
                self._use(child, inner_scope, caller, context)

    def _definition_uses(self, node: Node, scope: _Scope) -> None:
        definition = self.defs.get(node.id)
        inner = self.scopes.get(node.id)
        if definition is None or inner is None:
            return
        if node.type == "class_definition":
            superclasses = node.child_by_field_name("superclasses")
            for base in superclasses.named_children if superclasses is not None else []:
                head = base.child_by_field_name("value") if base.type == "subscript" else base
                final = (
                    head.child_by_field_name("attribute")
                    if head is not None and head.type == "attribute"
                    else head
                )
                if (
                    final is not None
                    and final.type == "identifier"
                    and base.type != "keyword_argument"
                ):
                    self.override[final.id] = "inherit"
                self._use(base, scope, definition, "")
        else:
            parameters = node.child_by_field_name("parameters")
            for parameter in parameters.named_children if parameters is not None else []:
                for child in parameter.named_children:
                    if child.id not in self.bound:
                        self._use(child, scope, definition, "")
            returns = node.child_by_field_name("return_type")
            if returns is not None:
                self._use(returns, scope, definition, "")
        body = node.child_by_field_name("body")
        for child in body.named_children if body is not None else []:
            self._use(child, inner, definition, "")

    def _annotation(self, node: Node, scope: _Scope, caller: Definition | None) -> None:
        """Uses inside a type annotation, string annotations ("Flask", "t.Any") included."""
        if node.type == "string":
            content = "".join(
                node_text(c) for c in node.named_children if c.type == "string_content"
            )
            for match in TYPE_NAME.finditer(content):
                qualifier, _, name = match.group(0).rpartition(".")
                self._resolved(name, qualifier, node, scope, caller, "annotation")
            return
        if node.type == "identifier" or node.type == "attribute":
            self._use(node, scope, caller, "annotation")
            return
        for child in node.named_children:
            self._annotation(child, scope, caller)

    def _edge(self, node: Node, context: str) -> str:
        return context or self.override.get(node.id, "reference")

    def _attribute(
        self, node: Node, scope: _Scope, caller: Definition | None, context: str
    ) -> None:
        obj, attr = node.child_by_field_name("object"), node.child_by_field_name("attribute")
        if obj is None:
            return
        self._use(obj, scope, caller, context)
        if attr is None:
            return
        edge = self._edge(attr, context)
        name = node_text(attr)
        if obj.type == "call" and node_text(obj.child_by_field_name("function") or obj) == "super":
            self._add(name, "super()", attr, caller, edge, _enclosing_class(scope))
            return
        text = _norm(obj)
        if not text:
            self._add(name, "?", attr, caller, edge, None)
            return
        self._resolved(name, text, attr, scope, caller, edge)

    def _name(self, node: Node, scope: _Scope, caller: Definition | None, edge: str) -> None:
        name = node_text(node)
        if name in ("self", "cls", "super"):
            return
        self._resolved(name, "", node, scope, caller, edge)

    def _resolved(
        self,
        name: str,
        qualifier: str,
        node: Node,
        scope: _Scope,
        caller: Definition | None,
        edge: str,
    ) -> None:
        """A use of `qualifier.name` (or a bare name) as scoping sees it; local variables are no
        references."""
        if qualifier:
            typed = self._local_type(qualifier, scope)
            qualifier = typed or qualifier
            if (
                qualifier.split(".", 1)[0] in ("self", "cls")
                and _enclosing_class(scope) is not None
            ):
                self._add(
                    name,
                    "self" + qualifier[qualifier.index(".") :] if "." in qualifier else "self",
                    node,
                    caller,
                    edge,
                    _enclosing_class(scope),
                )
                return
            self._add(name, qualifier, node, caller, edge, None)
            return
        binding = _lookup(scope, name)
        if binding is None or binding[1] == "import":
            self._add(name, "", node, caller, edge, None)
            return
        where, how = binding
        if how in ("var", "param") and where.kind in _FUNCTION_SCOPES:
            return
        self._add(name, "", node, caller, edge, where.prefix)

    def _add(
        self,
        name: str,
        qualifier: str,
        node: Node,
        caller: Definition | None,
        edge: str,
        home: str | None,
    ) -> None:
        key = (name, qualifier, caller, edge, home)
        if key not in self.refs:
            self.refs[key] = Ref(name, qualifier, node.start_point[0] + 1, caller, edge, home)


def _lookup(scope: _Scope, name: str) -> tuple[_Scope, str] | None:
    """Where `name` is bound as seen from `scope` (class bodies are not seen from their methods)."""
    current: _Scope | None = scope
    first = True
    while current is not None:
        if name in current.declared_global:
            while current.parent is not None:
                current = current.parent
        if current.kind != "class" or first:
            how = current.bindings.get(name)
            if how is not None:
                return current, how
        first = False
        current = current.parent
    return None


def _norm(node: Node, depth: int = 0) -> str:
    """An expression as a dotted path with calls marked (`a.b(x).c` -> `a.b().c`); "" when it is no
    such path."""
    if depth > 8:
        return ""
    if node.type == "identifier":
        return node_text(node)
    if node.type == "attribute":
        obj, attr = node.child_by_field_name("object"), node.child_by_field_name("attribute")
        head = _norm(obj, depth + 1) if obj is not None else ""
        return f"{head}.{node_text(attr)}" if head and attr is not None else ""
    if node.type == "call":
        function = node.child_by_field_name("function")
        head = _norm(function, depth + 1) if function is not None else ""
        return f"{head}()" if head and not head.endswith(("()", "]")) else ""
    if node.type == "subscript":
        value, index = node.child_by_field_name("value"), node.child_by_field_name("subscript")
        head = _norm(value, depth + 1) if value is not None else ""
        at = (
            node_text(index)
            if index is not None and index.type == "integer" and node_text(index).isdigit()
            else ""
        )
        return f"{head}[{at}]" if head and not head.endswith("]") else ""
    return ""


def _constructed(body: Node | None) -> str:
    """ "Self" when every `return` of an unannotated method's own body gives `cls(...)` or `self`, else ""."""
    values: set[str] = set()
    stack = list(body.named_children) if body is not None else []
    while stack:
        node = stack.pop()
        if node.type in (
            "function_definition",
            "class_definition",
            "decorated_definition",
            "lambda",
        ):
            continue
        if node.type == "return_statement":
            value = node.named_children[0] if node.named_children else None
            if value is not None and value.type == "call":
                value = value.child_by_field_name("function")
            values.add(node_text(value) if value is not None else "")
            continue
        # a `return` stands in a block only: expressions (and simple statements) hold none
        stack.extend(
            child
            for child in node.named_children
            if child.type == "block" or child.type.endswith(("_statement", "_clause"))
        )
    return "Self" if values and values <= {"cls", "self"} else ""


def _first_identifier(node: Node) -> Node | None:
    """The first identifier under a parameter, its type aside (`*args: int` -> args)."""
    for child in node.named_children:
        if child.type == "identifier":
            return child
        if child.type != "type":
            found = _first_identifier(child)
            if found is not None:
                return found
    return None


def _enclosing_class(scope: _Scope) -> str | None:
    current: _Scope | None = scope
    while current is not None:
        if current.kind == "class":
            return current.prefix
        current = current.parent
    return None


def _is_overload(decorator: Node) -> bool:
    text = node_text(decorator).lstrip("@").strip()
    return text == "overload" or text.endswith(".overload")


def extract_python(tree: Tree, result: FileRelations) -> None:
    """Fill `result` (defs, refs, imports) from a parsed Python file."""
    walker = _Extractor(result)
    walker.bind_all(tree.root_node)
    walker.use_all(tree.root_node)
    result.defs.sort(key=lambda d: (d.start, -d.end))
    result.refs = list(walker.refs.values())
