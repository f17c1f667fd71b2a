"""What one language record holds: how files are named, the rg types, the chunking and relations
specs, the resolver family and the doctor's sample. Standard library only (the thin client reads the
types)."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

ImportParser = Callable[[str], list[tuple[str, str, str]]]
"""An import statement's text -> (module, name, alias) per name it binds."""


@dataclass(frozen=True)
class ChunkSpec:
    """Node types of one grammar: definitions, their bodies and what wraps or precedes them.

    grammar: the tree-sitter-language-pack grammar name. defs: definition node type -> kind ("" = a
    named scope that is not itself a symbol, e.g. a Rust impl block). values: declaration node types
    recorded as "value" symbols, upgraded to "function"/"class" when the assigned value is one.
    containers: body node types whose children are walked for nested definitions (and are
    transparent when met as children). wrappers: nodes whose span belongs to the definition(s)
    inside (decorators, export). prefixes: sibling node types directly above a definition that
    belong to its chunk. hints: a direct child type (named or keyword) that overrides the kind (Go
    interface_type). scope_fields: definition type -> field holding the enclosing type (Go method
    receivers). name_fields: definition type -> field holding its name when it has no "name" (Rust
    impl). default_names: definition type -> name when the node has none (Swift init). calls:
    definitions made by calling a macro (Elixir's `defmodule`, `def`): the called name -> kind.
    assignments: node types that define something only when they assign a function or class
    (JavaScript's `app.use = function use(fn) {...}`, `exports.parse = (s) => ...`). value_kinds:
    node types that, as the value of a declaration, make it a definition of that kind (Zig's `const
    Parser = struct {...}`); a container among them holds the members."""

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


@dataclass(frozen=True)
class RelSpec:
    """Node types of one grammar for relations: import statements (and their parser) and member
    accesses.

    members: node types whose first named child is the object of the others (`m.f`); suffixes: node
    types holding the member name after the object (Kotlin `navigation_suffix`); identifiers: node
    types that are uses besides the common identifier types (Haskell's `variable`);
    nested_functions: functions declared inside functions are definitions, and a function's
    parameters and variables shadow the names they bind (JavaScript's closures); extractor:
    "module:function" of a language's own extraction (Python's scoped one), which then does all."""

    imports: frozenset[str] = frozenset()
    parse_imports: ImportParser | None = None
    members: frozenset[str] = frozenset()
    suffixes: frozenset[str] = frozenset()
    identifiers: frozenset[str] = frozenset()
    nested_functions: bool = False
    extractor: str = ""


@dataclass(frozen=True)
class Language:
    """One language: every fact zg needs about it, in one record.

    extensions: file name endings (lower case, with the dot); filenames: whole lower-case file
    names; prefixes: lower-case file name starts (`dockerfile.dev`). sniff: (extension, pattern): a
    file of another language's `extension` is this language when its first 200,000 characters match
    (a C++ `.h`). types: rg type names (`-t`) -> globs. chunking: the tree-sitter spec (None:
    chunked by lines, or by headings for markdown). relations: extra relations facts (None: the
    generic walk). family: the resolver family (`relations.resolve.RESOLVERS`) whose import rules
    apply; languages of one family import one another's files ("" = its own name). sample: a snippet
    the grammar must find a definition in (`zg doctor`)."""

    name: str
    extensions: tuple[str, ...] = ()
    filenames: tuple[str, ...] = ()
    prefixes: tuple[str, ...] = ()
    sniff: tuple[str, re.Pattern[str]] | None = None
    types: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    chunking: ChunkSpec | None = None
    relations: RelSpec | None = None
    family: str = ""
    sample: str = ""

    @property
    def resolver_family(self) -> str:
        """The family whose import rules apply (its own name unless it shares another's)."""
        return self.family or self.name
