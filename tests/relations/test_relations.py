"""`zg callers` and `zg trace` on real repositories: import resolution, incremental updates, server mode."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from daemon_helpers import User
from zgrep.relations.extract import extract
from zgrep.relations.graph import Graph
from zgrep.relations.store import RELATIONS_DB, RelationsStore

Zg = Callable[..., subprocess.CompletedProcess[str]]

FILES = {
    "pkg/__init__.py": "",
    "pkg/a.py": "def helper(x):\n    return x + 1\n",
    "pkg/b.py": "def helper(x):\n    return x * 2\n",
    "pkg/use_a.py": "from pkg.a import helper\n\n\ndef run_a(v):\n    return helper(v)\n",
    "pkg/use_b.py": "from .b import helper as h\n\n\ndef run_b(v):\n    return h(v)\n",
    "pkg/use_mod.py": (
        "import pkg.a as amod\nfrom pkg.use_a import run_a\n\n\ndef run_mod(v):\n"
        "    return amod.helper(v) + run_a(v)\n"
    ),
    "pkg/loop.py": "def ping(n):\n    return pong(n - 1)\n\n\ndef pong(n):\n    return ping(n) if n else 0\n",
    "web/a.ts": "export function fmt(n: number): string {\n  return String(n);\n}\n",
    "web/b.ts": "export function fmt(n: number): string {\n  return '#' + n;\n}\n",
    "web/view.ts": "import { fmt } from './a';\n\nexport function render(n: number) {\n  return fmt(n);\n}\n",
    "web/other.ts": "import * as b from './b';\n\nexport function show(n: number) {\n  return b.fmt(n);\n}\n",
    "go.mod": "module example.com/proj\n",
    "go/util/util.go": "package util\n\nfunc Parse(s string) int { return len(s) }\n",
    "go/cmd/main.go": (
        'package main\n\nimport u "example.com/proj/go/util"\n\nfunc Parse(s string) int { return 0 }\n\n'
        'func main() { u.Parse("x") }\n\nfunc local() int { return Parse("y") }\n'
    ),
    "rs/src/net/conn.rs": "pub fn connect(addr: &str) -> bool { !addr.is_empty() }\n",
    "rs/src/other.rs": "pub fn connect(addr: &str) -> bool { addr.is_empty() }\n",
    "rs/src/lib.rs": 'mod net;\nuse crate::net::conn::connect;\n\npub fn connect_all() -> bool { connect("a") }\n',
}


def write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)


def run_json(zg: Zg, root: Path, *args: str) -> dict[str, Any]:
    proc = zg(*args, "--json", "--mode", "direct", cwd=root)
    assert proc.returncode in (0, 1), proc.stderr
    return json.loads(proc.stdout)


def callers_of(zg: Zg, root: Path, symbol: str, *args: str) -> list[tuple[str, str, bool]]:
    """Callers other than the import statements naming the symbol (those are tested apart)."""
    result = run_json(zg, root, "callers", symbol, *args)
    return [
        (c["path"], c["symbol"], c["resolved"])
        for c in result["callers"]
        if c["edges"] != ["import"]
    ]


def names(node: dict[str, Any]) -> dict[str, Any]:
    """A trace tree as {symbol: children} (cycle-cut nodes as "symbol*")."""
    return {(c["symbol"] + ("*" if c.get("cycle") else "")): names(c) for c in node["children"]}


@pytest.fixture
def indexed(repo: Path, zg: Zg) -> Path:
    write(repo, FILES)
    out = zg("index", "--mode", "direct", cwd=repo)
    assert out.returncode == 0, out.stderr
    return repo


def test_callers_resolve_imports_across_same_named_definitions(indexed: Path, zg: Zg) -> None:
    root = indexed
    assert callers_of(zg, root, "helper", "--source-file", "pkg/a.py") == [
        ("pkg/use_a.py", "run_a", True),
        ("pkg/use_mod.py", "run_mod", True),
    ]
    assert callers_of(zg, root, "helper", "--source-file", "pkg/b.py") == [
        ("pkg/use_b.py", "run_b", True)
    ]
    both = run_json(zg, root, "callers", "helper")
    assert [d["path"] for d in both["definitions"]] == ["pkg/a.py", "pkg/b.py"]
    assert {c["path"]: c["targets"] for c in both["callers"]} == {
        "pkg/use_a.py": ["pkg/a.py"],
        "pkg/use_b.py": ["pkg/b.py"],
        "pkg/use_mod.py": ["pkg/a.py"],
    }
    assert callers_of(zg, root, "fmt", "--source-file", "web/a.ts") == [
        ("web/view.ts", "render", True)
    ]
    assert callers_of(zg, root, "fmt", "--source-file", "web/b.ts") == [
        ("web/other.ts", "show", True)
    ]
    assert callers_of(zg, root, "Parse", "--source-file", "go/util/util.go") == [
        ("go/cmd/main.go", "main", True)
    ]
    assert callers_of(zg, root, "Parse", "--source-file", "go/cmd/main.go") == [
        ("go/cmd/main.go", "local", True)
    ]
    assert callers_of(zg, root, "connect", "--source-file", "rs/src/net/conn.rs") == [
        ("rs/src/lib.rs", "connect_all", True)
    ]
    assert (
        zg(
            "callers", "connect", "--source-file", "rs/src/other.rs", "--mode", "direct", cwd=root
        ).returncode
        == 1
    )
    human = zg("callers", "helper", "--source-file", "pkg/b.py", "--mode", "direct", cwd=root)
    assert human.returncode == 0 and "pkg/use_b.py:5  run_b" in human.stdout


def test_ambiguous_references_are_reported_not_merged(indexed: Path, zg: Zg) -> None:
    write(
        indexed,
        {
            "web/shapes.ts": (
                "export class Circle {\n  area(): number { return 1; }\n}\n"
                "export class Square {\n  area(): number { return 2; }\n}\n"
            ),
            "web/guess.ts": "export function guess(shape: any) {\n  return shape.area();\n}\n",
        },
    )
    assert zg("index", "--mode", "direct", cwd=indexed).returncode == 0
    for scope in ("Circle", "Square"):
        assert callers_of(zg, indexed, f"{scope}.area") == [("web/guess.ts", "guess", False)]
    limited = run_json(zg, indexed, "callers", "fmt", "--limit", "1")
    assert (
        len(limited["callers"]) == 1 and limited["total"] == 3
    )  # view.ts imports it: a caller of kind import


def test_trace_backward_forward_depth_and_cycles(indexed: Path, zg: Zg) -> None:
    root = indexed
    back = run_json(zg, root, "trace", "pkg/a.py:helper")
    assert (
        back["direction"] == "backward"
        and back["depth"] == 3
        and back["tree"]["path"] == "pkg/a.py"
    )
    assert names(back["tree"]) == {"run_a": {"run_mod": {}}, "run_mod": {}}
    shallow = run_json(zg, root, "trace", "helper", "--source-file", "pkg/a.py", "--depth", "1")
    assert names(shallow["tree"]) == {"run_a": {}, "run_mod": {}}
    forward = run_json(zg, root, "trace", "run_mod", "--direction", "forward")
    assert names(forward["tree"]) == {"helper": {}, "run_a": {"helper": {}}}
    assert {c["path"] for c in forward["tree"]["children"]} == {"pkg/a.py", "pkg/use_a.py"}
    cycle = run_json(zg, root, "trace", "ping", "--direction", "forward", "--depth", "5")
    assert names(cycle["tree"]) == {"pong": {"ping*": {}}}
    human = zg("trace", "ping", "--direction", "forward", "--mode", "direct", cwd=root)
    assert (
        human.returncode == 0
        and "-> pkg/loop.py:5  pong" in human.stdout
        and "(cycle)" in human.stdout
    )
    assert zg("trace", "nowhere", "--mode", "direct", cwd=root).returncode == 1


def test_incremental_edits_and_deletions(indexed: Path, zg: Zg) -> None:
    root = indexed
    write(
        root,
        {
            "pkg/use_a.py": "from pkg.b import helper\n\n\ndef run_a(v):\n    return helper(v)\n",
            "pkg/late.py": "from pkg.a import helper\n\n\ndef late(v):\n    return helper(v)\n",
        },
    )
    report = run_json(zg, root, "index")
    assert report["changed"] == 2
    assert callers_of(zg, root, "helper", "--source-file", "pkg/a.py") == [
        ("pkg/late.py", "late", True),
        ("pkg/use_mod.py", "run_mod", True),
    ]
    assert ("pkg/use_a.py", "run_a", True) in callers_of(
        zg, root, "helper", "--source-file", "pkg/b.py"
    )
    (root / "pkg/use_mod.py").unlink()
    (root / "pkg/b.py").unlink()
    assert run_json(zg, root, "index")["deleted"] == 2
    assert callers_of(
        zg, root, "helper", "--source-file", "pkg/a.py"
    ) == [  # imports of the gone module: unplaced
        ("pkg/late.py", "late", True),
        ("pkg/use_a.py", "run_a", False),
        ("pkg/use_b.py", "run_b", False),
    ]
    assert run_json(zg, root, "callers", "helper", "--source-file", "pkg/b.py")["definitions"] == []


def test_not_indexed_is_a_clear_error(repo: Path, zg: Zg) -> None:
    write(repo, {"a.py": "def f():\n    pass\n"})
    for args in (("callers", "f"), ("trace", "f")):
        out = zg(*args, "--mode", "direct", cwd=repo)
        assert out.returncode == 2 and out.stderr.strip() == "zg: not indexed; run zg index", (
            out.stderr
        )


def test_engine_and_server_mode_equal_direct(indexed: Path, zg: Zg, tmp_path: Path) -> None:
    from zgrep.dispatch import handle, serve
    from zgrep.engine import Engine

    direct = run_json(zg, indexed, "callers", "helper")
    engine = Engine(indexed)
    try:
        in_process = handle(engine, "callers", {"symbol": "helper"})
    finally:
        engine.close()
    assert in_process["callers"] == direct["callers"]
    engine = Engine(indexed)
    try:  # a frame from any local process: a wrong type is the caller's error, not an internal one
        for op, args in (
            ("callers", {"symbol": "helper", "source_file": 5}),
            ("trace", {"entry": "ping", "source_file": ["pkg/loop.py"]}),
        ):
            answer = serve(engine, {"op": op, "args": args})
            assert (
                answer["error"]["code"] == "bad_request"
                and "--source-file" in answer["error"]["message"]
            )
    finally:
        engine.close()
    user = User(tmp_path / "user")
    user.start()
    try:
        for args in (
            ("callers", "helper", "--source-file", "pkg/a.py"),
            ("trace", "ping", "--direction", "forward"),
        ):
            served = user.zg(*args, "--json", "--mode", "server", cwd=indexed)
            local = user.zg(*args, "--json", "--mode", "direct", cwd=indexed)
            assert served.returncode == local.returncode == 0, served.stderr + local.stderr
            a, b = json.loads(served.stdout), json.loads(local.stdout)
            assert (a.pop("mode"), b.pop("mode")) == ("server", "direct") and a == b
    finally:
        user.zg("server", "off")


def test_indexes_from_older_versions_gain_relations(indexed: Path, zg: Zg) -> None:
    (indexed / ".zgrep" / "relations.sqlite").unlink()
    assert zg("callers", "helper", "--mode", "direct", cwd=indexed).returncode == 2
    assert zg("index", "--mode", "direct", cwd=indexed).returncode == 0
    assert callers_of(zg, indexed, "helper", "--source-file", "pkg/b.py") == [
        ("pkg/use_b.py", "run_b", True)
    ]


def test_elixir_haskell_and_zig_definitions_have_callers(repo: Path, zg: Zg) -> None:
    # all three used to be chunked as plain text: no definitions, so no callers; Elixir's `def` is how a
    # function is written, not a call to a function named def
    write(
        repo,
        {
            "lib/shop/cart.ex": (
                "defmodule Shop.Cart do\n  def total(items) do\n    Enum.sum(Shop.Price.of(items))\n"
                "  end\nend\n"
            ),
            "lib/shop/price.ex": "defmodule Shop.Price do\n  def of(items), do: items\nend\n",
            "src/Sum.hs": "module Sum where\n\ntotal :: [Int] -> Int\ntotal xs = add xs\n\nadd :: [Int] -> Int\nadd = sum\n",
            "src/sum.zig": (
                "fn add(xs: []const u32) u32 {\n    return xs[0];\n}\n\n"
                "pub const Sum = struct {\n    pub fn total(xs: []const u32) u32 {\n        return add(xs);\n"
                "    }\n};\n"
            ),
        },
    )
    assert zg("index", "--mode", "direct", cwd=repo).returncode == 0
    assert ("lib/shop/cart.ex", "total") in {(p, s) for p, s, _ in callers_of(zg, repo, "of")}
    assert {("src/Sum.hs", "total"), ("src/sum.zig", "total")} <= {
        (p, s) for p, s, _ in callers_of(zg, repo, "add")
    }
    assert run_json(zg, repo, "callers", "def")["callers"] == []


@pytest.mark.parametrize("path", ["src/store.js", "src/store.ts"])
def test_a_function_defined_inside_a_function_is_recorded_once(path: str) -> None:
    # TypeScript's nested functions come from the chunker's walk and from the JS scan of function bodies
    source = (
        "function createStore(reducer) {\n  function dispatch(action) {\n    return reducer(action)\n  }\n"
        "  const getState = () => reducer(undefined)\n  return { dispatch, getState, subscribe() { return 1 } }\n}\n"
    )
    defs = [(d.name, d.scope, d.start) for d in extract(path, source).defs]
    assert len(defs) == len(set(defs)), defs
    assert {("dispatch", "createStore", 2), ("getState", "createStore", 5)} <= set(defs)


def test_a_call_through_a_renamed_re_export_reaches_the_definition(repo: Path, zg: Zg) -> None:
    # `export { parse as parseUrl } from './url'`: following `parseUrl` into url.ts must look for `parse` there
    write(
        repo,
        {
            "src/url.ts": "export function parse(text: string): string {\n  return text.trim()\n}\n",
            "src/index.ts": "export { parse as parseUrl } from './url'\n",
            "src/app.ts": "import { parseUrl } from './index'\n\nexport function main(): string {\n  return parseUrl(' x ')\n}\n",
        },
    )
    assert zg("index", "--mode", "direct", cwd=repo).returncode == 0
    assert ("src/app.ts", "main", True) in callers_of(
        zg, repo, "parse", "--source-file", "src/url.ts"
    )


def test_one_module_name_means_what_each_importer_s_language_says(tmp_path: Path) -> None:
    # `config` beside a Python script is config.py; in a TypeScript file of the same folder it is an npm package.
    # Module lookups are memoised per folder: one language's answer must not be the other's
    files = {
        "pkg/config.py": "def load():\n    return 1\n",
        "pkg/app.py": "from config import load\n",
        "pkg/view.ts": "import { load } from 'config'\n",
        "src/a/mod.rs": "use super::b;\n",
        "src/a/b.rs": "use super::c;\n",
        "src/c.rs": "",
    }
    store = RelationsStore(tmp_path / RELATIONS_DB)
    store.replace_files([extract(rel, text) for rel, text in files.items()])
    store.close()
    graph = Graph(sqlite3.connect(tmp_path / RELATIONS_DB))
    for first, second in (("pkg/app.py", "pkg/view.ts"), ("pkg/view.ts", "pkg/app.py")):
        graph.cache.clear()
        graph.files_of(first, "config")
        assert (
            graph.files_of("pkg/app.py", "config"),
            graph.files_of("pkg/view.ts", "config"),
        ) == ({"pkg/config.py"}, set())
    # Rust's `super` depends on the importer's own name: mod.rs is its folder's module, b.rs a child of it
    assert (graph.files_of("src/a/mod.rs", "super"), graph.files_of("src/a/b.rs", "super")) == (
        set(),
        {"src/a/mod.rs"},
    )


_C_INCLUDES = (
    "".join(
        f'#ifdef USE_{n}\n#include <{n}.h>\n#endif\n#include "{n}_local.h"\n' for n in range(40)
    )
    + "int main(void) { return 0; }\n"
)
_JS_REQUIRES = "".join(f"var m{n} = require('./m{n}'), u{n} = m{n}.f();" for n in range(60)) + "\n"


def _rows(path: str, text: str) -> tuple[list[str], list[str]]:
    found = extract(path, text)
    return [repr(r) for r in found.refs], [repr(i) for i in found.imports]


@pytest.mark.parametrize(("path", "text"), [("a.c", _C_INCLUDES), ("app.js", _JS_REQUIRES)])
def test_extraction_is_the_same_on_every_run_and_in_source_order(path: str, text: str) -> None:
    """tree-sitter's captures of an alternation come in an order that differs from run to run."""
    lines = [i.line for i in extract(path, text).imports]
    assert len(lines) >= 40 and lines == sorted(lines)
    first = _rows(path, text)
    for _ in range(10):
        assert _rows(path, text + "\n") == first


def test_extraction_is_the_same_under_another_hash_seed(tmp_path: Path) -> None:
    script = (
        "import sys, json\nfrom zgrep.relations.extract import extract\n"
        "r = extract(sys.argv[1], open(sys.argv[1]).read())\n"
        "print(json.dumps([[repr(x) for x in r.refs], [repr(x) for x in r.imports]]))\n"
    )
    source = tmp_path / "a.c"
    source.write_text(_C_INCLUDES)
    outputs = {
        subprocess.run(
            [sys.executable, "-c", script, str(source)],
            env={**os.environ, "PYTHONHASHSEED": seed},
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        for seed in ("0", "1", "2")
    }
    assert len(outputs) == 1
