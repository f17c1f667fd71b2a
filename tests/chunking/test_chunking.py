"""Chunking with real tree-sitter grammars: what a search user would see in the chunks."""

from __future__ import annotations

import pytest

from zgrep.chunking import chunk_file, detect_language, extract_symbols
from zgrep.types import Chunk
from zgrep.vocab import SYMBOL_KINDS


def pad(statement: str, count: int = 10) -> str:
    """`count` lines of a body statement, numbered so the lines differ."""
    return "\n".join(statement.format(i=i) for i in range(count))


def line_of(text: str, marker: str) -> int:
    """1-based line of the only line containing `marker`."""
    hits = [n for n, line in enumerate(text.split("\n"), 1) if marker in line]
    assert len(hits) == 1, (marker, hits)
    return hits[0]


def find(chunks: list[Chunk], symbol: str) -> Chunk:
    matches = [c for c in chunks if c.symbol == symbol]
    assert matches, (symbol, [(c.symbol, c.start_line, c.end_line) for c in chunks])
    return matches[0]


def covered(chunks: list[Chunk]) -> set[int]:
    return {n for c in chunks for n in range(c.start_line, c.end_line + 1)}


def nonblank(text: str) -> set[int]:
    return {n for n, line in enumerate(text.split("\n"), 1) if line.strip()}


# (path, source, [(symbol, kind, first-line marker, last-line marker)], (method, scope) or None)
SAMPLES = {
    "python": (
        "pkg/mod.py",
        f"""import os


def compute(a):
    total = 0
{pad("    total += {i}")}
    return total  # end compute


class Widget(Base):
    def render(self):
        total = 0
{pad("        total += {i}")}
        return total  # end Widget
""",
        [
            ("compute", "function", "def compute", "# end compute"),
            ("Widget", "class", "class Widget", "# end Widget"),
        ],
        ("render", "Widget"),
    ),
    "javascript": (
        "web/app.js",
        f"""import x from "y";

function compute(a) {{
  let total = 0;
{pad("  total += {i};")}
  return total;
}} // end compute

class Widget extends Base {{
  render() {{
    let total = 0;
{pad("    total += {i};")}
    return total;
  }}
}} // end Widget
""",
        [
            ("compute", "function", "function compute", "// end compute"),
            ("Widget", "class", "class Widget", "// end Widget"),
        ],
        ("render", "Widget"),
    ),
    "typescript": (
        "web/app.ts",
        f"""import {{ x }} from "y";

export function compute(a: number): number {{
  let total = 0;
{pad("  total += {i};")}
  return total;
}} // end compute

export class Widget implements Shape {{
  render(): number {{
    let total = 0;
{pad("    total += {i};")}
    return total;
  }}
}} // end Widget

interface Shape {{ render(): number; }} // Shape
""",
        [
            ("compute", "function", "export function compute", "// end compute"),
            ("Widget", "class", "export class Widget", "// end Widget"),
        ],
        ("render", "Widget"),
    ),
    "tsx": (
        "web/view.tsx",
        f"""import React from "react";

export const compute = (a: number): number => {{
  let total = 0;
{pad("  total += {i};")}
  return total;
}}; // end compute

class Widget extends React.Component {{
  render() {{
    const total = 0;
{pad("    console.log({i});")}
    return <div>{{total}}</div>;
  }}
}} // end Widget
""",
        [
            ("compute", "function", "export const compute", "// end compute"),
            ("Widget", "class", "class Widget", "// end Widget"),
        ],
        ("render", "Widget"),
    ),
    "go": (
        "svc/main.go",
        f"""package main

import "fmt"

func compute(a int) int {{
\ttotal := 0
{pad("	total += {i}")}
\treturn total
}} // end compute

type Widget struct {{
\tname string
}} // end Widget

func (w *Widget) Render() int {{
\ttotal := 0
{pad("	fmt.Println({i})")}
\treturn total
}}
""",
        [
            ("compute", "function", "func compute", "// end compute"),
            ("Widget", "class", "type Widget struct", "// end Widget"),
        ],
        ("Render", "Widget"),
    ),
    "rust": (
        "src/lib.rs",
        f"""use std::io;

fn compute(a: i32) -> i32 {{
    let mut total = 0;
{pad("    total += {i};")}
    total
}} // end compute

impl Widget {{
    pub fn render(&self) -> i32 {{
        let mut total = 0;
{pad("        total += {i};")}
        total
    }}
}}

pub struct Widget {{
    name: String,
}} // end Widget
""",
        [
            ("compute", "function", "fn compute", "// end compute"),
            ("Widget", "class", "pub struct Widget", "// end Widget"),
        ],
        ("render", "Widget"),
    ),
    "java": (
        "src/Widget.java",
        f"""package a.b;

public class Widget extends Base {{
    private int size = 1;

    public int render(int a) {{
        int total = 0;
{pad("        total += {i};")}
        return total;
    }}
}} // end Widget

interface Shape {{
    int compute(int a);
{pad("    int other{i}();")}
}} // end Shape
""",
        [
            ("Widget", "class", "public class Widget", "// end Widget"),
            ("Shape", "interface", "interface Shape", "// end Shape"),
        ],
        ("render", "Widget"),
    ),
    "c": (
        "src/util.c",
        f"""#include <stdio.h>

static int compute(int a) {{
  int total = 0;
{pad("  total += {i};")}
  return total;
}} // end compute

struct Widget {{
{pad("  int field{i};")}
}}; // end Widget
""",
        [
            ("compute", "function", "static int compute", "// end compute"),
            ("Widget", "class", "struct Widget", "// end Widget"),
        ],
        None,
    ),
    "cpp": (
        "src/widget.cpp",
        f"""#include <vector>

int compute(int a) {{
  int total = 0;
{pad("  total += {i};")}
  return total;
}} // end compute

class Widget : public Base {{
 public:
  int render() {{
    int total = 0;
{pad("    total += {i};")}
    return total;
  }}
}}; // end Widget
""",
        [
            ("compute", "function", "int compute", "// end compute"),
            ("Widget", "class", "class Widget", "// end Widget"),
        ],
        ("render", "Widget"),
    ),
    "csharp": (
        "src/Widget.cs",
        f"""using System;

public class Widget : Base {{
    public int Render(int a) {{
        int total = 0;
{pad("        total += {i};")}
        return total;
    }}
}} // end Widget

public interface IShape {{
{pad("    int Area{i}();")}
}} // end IShape
""",
        [
            ("Widget", "class", "public class Widget", "// end Widget"),
            ("IShape", "interface", "public interface IShape", "// end IShape"),
        ],
        ("Render", "Widget"),
    ),
    "scala": (
        "src/Widget.scala",
        f"""package a

object Widget {{
  def render(a: Int): Int = {{
    var total = 0
{pad("    total += {i}")}
    total
  }}
}} // end Widget

trait Shape {{
{pad("  def area{i}(): Int")}
}} // end Shape
""",
        [
            ("Widget", "class", "object Widget", "// end Widget"),
            ("Shape", "interface", "trait Shape", "// end Shape"),
        ],
        ("render", "Widget"),
    ),
    "php": (
        "src/Widget.php",
        f"""<?php
namespace App;

function compute($a) {{
    $total = 0;
{pad("    $total += {i};")}
    return $total;
}} // end compute

class Widget extends Base {{
    public function render($a) {{
        $total = 0;
{pad("        $total += {i};")}
        return $total;
    }}
}} // end Widget
""",
        [
            ("compute", "function", "function compute", "// end compute"),
            ("Widget", "class", "class Widget", "// end Widget"),
        ],
        ("render", "Widget"),
    ),
    "ruby": (
        "lib/widget.rb",
        f"""require "set"

def compute(a)
  total = 0
{pad("  total += {i}")}
  total
end # end compute

class Widget < Base
  def render
    total = 0
{pad("    total += {i}")}
    total
  end
end # end Widget
""",
        [
            ("compute", "function", "def compute", "# end compute"),
            ("Widget", "class", "class Widget", "# end Widget"),
        ],
        ("render", "Widget"),
    ),
    "kotlin": (
        "src/Widget.kt",
        f"""package a

fun compute(a: Int): Int {{
    var total = 0
{pad("    total += {i}")}
    return total
}} // end compute

class Widget(val name: String) : Base() {{
    fun render(): Int {{
        var total = 0
{pad("        total += {i}")}
        return total
    }}
}} // end Widget
""",
        [
            ("compute", "function", "fun compute", "// end compute"),
            ("Widget", "class", "class Widget", "// end Widget"),
        ],
        ("render", "Widget"),
    ),
    "swift": (
        "Sources/Widget.swift",
        f"""import Foundation

func compute(a: Int) -> Int {{
    var total = 0
{pad("    total += {i}")}
    return total
}} // end compute

protocol Shape {{
{pad("    func area{i}() -> Int")}
}} // end Shape

class Widget: Base {{
    func render() -> Int {{
        var total = 0
{pad("        total += {i}")}
        return total
    }}
}}
""",
        [
            ("compute", "function", "func compute", "// end compute"),
            ("Shape", "interface", "protocol Shape", "// end Shape"),
        ],
        ("render", "Widget"),
    ),
    "bash": (
        "bin/run.sh",
        f"""#!/usr/bin/env bash
set -euo pipefail

compute() {{
  local total=0
{pad("  total=$((total + {i}))")}
  echo "$total"
}} # end compute

function deploy {{
{pad('  echo "step {i}"')}
}} # end deploy
""",
        [
            ("compute", "function", "compute() {", "# end compute"),
            ("deploy", "function", "function deploy", "# end deploy"),
        ],
        None,
    ),
    "lua": (
        "lua/widget.lua",
        f"""local Widget = {{}}

local function compute(a)
  local total = 0
{pad("  total = total + {i}")}
  return total
end -- end compute

function Widget:render()
  local total = 0
{pad("  total = total + {i}")}
  return total
end -- end render
""",
        [
            ("compute", "function", "local function compute", "-- end compute"),
            ("render", "function", "function Widget:render", "-- end render"),
        ],
        ("render", "Widget"),
    ),
    "haskell": (
        "src/Widget.hs",
        f"""module Widget where

import Data.List (sort)

-- | The state of a widget.
data Widget = Widget
{pad("  {{ field{i} :: Int }}")}
  deriving (Show)  -- end Widget

-- | Adds up.
compute :: [Int] -> Int
compute xs =
{pad("  let y{i} = sum xs in")}
  y0  -- end compute

class Render a where
  render :: a -> String
  render _ =
{pad("    show {i} ++")}
    ""  -- end render
""",
        [
            (
                "Widget",
                "class",
                "-- | The state of a widget.",
                "-- end Widget",
            ),  # (a comment the grammar files under the imports)
            ("compute", "function", "-- | Adds up.", "-- end compute"),
        ],
        ("render", "Render"),
    ),
    "elixir": (
        "lib/shop/cart.ex",
        f"""defmodule Shop.Cart do
  @moduledoc "A cart."
  alias Shop.Item

  @doc "Adds up."
  @spec total([Item.t()]) :: integer
  def total(items) when is_list(items) do
{pad("    x{i} = length(items)", 30)}
    x0
  end  # end total

  defp helper(x), do: x

  defprotocol Render do
    def render(value)
  end
end  # end Cart
""",
        [
            ("Cart", "class", "defmodule Shop.Cart", "alias Shop.Item"),
            ("total", "function", '@doc "Adds up."', "# end total"),
        ],
        ("render", "Shop.Cart.Render"),
    ),
    # the grammar's node types are capitalised (`Decl`, `FnProto`, `VarDecl`); a type is a struct value
    "zig": (
        "src/widget.zig",
        f"""const std = @import("std");

/// Adds up.
pub fn compute(a: u32) u32 {{
    var total: u32 = 0;
{pad("    total += {i};")}
    return total;
}} // end compute

/// A widget.
pub const Widget = struct {{
    size: usize = 0,

    pub fn render(self: *Widget) usize {{
        var total: usize = 0;
{pad("        total += {i};", 30)}
        return total;
    }}
}}; // end Widget
""",
        [
            ("compute", "function", "/// Adds up.", "// end compute"),
            ("Widget", "class", "/// A widget.", "// end Widget"),
        ],
        ("render", "Widget"),
    ),
}


@pytest.mark.parametrize("language", sorted(SAMPLES))
def test_each_language_chunks_at_definitions(language: str) -> None:
    path, source, expected, method = SAMPLES[language]
    assert detect_language(path) == language
    chunks = chunk_file(path, source)
    assert all(c.language == language and c.symbol_kind in SYMBOL_KINDS for c in chunks)
    spans = {(c.symbol, c.symbol_kind, c.start_line, c.end_line) for c in chunks}
    for symbol, kind, first, last in expected:
        assert (symbol, kind, line_of(source, first), line_of(source, last)) in spans, spans
    for chunk in chunks:
        assert chunk.content == "\n".join(source.split("\n")[chunk.start_line - 1 : chunk.end_line])
    assert nonblank(source) <= covered(chunks)
    symbols = extract_symbols(source, language)
    for symbol, kind, first, last in expected:
        assert any(s.name == symbol and s.kind == kind for s in symbols), symbols
    if method is not None:
        name, scope = method
        assert any(s.name == name and s.kind == "function" and s.scope == scope for s in symbols), (
            symbols
        )


def test_large_class_gives_header_and_method_chunks_with_class_scope() -> None:
    methods = "\n\n".join(
        f'    def method_{n}(self, value):\n        """Step {n}."""\n'
        + pad("        value = transform(value, {i})", 12)
        + "\n        return value"
        for n in range(6)
    )
    source = (
        '@dataclass\nclass Pipeline(Base):\n    """Runs steps."""\n\n'
        "    retries = 3\n\n" + methods + "\n"
    )
    chunks = chunk_file("pipeline.py", source)
    header = chunks[0]
    assert (header.symbol, header.symbol_kind, header.start_line) == ("Pipeline", "class", 1)
    assert header.end_line == line_of(source, "retries = 3")
    for n in range(6):
        chunk = find(chunks, f"method_{n}")
        assert chunk.symbol_kind == "function" and chunk.scope == "Pipeline"
        assert chunk.start_line == line_of(source, f"def method_{n}(")
        assert chunk.context.startswith("class Pipeline(Base):")
    symbol = next(s for s in extract_symbols(source, "python") if s.name == "Pipeline")
    assert (symbol.start, symbol.end) == (1, len(source.split("\n")) - 1)


def test_nested_namespace_headers_lead_the_first_member_instead_of_being_chunks_of_their_own() -> (
    None
):
    # rails' engine/configuration.rb: `module Rails` and `class Engine` only wrap the class defined inside;
    # alone they were one-line chunks labelled Rails and Engine, noise at the top of `Engine` searches
    methods = "\n\n".join(
        f"      def step_{n}(value)\n"
        + pad("        value = transform(value, {i})", 12)
        + "\n      end"
        for n in range(4)
    )
    source = (
        "module Rails\n  class Engine\n    class Configuration < ::Rails::Railtie::Configuration\n"
        "      attr_reader :root\n\n" + methods + "\n    end\n  end\nend\n"
    )
    chunks = chunk_file("engine/configuration.rb", source)
    assert all(c.end_line - c.start_line >= 2 for c in chunks), [
        (c.start_line, c.end_line) for c in chunks
    ]
    first = chunks[0]
    assert (first.start_line, first.symbol, first.symbol_kind, first.scope) == (
        1,
        "Configuration",
        "class",
        "Rails.Engine",
    )
    assert "Engine" not in first.names and "Rails" not in first.names  # wrapped, not defined here
    assert "step_0" in first.names  # the class's own two lines lead its first method in turn
    assert find(chunks, "step_1").scope == "Rails.Engine.Configuration"


def test_a_two_line_interface_header_leads_its_first_member_and_names_the_chunk() -> None:
    methods = "\n\n".join(
        f"    /**\n     * Step {n}.\n" + pad("     * Detail {i}.", 14) + "\n     */\n"
        f"    public function step{n}($value);"
        for n in range(6)
    )
    source = "<?php\n\nnamespace App;\n\ninterface Repository extends Base\n{\n" + methods + "\n}\n"
    chunks = chunk_file("Repository.php", source)
    header = next(c for c in chunks if c.start_line == line_of(source, "interface Repository"))
    assert (header.symbol, header.symbol_kind) == ("Repository", "interface")
    assert header.end_line > line_of(source, "{") and "step0" in header.names


def test_large_function_splits_into_overlapping_pieces_covering_every_line() -> None:
    source = (
        "def long_job(data):\n" + pad("    data = step(data, {i})", 200) + "\n    return data\n"
    )
    chunks = chunk_file("job.py", source)
    assert len(chunks) >= 4
    assert all(c.symbol == "long_job" and c.symbol_kind == "function" for c in chunks)
    assert chunks[0].start_line == 1 and chunks[-1].end_line == 202
    for before, after in zip(chunks, chunks[1:]):
        assert after.start_line <= before.end_line < after.end_line
    assert covered(chunks) == set(range(1, 203))
    assert chunks[1].context.startswith("def long_job(data):")


def test_tiny_adjacent_functions_merge_into_one_chunk() -> None:
    source = "\n\n".join(f"def tiny_{n}(x):\n    return x + {n}" for n in range(8)) + "\n"
    chunks = chunk_file("tiny.py", source)
    assert len(chunks) == 1
    assert (chunks[0].start_line, chunks[0].end_line) == (1, 23)
    assert chunks[0].symbol_kind == "function"
    assert [s.name for s in extract_symbols(source, "python")] == [f"tiny_{n}" for n in range(8)]


def test_decorators_and_comments_above_belong_to_the_definition() -> None:
    body = pad("    total += {i}", 12)
    source = f"import os\n\n\n# Handles the request.\n@app.route('/')\ndef index():\n{body}\n"
    chunk = find(chunk_file("app.py", source), "index")
    assert (chunk.start_line, chunk.end_line) == (4, 18)
    symbol = extract_symbols(source, "python")[-1]
    assert (symbol.name, symbol.start, symbol.end) == ("index", 5, 18)


@pytest.mark.parametrize(
    "path, source",
    [
        (
            "broken.py",
            "def good():\n    return helper(1)\n\ndef broken(:\n    x = [\n\n"
            "class After:\n    def m(self): pass\n",
        ),
        (
            "broken.js",
            "function ok() { return 1; }\nfunction bad( {\n  let = ;\n}}}\nconst z = 3;\n",
        ),
        ("broken.go", "package main\nfunc f() {\n  if {\n}\n"),
    ],
)
def test_syntax_errors_still_cover_the_whole_file(path: str, source: str) -> None:
    chunks = chunk_file(path, source)
    assert nonblank(source) <= covered(chunks)


@pytest.mark.parametrize("text", ["", "   \n\n\t\n"])
def test_empty_text_gives_no_chunks(text: str) -> None:
    assert chunk_file("empty.py", text) == []
    assert extract_symbols(text, "python") == []


@pytest.mark.parametrize("path", ["blob.py", "blob.c", "blob.bin", "blob.md"])
def test_binary_ish_text_does_not_crash(path: str) -> None:
    text = "".join(chr(n) for n in range(0, 2048, 7)) + "\ud800\x00\n\r\n" * 50
    chunks = chunk_file(path, text)
    assert chunks and chunks[0].start_line == 1


def test_markdown_splits_by_heading_and_keeps_front_matter_first() -> None:
    source = (
        "---\nid: ADR-1\ntitle: Use Milvus\n---\n# Use Milvus\n\nWe decided.\n\n"
        "## Context\n```bash\n# not a heading\n```\nWhy.\n### Details\nMore.\n"
        "## Consequences\n" + pad("Line {i}.", 80) + "\n"
    )
    chunks = chunk_file("docs/adr/0001.md", source)
    assert [c.symbol for c in chunks[:4]] == ["Use Milvus", "Context", "Details", "Consequences"]
    assert chunks[0].start_line == 1 and "id: ADR-1" in chunks[0].content
    assert (chunks[1].start_line, chunks[1].end_line) == (9, 13)
    assert "## Context" in chunks[2].context
    assert len([c for c in chunks if c.symbol == "Consequences"]) >= 2
    assert all(c.symbol_kind == "module" and c.language == "markdown" for c in chunks)
    sections = {(s.name, s.start, s.end) for s in extract_symbols(source, "markdown")}
    assert ("Context", 9, 15) in sections and ("Details", 14, 15) in sections


def test_extract_symbols_sees_a_renamed_function_only_under_its_new_name() -> None:
    before = "class Store:\n    def fetch_user(self, uid):\n        return uid\n"
    after = before.replace("fetch_user", "load_user")
    assert ("fetch_user", "Store") in {(s.name, s.scope) for s in extract_symbols(before, "python")}
    names = {s.name for s in extract_symbols(after, "python")}
    assert "load_user" in names and "fetch_user" not in names


def test_other_text_falls_back_to_overlapping_line_windows() -> None:
    source = pad("key_{i}: value", 100) + "\n"
    chunks = chunk_file("config/settings.yaml", source)
    assert len(chunks) == 3 and all(c.symbol_kind == "module" for c in chunks)
    assert covered(chunks) == set(range(1, 101))
    assert chunks[1].start_line <= chunks[0].end_line


@pytest.mark.parametrize(
    "path, language",
    [
        ("a/b.py", "python"),
        ("x.mjs", "javascript"),
        ("x.tsx", "tsx"),
        ("x.h", "c"),
        ("x.hpp", "cpp"),
        ("Makefile", "make"),
        ("README.md", "markdown"),
        ("data.json", "json"),
        ("noext", "text"),
        ("weird.xyz", "text"),
        (".bashrc", "bash"),
    ],
)
def test_detect_language(path: str, language: str) -> None:
    assert detect_language(path) == language


def test_a_definition_that_fits_whole_lists_what_it_defines_inside() -> None:
    # a small class is one chunk labelled with the class; its methods are definitions in it too, so a search
    # for `render` finds them by name (dapper's SqlMapper.IParameterCallbacks.cs: namespace > class > interface)
    source = "class Widget:\n    def render(self):\n        return 1\n\n    def resize(self, n):\n        return n\n"
    (chunk,) = chunk_file("widget.py", source)
    assert (chunk.symbol, chunk.names) == ("Widget", ("Widget", "render", "resize"))
    source = (
        "namespace Dapper\n{\n    public static partial class SqlMapper\n    {\n"
        "        public interface IParameterCallbacks\n        {\n            void OnCompleted();\n        }\n    }\n}\n"
    )
    (chunk,) = chunk_file("SqlMapper.IParameterCallbacks.cs", source)
    assert chunk.names == ("Dapper", "SqlMapper", "IParameterCallbacks", "OnCompleted")


@pytest.mark.parametrize("path", ["lib/application.js", "src/application.ts"])
def test_functions_assigned_to_properties_are_definitions(path: str) -> None:
    # express's style: `app.use = function use(fn) {...}`, `exports.parse = ...`; data assignments are not
    body = pad("  this.x{i} = {i};", 40)
    source = (
        f"var app = exports = module.exports = {{}};\n\n/**\n * Proxy to the router.\n */\n"
        f"app.use = function use(fn) {{\n{body}\n}};\n\napp.locals = {{}};\n"
        "exports.parse = (text) => text.trim();\n"
    )
    chunks = chunk_file(path, source)
    use = find(chunks, "use")
    assert (use.symbol_kind, use.start_line) == ("function", line_of(source, "/**"))
    names = {s.name: s.kind for s in extract_symbols(source, detect_language(path))}
    assert (
        names.get("use") == "function"
        and names.get("parse") == "function"
        and "locals" not in names
    )


RACK_RESPONSE = (
    "# frozen_string_literal: true\n\nrequire 'time'\n\nmodule Rack\n"
    "  # Rack::Response provides a convenient interface to create a Rack\n  # response.\n"
    "  class Response\n"
    + "\n\n".join(
        f"    def step_{n}(value)\n" + pad("      value = transform(value, {i})", 12) + "\n    end"
        for n in range(4)
    )
    + "\n\n    include Helpers\n  end\nend\n"
)


def test_a_class_nested_in_a_module_keeps_the_comment_above_it() -> None:
    # rack's response.rb: the comment sits in the module's body, the class in a `body_statement` below it
    chunks = chunk_file("lib/rack/response.rb", RACK_RESPONSE)
    header = next(
        c for c in chunks if c.start_line <= line_of(RACK_RESPONSE, "class Response") <= c.end_line
    )
    assert header.symbol == "Response" and header.start_line <= line_of(
        RACK_RESPONSE, "Rack::Response provides"
    )


def test_a_body_line_between_members_belongs_to_the_class_without_defining_it() -> None:
    # `include Helpers` after the last method was a one-line chunk labelled `Response (class)` that the
    # exact-name boost ranked like the class itself
    chunks = chunk_file("lib/rack/response.rb", RACK_RESPONSE)
    tail = next(
        c for c in chunks if c.start_line <= line_of(RACK_RESPONSE, "include Helpers") <= c.end_line
    )
    assert (tail.symbol, tail.symbol_kind, tail.scope) == (
        "",
        "class",
        "Rack.Response",
    ) and "Response" in tail.names
    assert [c.symbol for c in chunks].count("Response") == 1


def test_only_the_piece_holding_the_header_line_of_a_long_commented_class_is_labelled_with_it() -> (
    None
):
    # rails' engine.rb: 340 lines of comment above `class Engine < Railtie` gave ten chunks labelled Engine
    comment = pad("  # Engine documentation line {i}.", 150)
    methods = "\n\n".join(
        f"    def step_{n}(value)\n" + pad("      value = transform(value, {i})", 12) + "\n    end"
        for n in range(4)
    )
    source = f"module Rails\n{comment}\n  class Engine < Railtie\n{methods}\n  end\nend\n"
    chunks = chunk_file("railties/lib/rails/engine.rb", source)
    labelled = [c for c in chunks if c.symbol == "Engine"]
    assert (
        len(labelled) == 1
        and labelled[0].start_line <= line_of(source, "class Engine") <= labelled[0].end_line
    )
    assert covered(chunks) >= set(range(2, 152))  # the comment is still searchable, inside Engine
    assert all("Engine" in c.names for c in chunks if c.end_line < line_of(source, "class Engine"))


def test_functions_defined_inside_a_function_are_definitions_but_its_locals_are_not() -> None:
    # redux's createStore defines getState, dispatch and replaceReducer inside itself: a search for
    # replaceReducer found the interface's signature, not the chunk of createStore that implements it
    inner = "\n\n".join(
        f"  function step{n}(value: number) {{\n"
        + pad("    value = transform(value, {i})", 12)
        + "\n    return value\n  }"
        for n in range(4)
    )
    source = (
        f"export function createStore(reducer: Reducer) {{\n  let currentState = undefined\n"
        f"  const listeners = new Map()\n\n{inner}\n\n  return {{ step0, step1 }}\n}}\n"
    )
    chunks = chunk_file("src/createStore.ts", source)
    step2 = find(chunks, "step2")
    assert (step2.symbol_kind, step2.scope) == ("function", "createStore")
    assert step2.start_line == line_of(source, "function step2(")
    names = {s.name for s in extract_symbols(source, "typescript")}
    assert {"createStore", "step0", "step3"} <= names and not names & {"currentState", "listeners"}
    assert nonblank(source) <= covered(chunks)


@pytest.mark.parametrize(
    "path, source, module",
    [
        (
            "lua/telescope/finders/async_job_finder.lua",
            'local async_job = require "telescope.async_job"\n',
            "async_job",
        ),
        ("lib/router/index.js", "const debug = require('debug')('express:router');\n", "debug"),
        ("src/main.zig", 'const std = @import("std");\n', "std"),
    ],
)
def test_a_module_imported_into_a_name_is_not_a_definition_of_it(
    path: str, source: str, module: str
) -> None:
    # telescope's async_job_finder.lua took the exact-name boost for `async_job`, ahead of async_job.lua
    body = "\n".join(
        f"local x{i} = {i}" if path.endswith(".lua") else f"const x{i} = {i};" for i in range(3)
    )
    chunks = chunk_file(path, f"{source}\n{body}\n")
    assert all(module not in c.names for c in chunks), [(c.symbol, c.names) for c in chunks]
    assert module not in {
        s.name for s in extract_symbols(f"{source}\n{body}\n", detect_language(path))
    }
