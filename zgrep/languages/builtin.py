"""The languages zg knows, one `Language` record each (as pre-commit's `all_languages`): adding a
language is adding its record here, plus its resolver in `relations.resolve` when it brings new
import rules."""

from __future__ import annotations

import re
from collections.abc import Mapping
from types import MappingProxyType

from zgrep.languages.spec import ChunkSpec, Language, RelSpec
from zgrep.relations.imports import c_imports, go_imports, js_imports, jvm_imports, rust_imports


def _f(*names: str) -> frozenset[str]:
    return frozenset(names)


_JS_DEFS = {
    "function_declaration": "function",
    "generator_function_declaration": "function",
    "class_declaration": "class",
    "method_definition": "function",
}
_TS_DEFS = {
    **_JS_DEFS,
    "abstract_class_declaration": "class",
    "interface_declaration": "interface",
    "type_alias_declaration": "alias",
    "enum_declaration": "class",
    "function_signature": "function",
    "method_signature": "function",
    "abstract_method_signature": "function",
    "module": "module",
    "internal_module": "module",
}


def _typescript(grammar: str) -> ChunkSpec:
    """TypeScript and TSX share one table."""
    return ChunkSpec(
        grammar,
        defs=_TS_DEFS,
        values=_f("lexical_declaration", "variable_declaration", "public_field_definition"),
        containers=_f("class_body", "interface_body", "statement_block"),
        wrappers=_f("export_statement", "ambient_declaration", "expression_statement"),
        assignments=_f("assignment_expression"),
    )


_C_DEFS = {
    "function_definition": "function",
    "struct_specifier": "class",
    "union_specifier": "class",
    "enum_specifier": "class",
    "type_definition": "alias",
    "preproc_function_def": "function",
}
_PREPROC = _f("preproc_if", "preproc_ifdef", "preproc_else", "preproc_elif", "preproc_elifdef")
_CPP_HEADER = re.compile(
    r"^[ \t]*(?:template[ \t]*<|namespace(?:[ \t]+[\w:]+)?[ \t]*\{|class[ \t]+\w+[^;(]*$"
    r"|(?:public|private|protected)[ \t]*:|using[ \t]+namespace[ \t])|\bstd::\w",
    re.MULTILINE,
)

_JS_RELATIONS = RelSpec(
    _f("import_statement", "export_statement", "variable_declarator"),
    js_imports,
    _f("member_expression", "nested_identifier", "qualified_type"),
    nested_functions=True,
)
_JVM_MEMBERS = _f(
    "method_invocation",
    "field_access",
    "scoped_type_identifier",
    "stable_identifier",
    "field_expression",
    "select_expression",
)
_C_RELATIONS = RelSpec(
    _f("preproc_include"),
    c_imports,
    _f("field_expression", "qualified_identifier", "template_function"),
)
_MARKDOWN = ("*.markdown", "*.md", "*.mdown", "*.mdwn", "*.mkd", "*.mkdn")

BUILTIN: tuple[Language, ...] = (
    Language(
        "python",
        extensions=(".py", ".pyi", ".pyw"),
        types={"py": ("*.py", "*.pyi")},
        chunking=ChunkSpec(
            "python",
            defs={
                "function_definition": "function",
                "class_definition": "class",
                "type_alias_statement": "alias",
            },
            values=_f("assignment"),
            containers=_f("block"),
            wrappers=_f("decorated_definition"),
        ),
        relations=RelSpec(extractor="zgrep.relations.python:extract_python"),
        sample="def f():\n    pass\n",
    ),
    Language(
        "javascript",
        extensions=(".js", ".mjs", ".cjs", ".jsx"),
        types={"js": ("*.js", "*.jsx", "*.vue", "*.cjs", "*.mjs")},
        chunking=ChunkSpec(
            "javascript",
            defs=_JS_DEFS,
            values=_f("lexical_declaration", "variable_declaration", "field_definition"),
            containers=_f("class_body"),
            wrappers=_f("export_statement", "expression_statement"),
            assignments=_f("assignment_expression"),
        ),
        relations=_JS_RELATIONS,
        sample="function f() {}\n",
    ),
    Language(
        "typescript",
        extensions=(".ts", ".mts", ".cts"),
        types={"ts": ("*.ts", "*.tsx", "*.cts", "*.mts")},
        chunking=_typescript("typescript"),
        relations=_JS_RELATIONS,
        family="javascript",
        sample="function f(): void {}\n",
    ),
    Language(
        "tsx",
        extensions=(".tsx",),
        chunking=_typescript("tsx"),
        relations=_JS_RELATIONS,
        family="javascript",
        sample="const A = () => <div/>;\n",
    ),
    Language(
        "go",
        extensions=(".go",),
        types={"go": ("*.go",)},
        chunking=ChunkSpec(
            "go",
            defs={
                "function_declaration": "function",
                "method_declaration": "function",
                "type_spec": "alias",
                "type_alias": "alias",
            },
            values=_f("const_declaration", "var_declaration"),
            wrappers=_f("type_declaration"),
            hints={"struct_type": "class", "interface_type": "interface"},
            scope_fields={"method_declaration": "receiver"},
        ),
        relations=RelSpec(
            _f("import_spec"), go_imports, _f("selector_expression", "qualified_type")
        ),
        sample="package m\nfunc F() {}\n",
    ),
    Language(
        "rust",
        extensions=(".rs",),
        types={"rust": ("*.rs",)},
        chunking=ChunkSpec(
            "rust",
            defs={
                "function_item": "function",
                "function_signature_item": "function",
                "struct_item": "class",
                "enum_item": "class",
                "union_item": "class",
                "trait_item": "interface",
                "type_item": "alias",
                "mod_item": "module",
                "macro_definition": "function",
                "impl_item": "",
            },
            values=_f("const_item", "static_item"),
            containers=_f("declaration_list"),
            prefixes=_f("attribute_item"),
            name_fields={"impl_item": "type"},
        ),
        relations=RelSpec(
            _f("use_declaration"),
            rust_imports,
            _f("scoped_identifier", "scoped_type_identifier", "field_expression"),
        ),
        sample="fn f() {}\n",
    ),
    Language(
        "java",
        extensions=(".java",),
        types={"java": ("*.java", "*.jsp", "*.jspx", "*.properties")},
        chunking=ChunkSpec(
            "java",
            defs={
                "class_declaration": "class",
                "interface_declaration": "interface",
                "enum_declaration": "class",
                "record_declaration": "class",
                "annotation_type_declaration": "interface",
                "method_declaration": "function",
                "constructor_declaration": "function",
                "compact_constructor_declaration": "function",
            },
            values=_f("field_declaration", "constant_declaration"),
            containers=_f(
                "class_body",
                "interface_body",
                "enum_body",
                "enum_body_declarations",
                "annotation_type_body",
            ),
        ),
        relations=RelSpec(_f("import_declaration"), jvm_imports, _JVM_MEMBERS),
        family="jvm",
        sample="class A { void f() {} }\n",
    ),
    Language(
        "c",
        extensions=(".c", ".h"),
        types={"c": ("*.[chH]", "*.[chH].in", "*.cats")},
        chunking=ChunkSpec(
            "c",
            defs=_C_DEFS,
            values=_f("declaration", "preproc_def"),
            containers=_PREPROC | _f("linkage_specification"),
        ),
        relations=_C_RELATIONS,
        sample="int f(void) { return 0; }\n",
    ),
    Language(
        "cpp",
        extensions=(".cc", ".cpp", ".cxx", ".c++", ".hpp", ".hh", ".hxx", ".h++", ".ipp", ".inl"),
        sniff=(
            ".h",
            _CPP_HEADER,
        ),  # a header written in C++: templates, namespaces, classes, access labels
        types={
            "cpp": (
                "*.[ChH]",
                "*.cc",
                "*.[ch]pp",
                "*.[ch]xx",
                "*.hh",
                "*.inl",
                "*.[ChH].in",
                "*.cc.in",
                "*.[ch]pp.in",
                "*.[ch]xx.in",
                "*.hh.in",
            )
        },
        chunking=ChunkSpec(
            "cpp",
            defs={
                **_C_DEFS,
                "class_specifier": "class",
                "namespace_definition": "module",
                "alias_declaration": "alias",
                "concept_definition": "alias",
            },
            values=_f("declaration", "field_declaration", "preproc_def"),
            containers=_PREPROC
            | _f("linkage_specification", "declaration_list", "field_declaration_list"),
            wrappers=_f("template_declaration"),
        ),
        relations=_C_RELATIONS,
        family="c",
        sample="int f() { return 0; }\n",
    ),
    Language(
        "csharp",
        extensions=(".cs",),
        types={"cs": ("*.cs",), "csharp": ("*.cs",)},
        chunking=ChunkSpec(
            "csharp",
            defs={
                "class_declaration": "class",
                "interface_declaration": "interface",
                "struct_declaration": "class",
                "enum_declaration": "class",
                "record_declaration": "class",
                "delegate_declaration": "alias",
                "method_declaration": "function",
                "constructor_declaration": "function",
                "destructor_declaration": "function",
                "operator_declaration": "function",
                "local_function_statement": "function",
                "namespace_declaration": "module",
            },
            values=_f("field_declaration", "property_declaration", "event_field_declaration"),
            containers=_f("declaration_list"),
            default_names={"operator_declaration": "operator"},
        ),
        sample="class A { void F() {} }\n",
    ),
    Language(
        "scala",
        extensions=(".scala", ".sc"),
        types={"scala": ("*.scala", "*.sbt")},
        chunking=ChunkSpec(
            "scala",
            defs={
                "class_definition": "class",
                "object_definition": "class",
                "trait_definition": "interface",
                "enum_definition": "class",
                "function_definition": "function",
                "function_declaration": "function",
                "type_definition": "alias",
            },
            values=_f("val_definition", "var_definition"),
            containers=_f("template_body"),
        ),
        relations=RelSpec(_f("import_declaration"), jvm_imports, _JVM_MEMBERS),
        family="jvm",
        sample="object A { def f = 1 }\n",
    ),
    Language(
        "php",
        extensions=(".php",),
        types={
            "php": ("*.php", "*.php3", "*.php4", "*.php5", "*.php7", "*.php8", "*.pht", "*.phtml")
        },
        chunking=ChunkSpec(
            "php",
            defs={
                "function_definition": "function",
                "class_declaration": "class",
                "interface_declaration": "interface",
                "trait_declaration": "class",
                "enum_declaration": "class",
                "method_declaration": "function",
                "namespace_definition": "module",
            },
            values=_f("const_declaration", "property_declaration"),
            containers=_f("declaration_list", "enum_declaration_list", "compound_statement"),
        ),
        sample="<?php function f() {}\n",
    ),
    Language(
        "ruby",
        extensions=(".rb", ".rake", ".gemspec"),
        filenames=("gemfile", "rakefile", "podfile", "vagrantfile"),
        types={
            "ruby": ("config.ru", "Gemfile", ".irbrc", "Rakefile", "*.gemspec", "*.rb", "*.rbw")
        },
        chunking=ChunkSpec(
            "ruby",
            defs={
                "method": "function",
                "singleton_method": "function",
                "class": "class",
                "singleton_class": "class",
                "module": "module",
            },
            values=_f("assignment"),
            containers=_f("body_statement"),
        ),
        sample="def f\nend\n",
    ),
    Language(
        "kotlin",
        extensions=(".kt", ".kts"),
        types={"kotlin": ("*.kt", "*.kts")},
        chunking=ChunkSpec(
            "kotlin",
            defs={
                "class_declaration": "class",
                "object_declaration": "class",
                "companion_object": "class",
                "function_declaration": "function",
                "type_alias": "alias",
            },
            values=_f("property_declaration"),
            containers=_f("class_body", "enum_class_body"),
            hints={"interface": "interface"},
        ),
        relations=RelSpec(_f("import_header"), jvm_imports, _JVM_MEMBERS, _f("navigation_suffix")),
        family="jvm",
        sample="fun f() {}\n",
    ),
    Language(
        "swift",
        extensions=(".swift",),
        types={"swift": ("*.swift",)},
        chunking=ChunkSpec(
            "swift",
            defs={
                "class_declaration": "class",
                "protocol_declaration": "interface",
                "function_declaration": "function",
                "protocol_function_declaration": "function",
                "init_declaration": "function",
                "deinit_declaration": "function",
                "typealias_declaration": "alias",
            },
            values=_f("property_declaration"),
            containers=_f("class_body", "enum_class_body", "protocol_body"),
            default_names={"init_declaration": "init", "deinit_declaration": "deinit"},
        ),
        sample="func f() {}\n",
    ),
    Language(
        "bash",
        extensions=(".sh", ".bash", ".zsh"),
        filenames=(".bashrc", ".bash_profile", ".profile", ".zshrc"),
        types={
            "sh": (
                "*.bash",
                "*.csh",
                "*.ksh",
                "*.sh",
                "*.tcsh",
                "*.zsh",
                ".bashrc",
                ".bash_profile",
                ".profile",
                ".zshrc",
                ".zshenv",
                ".zprofile",
            )
        },
        chunking=ChunkSpec(
            "bash",
            defs={"function_definition": "function"},
            values=_f("variable_assignment"),
            # `{ ... }` wrapping a whole script (nvm.sh), definitions inside `if` branches
            containers=_f("compound_statement", "if_statement", "elif_clause", "else_clause"),
        ),
        sample="f() { :; }\n",
    ),
    Language(
        "lua",
        extensions=(".lua",),
        types={"lua": ("*.lua",)},
        chunking=ChunkSpec(
            "lua",
            defs={"function_declaration": "function"},
            values=_f("variable_declaration", "assignment_statement"),
        ),
        sample="function f() end\n",
    ),
    # a function is its type signature, Haddock comment and equations (one `function` node per
    # clause); an instance is a scope named after its class, not a definition of it
    Language(
        "haskell",
        extensions=(".hs",),
        types={"haskell": ("*.hs", "*.lhs", "*.cpphs", "*.c2hs", "*.hsc")},
        chunking=ChunkSpec(
            "haskell",
            defs={
                "data_type": "class",
                "newtype": "class",
                "type_synomym": "alias",
                "class": "interface",
                "instance": "",
                "function": "function",
                "bind": "function",
            },
            containers=_f("declarations", "class_declarations", "instance_declarations"),
            prefixes=_f("signature", "haddock", "pragma"),
        ),
        # (Lua's `variable` is a whole `a.b[c]` expression)
        relations=RelSpec(identifiers=_f("variable")),
        sample="f :: Int\nf = 1\n",
    ),
    # every definition is a macro call; `@doc`/`@spec` attributes above one belong to it
    Language(
        "elixir",
        extensions=(".ex", ".exs"),
        types={"elixir": ("*.ex", "*.eex", "*.exs")},
        chunking=ChunkSpec(
            "elixir",
            defs={},
            calls={
                "defmodule": "class",
                "defprotocol": "interface",
                "defimpl": "",
                "def": "function",
                "defp": "function",
                "defmacro": "function",
                "defmacrop": "function",
                "defguard": "function",
                "defguardp": "function",
                "defdelegate": "function",
            },
            containers=_f("do_block"),
            prefixes=_f("unary_operator"),
        ),
        sample="defmodule A do\n  def f, do: 1\nend\n",
    ),
    # `pub fn name(...)` and `const Name = struct {...}` are each wrapped in a `Decl`; a struct,
    # enum or union assigned to a constant is a type whose members are walked
    Language(
        "zig",
        extensions=(".zig",),
        types={"zig": ("*.zig",)},
        chunking=ChunkSpec(
            "zig",
            defs={"FnProto": "function"},
            values=_f("VarDecl"),
            containers=_f("ContainerDecl"),
            wrappers=_f("Decl"),
            value_kinds={"ContainerDecl": "class", "ErrorSetDecl": "class"},
            name_fields={"FnProto": "function", "VarDecl": "variable_type_function"},
        ),
        sample="fn f() void {}\n",
    ),
    # chunked by headings (chunking.markdown)
    Language(
        "markdown",
        extensions=(".md", ".markdown", ".mdx"),
        types={"markdown": _MARKDOWN, "md": _MARKDOWN},
    ),
    # chunked by line windows
    Language("json", extensions=(".json", ".jsonc"), types={"json": ("*.json", "composer.lock")}),
    Language("yaml", extensions=(".yaml", ".yml"), types={"yaml": ("*.yaml", "*.yml")}),
    Language("toml", extensions=(".toml",), types={"toml": ("*.toml", "Cargo.lock")}),
    Language("html", extensions=(".html", ".htm"), types={"html": ("*.htm", "*.html", "*.ejs")}),
    Language(
        "xml",
        extensions=(".xml",),
        types={
            "xml": (
                "*.xml",
                "*.xml.dist",
                "*.dtd",
                "*.xsl",
                "*.xslt",
                "*.xsd",
                "*.xjb",
                "*.rng",
                "*.sch",
                "*.xhtml",
            )
        },
    ),
    Language("css", extensions=(".css",), types={"css": ("*.css", "*.scss")}),
    Language("scss", extensions=(".scss",)),
    Language("sql", extensions=(".sql",), types={"sql": ("*.sql", "*.psql")}),
    Language("ini", extensions=(".ini", ".cfg")),
    Language("rst", extensions=(".rst",), types={"rst": ("*.rst",)}),
    Language("text", extensions=(".txt",), types={"txt": ("*.txt",)}),
    Language("proto", extensions=(".proto",), types={"protobuf": ("*.proto",)}),
    Language("graphql", extensions=(".graphql",)),
    Language("hcl", extensions=(".tf",)),
    Language("vue", extensions=(".vue",)),
    Language("svelte", extensions=(".svelte",)),
    Language("dart", extensions=(".dart",), types={"dart": ("*.dart",)}),
    Language("erlang", extensions=(".erl",), types={"erlang": ("*.erl", "*.hrl")}),
    Language("ocaml", extensions=(".ml",), types={"ocaml": ("*.ml", "*.mli", "*.mll", "*.mly")}),
    Language("r", extensions=(".r",), types={"r": ("*.R", "*.r", "*.Rmd", "*.Rnw")}),
    Language("julia", extensions=(".jl",)),
    Language(
        "perl",
        extensions=(".pl", ".pm"),
        types={"perl": ("*.perl", "*.pl", "*.PL", "*.plh", "*.plx", "*.pm", "*.t")},
    ),
    Language(
        "make",
        filenames=("makefile", "gnumakefile"),
        types={
            "make": (
                "[Gg][Nn][Uu]makefile",
                "[Mm]akefile",
                "[Gg][Nn][Uu]makefile.am",
                "[Mm]akefile.am",
                "[Gg][Nn][Uu]makefile.in",
                "[Mm]akefile.in",
                "*.mk",
                "*.mak",
            )
        },
    ),
    Language(
        "dockerfile",
        filenames=("dockerfile",),
        prefixes=("dockerfile",),
        types={"docker": ("*Dockerfile*",)},
    ),
    Language(
        "cmake", filenames=("cmakelists.txt",), types={"cmake": ("*.cmake", "CMakeLists.txt")}
    ),
)

OTHER_TYPES: Mapping[str, tuple[str, ...]] = MappingProxyType(
    {
        "clojure": ("*.clj", "*.cljc", "*.cljs", "*.cljx"),
        "csv": ("*.csv",),
        "jsonl": ("*.jsonl",),
        "tex": ("*.tex", "*.ltx", "*.cls", "*.sty", "*.bib", "*.dtx", "*.ins"),
    }
)
"""rg types of files no language above is detected in."""
