"""Language detection and the per-language table of tree-sitter node types."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from types import MappingProxyType
from collections.abc import Mapping

_EXTENSIONS: Mapping[str, str] = MappingProxyType({
    ".py": "python", ".pyi": "python", ".pyw": "python",
    ".js": "javascript", ".mjs": "javascript", ".cjs": "javascript", ".jsx": "javascript",
    ".ts": "typescript", ".mts": "typescript", ".cts": "typescript", ".tsx": "tsx",
    ".go": "go", ".rs": "rust", ".java": "java",
    ".c": "c", ".h": "c",
    ".cc": "cpp", ".cpp": "cpp", ".cxx": "cpp", ".c++": "cpp", ".hpp": "cpp", ".hh": "cpp",
    ".hxx": "cpp", ".h++": "cpp", ".ipp": "cpp", ".inl": "cpp",
    ".cs": "csharp", ".scala": "scala", ".sc": "scala", ".php": "php",
    ".rb": "ruby", ".rake": "ruby", ".gemspec": "ruby",
    ".kt": "kotlin", ".kts": "kotlin", ".swift": "swift",
    ".sh": "bash", ".bash": "bash", ".zsh": "bash", ".lua": "lua",
    ".md": "markdown", ".markdown": "markdown", ".mdx": "markdown",
    ".json": "json", ".jsonc": "json", ".yaml": "yaml", ".yml": "yaml", ".toml": "toml",
    ".html": "html", ".htm": "html", ".xml": "xml", ".css": "css", ".scss": "scss",
    ".sql": "sql", ".ini": "ini", ".cfg": "ini", ".rst": "rst", ".txt": "text",
    ".proto": "proto", ".graphql": "graphql", ".tf": "hcl", ".vue": "vue", ".svelte": "svelte",
    ".dart": "dart", ".ex": "elixir", ".exs": "elixir", ".erl": "erlang", ".hs": "haskell",
    ".ml": "ocaml", ".r": "r", ".jl": "julia", ".pl": "perl", ".pm": "perl", ".zig": "zig",
})

_FILENAMES: Mapping[str, str] = MappingProxyType({
    "makefile": "make", "gnumakefile": "make", "dockerfile": "dockerfile",
    "gemfile": "ruby", "rakefile": "ruby", "podfile": "ruby", "vagrantfile": "ruby",
    ".bashrc": "bash", ".bash_profile": "bash", ".profile": "bash", ".zshrc": "bash",
    "cmakelists.txt": "cmake",
})


def detect_language(path: str, text: str | None = None) -> str:
    """Language name for a path by file name or extension; "text" when unknown. With the file's
    `text`, a `.h` header written in C++ (templates, namespaces, classes, access labels) is "cpp"."""
    name = path.replace("\\", "/").rsplit("/", 1)[-1].lower()
    if name in _FILENAMES:
        return _FILENAMES[name]
    if name.startswith("dockerfile"):
        return "dockerfile"
    dot = name.rfind(".")
    language = _EXTENSIONS.get(name[dot:], "text") if dot > 0 else "text"
    if language == "c" and name.endswith(".h") and text and _CPP_HEADER.search(text, 0, _SNIFF_CHARS):
        return "cpp"
    return language


_SNIFF_CHARS = 200_000
_CPP_HEADER = re.compile(r"^[ \t]*(?:template[ \t]*<|namespace(?:[ \t]+[\w:]+)?[ \t]*\{|class[ \t]+\w+[^;(]*$"
                         r"|(?:public|private|protected)[ \t]*:|using[ \t]+namespace[ \t])|\bstd::\w", re.MULTILINE)


@dataclass(frozen=True)
class LangSpec:
    """Node types of one grammar: definitions, their bodies and what wraps or precedes them.

    defs: definition node type -> kind ("" = a named scope that is not itself a symbol, e.g.
    a Rust impl block). values: declaration node types recorded as "value" symbols, upgraded
    to "function"/"class" when the assigned value is one. containers: body node types whose
    children are walked for nested definitions (and are transparent when met as children).
    wrappers: nodes whose span belongs to the definition(s) inside (decorators, export).
    prefixes: sibling node types directly above a definition that belong to its chunk.
    hints: a direct child type (named or keyword) that overrides the kind (Go interface_type).
    scope_fields: definition type -> field holding the enclosing type (Go method receivers).
    name_fields: definition type -> field holding its name when it has no "name" (Rust impl).
    default_names: definition type -> name when the node has none (Swift init).
    calls: definitions made by calling a macro (Elixir's `defmodule`, `def`): the called name -> kind.
    assignments: node types that define something only when they assign a function or class
    (JavaScript's `app.use = function use(fn) {...}`, `exports.parse = (s) => ...`).
    value_kinds: node types that, as the value of a declaration, make it a definition of that kind
    (Zig's `const Parser = struct {...}`); a container among them holds the members.
    """

    grammar: str
    defs: Mapping[str, str]
    values: frozenset[str] = frozenset()
    containers: frozenset[str] = frozenset()
    wrappers: frozenset[str] = frozenset()
    prefixes: frozenset[str] = frozenset()
    hints: Mapping[str, str] = field(default_factory=dict)
    scope_fields: Mapping[str, str] = field(default_factory=dict)
    name_fields: Mapping[str, str] = field(default_factory=dict)
    default_names: Mapping[str, str] = field(default_factory=dict)
    calls: Mapping[str, str] = field(default_factory=dict)
    assignments: frozenset[str] = frozenset()
    value_kinds: Mapping[str, str] = field(default_factory=dict)


def _f(*names: str) -> frozenset[str]:
    return frozenset(names)


_JS_DEFS = {
    "function_declaration": "function", "generator_function_declaration": "function",
    "class_declaration": "class", "method_definition": "function",
}
_TS_DEFS = {
    **_JS_DEFS,
    "abstract_class_declaration": "class", "interface_declaration": "interface",
    "type_alias_declaration": "alias", "enum_declaration": "class",
    "function_signature": "function", "method_signature": "function",
    "abstract_method_signature": "function", "module": "module", "internal_module": "module",
}


def _typescript(grammar: str) -> LangSpec:
    """TypeScript and TSX share one table."""
    return LangSpec(
        grammar, defs=_TS_DEFS,
        values=_f("lexical_declaration", "variable_declaration", "public_field_definition"),
        containers=_f("class_body", "interface_body", "statement_block"),
        wrappers=_f("export_statement", "ambient_declaration", "expression_statement"),
        assignments=_f("assignment_expression"),
    )


_C_DEFS = {
    "function_definition": "function", "struct_specifier": "class",
    "union_specifier": "class", "enum_specifier": "class", "type_definition": "alias",
    "preproc_function_def": "function",
}
_PREPROC = _f("preproc_if", "preproc_ifdef", "preproc_else", "preproc_elif", "preproc_elifdef")

TABLE: Mapping[str, LangSpec] = MappingProxyType({
    "python": LangSpec(
        "python",
        defs={"function_definition": "function", "class_definition": "class",
              "type_alias_statement": "alias"},
        values=_f("assignment"), containers=_f("block"), wrappers=_f("decorated_definition"),
    ),
    "javascript": LangSpec(
        "javascript", defs=_JS_DEFS,
        values=_f("lexical_declaration", "variable_declaration", "field_definition"),
        containers=_f("class_body"), wrappers=_f("export_statement", "expression_statement"),
        assignments=_f("assignment_expression"),
    ),
    "typescript": _typescript("typescript"),
    "tsx": _typescript("tsx"),
    "go": LangSpec(
        "go",
        defs={"function_declaration": "function", "method_declaration": "function",
              "type_spec": "alias", "type_alias": "alias"},
        values=_f("const_declaration", "var_declaration"), wrappers=_f("type_declaration"),
        hints={"struct_type": "class", "interface_type": "interface"},
        scope_fields={"method_declaration": "receiver"},
    ),
    "rust": LangSpec(
        "rust",
        defs={"function_item": "function", "function_signature_item": "function",
              "struct_item": "class", "enum_item": "class", "union_item": "class",
              "trait_item": "interface", "type_item": "alias", "mod_item": "module",
              "macro_definition": "function", "impl_item": ""},
        values=_f("const_item", "static_item"), containers=_f("declaration_list"),
        prefixes=_f("attribute_item"), name_fields={"impl_item": "type"},
    ),
    "java": LangSpec(
        "java",
        defs={"class_declaration": "class", "interface_declaration": "interface",
              "enum_declaration": "class", "record_declaration": "class",
              "annotation_type_declaration": "interface", "method_declaration": "function",
              "constructor_declaration": "function", "compact_constructor_declaration": "function"},
        values=_f("field_declaration", "constant_declaration"),
        containers=_f("class_body", "interface_body", "enum_body", "enum_body_declarations",
                      "annotation_type_body"),
    ),
    "c": LangSpec(
        "c", defs=_C_DEFS, values=_f("declaration", "preproc_def"),
        containers=_PREPROC | _f("linkage_specification"),
    ),
    "cpp": LangSpec(
        "cpp",
        defs={**_C_DEFS, "class_specifier": "class", "namespace_definition": "module",
              "alias_declaration": "alias", "concept_definition": "alias"},
        values=_f("declaration", "field_declaration", "preproc_def"),
        containers=_PREPROC | _f("linkage_specification", "declaration_list",
                                 "field_declaration_list"),
        wrappers=_f("template_declaration"),
    ),
    "csharp": LangSpec(
        "csharp",
        defs={"class_declaration": "class", "interface_declaration": "interface",
              "struct_declaration": "class", "enum_declaration": "class",
              "record_declaration": "class", "delegate_declaration": "alias",
              "method_declaration": "function", "constructor_declaration": "function",
              "destructor_declaration": "function", "operator_declaration": "function",
              "local_function_statement": "function", "namespace_declaration": "module"},
        values=_f("field_declaration", "property_declaration", "event_field_declaration"),
        containers=_f("declaration_list"),
        default_names={"operator_declaration": "operator"},
    ),
    "scala": LangSpec(
        "scala",
        defs={"class_definition": "class", "object_definition": "class",
              "trait_definition": "interface", "enum_definition": "class",
              "function_definition": "function", "function_declaration": "function",
              "type_definition": "alias"},
        values=_f("val_definition", "var_definition"), containers=_f("template_body"),
    ),
    "php": LangSpec(
        "php",
        defs={"function_definition": "function", "class_declaration": "class",
              "interface_declaration": "interface", "trait_declaration": "class",
              "enum_declaration": "class", "method_declaration": "function",
              "namespace_definition": "module"},
        values=_f("const_declaration", "property_declaration"),
        containers=_f("declaration_list", "enum_declaration_list", "compound_statement"),
    ),
    "ruby": LangSpec(
        "ruby",
        defs={"method": "function", "singleton_method": "function", "class": "class",
              "singleton_class": "class", "module": "module"},
        values=_f("assignment"), containers=_f("body_statement"),
    ),
    "kotlin": LangSpec(
        "kotlin",
        defs={"class_declaration": "class", "object_declaration": "class",
              "companion_object": "class", "function_declaration": "function",
              "type_alias": "alias"},
        values=_f("property_declaration"), containers=_f("class_body", "enum_class_body"),
        hints={"interface": "interface"},
    ),
    "swift": LangSpec(
        "swift",
        defs={"class_declaration": "class", "protocol_declaration": "interface",
              "function_declaration": "function", "protocol_function_declaration": "function",
              "init_declaration": "function", "deinit_declaration": "function",
              "typealias_declaration": "alias"},
        values=_f("property_declaration"),
        containers=_f("class_body", "enum_class_body", "protocol_body"),
        default_names={"init_declaration": "init", "deinit_declaration": "deinit"},
    ),
    "bash": LangSpec("bash", defs={"function_definition": "function"},
                     values=_f("variable_assignment"),
                     # `{ ... }` wrapping a whole script (nvm.sh), definitions inside `if` branches
                     containers=_f("compound_statement", "if_statement", "elif_clause", "else_clause")),
    "lua": LangSpec(
        "lua", defs={"function_declaration": "function"},
        values=_f("variable_declaration", "assignment_statement"),
    ),
    # a function is its type signature, Haddock comment and equations (one `function` node per clause);
    # an instance is a scope named after its class, not a definition of it
    "haskell": LangSpec(
        "haskell", defs={"data_type": "class", "newtype": "class", "type_synomym": "alias", "class": "interface",
                         "instance": "", "function": "function", "bind": "function"},
        containers=_f("declarations", "class_declarations", "instance_declarations"),
        prefixes=_f("signature", "haddock", "pragma"),
    ),
    # every definition is a macro call; `@doc`/`@spec` attributes above one belong to it
    "elixir": LangSpec(
        "elixir", defs={},
        calls={"defmodule": "class", "defprotocol": "interface", "defimpl": "", "def": "function",
               "defp": "function", "defmacro": "function", "defmacrop": "function", "defguard": "function",
               "defguardp": "function", "defdelegate": "function"},
        containers=_f("do_block"),
        prefixes=_f("unary_operator"),
    ),
    # `pub fn name(...)` and `const Name = struct {...}` are each wrapped in a `Decl`; a struct, enum or
    # union assigned to a constant is a type whose members are walked
    "zig": LangSpec(
        "zig", defs={"FnProto": "function"}, values=_f("VarDecl"), containers=_f("ContainerDecl"),
        wrappers=_f("Decl"), value_kinds={"ContainerDecl": "class", "ErrorSetDecl": "class"},
        name_fields={"FnProto": "function", "VarDecl": "variable_type_function"},
    ),
})
