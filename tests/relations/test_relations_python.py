"""Python relations on the code shapes flask and click have (issue 10's defects), each a regression test.

The workspace's relations are extracted and stored exactly as `zg index` does (extract -> RelationsStore),
then queried through the functions the callers/trace ops call; the CLI test at the end runs real `zg`.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from zgrep.relations.extract import extract
from zgrep.relations.query import callers, trace
from zgrep.relations.store import RELATIONS_DB, RelationsStore

FILES = {
    "src/app/__init__.py": "from .core import Command as Command\nfrom .core import command as command\n",
    "src/app/json/__init__.py": "def dumps(obj):\n    return str(obj)\n",
    "src/app/encode.py": (
        "import json\n\nfrom .json import dumps\n\n\n"
        "def stdlib(obj):\n    return json.dumps(obj)\n\n\n"
        "def ours(obj):\n    return dumps(obj)\n"
    ),
    "src/app/sansio.py": (
        "class App:\n"
        "    def _find_error_handler(self, e):\n        return None\n\n"
        "    def to_info_dict(self):\n        return {}\n"
    ),
    "src/app/core.py": (
        "import sys\nimport typing as t\n\nfrom .sansio import App\n\n"
        "if sys.platform == 'win32':\n    def _console_stream(f):\n        return f\nelse:\n"
        "    def _console_stream(f):\n        return None\n\n"
        "try:\n    import fcntl\nexcept ImportError:\n    def lock(f):\n        return None\n\n\n"
        "class Command(App):\n"
        "    def to_info_dict(self):\n        info = super().to_info_dict()\n        return info\n\n"
        "    def handle_exception(self, e: Exception) -> None:\n        return self._find_error_handler(e)\n\n\n"
        "class Other:\n    def _find_error_handler(self, e):\n        return e\n\n\n"
        "@t.overload\ndef command(name: t.Callable) -> Command: ...\n\n\n"
        "@t.overload\ndef command(name: str | None = None) -> Command: ...\n\n\n"
        "def command(name=None):\n    return Command()\n\n\n"
        "def make(command: Command) -> Command:\n    return command.to_info_dict()\n\n\n"
        "def later():\n    from .decorators import pass_obj\n    return pass_obj(1)\n\n\n"
        "def elsewhere(pass_obj):\n    return pass_obj(2)\n"
    ),
    "src/app/decorators.py": (
        "from .core import Command, command\n\n\n"
        "def pass_obj(f):\n    return f\n\n\n"
        "@command(\n    'run',\n    short_help='Run a server.',\n)\n@pass_obj\n"
        "def run_command(info: Command) -> None:\n    pass_obj(info)\n    run_command.cache = info\n\n\n"
        "class Group(Command):\n    pass\n"
    ),
    "src/app/parser.py": (
        "from __future__ import annotations\n\nfrom .core import Command\n\n\n"
        "class Option:\n    def process(self, value):\n        return value\n\n\n"
        "class Parser:\n    def __init__(self) -> None:\n        self._short: dict[str, Option] = {}\n"
        "        self._opts: list[Option] = []\n\n"
        "    def resolve(self, name: str) -> tuple[str, Command, list[Option]]:\n"
        "        return name, Command(), self._opts\n\n"
        "    def match(self, opt):\n        option = self._short.get(opt)\n        return option.process(1)\n\n"
        "    def each(self):\n        for i, option in enumerate(self._opts):\n            option.process(i)\n\n"
        "    def split(self):\n        name, cmd, opts = self.resolve('x')\n"
        "        return cmd.handle_exception(None), opts[0].process(2)\n"
    ),
}


def stored(root: Path, files: dict[str, str]) -> Path:
    """`files` written under `root` and their relations stored as `zg index` stores them."""
    (root / ".zgrep").mkdir()
    store = RelationsStore(root / ".zgrep" / RELATIONS_DB)
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    store.replace_files([extract(rel, text) for rel, text in files.items()])
    store.close()
    return root


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return stored(tmp_path_factory.mktemp("pyrel"), FILES)


def who(root: Path, symbol: str, *edges: str) -> set[tuple[str, str, str]]:
    """(path, caller, edge kind) of every caller of `symbol`, one per kind it uses it by."""
    kinds = (
        tuple(edges)
        if edges
        else ("call", "reference", "import", "annotation", "decorator", "inherit")
    )
    result = callers(root, symbol, edges=kinds)
    return {
        (c["path"], f"{c['scope'] or ''}.{c['symbol']}".strip(".") or "<module>", kind)
        for c in result["callers"]
        for kind in c["edges"]
    }


def calls(root: Path, entry: str, *edges: str) -> set[str]:
    tree = trace(root, entry, "forward", 1, edges=tuple(edges) or ("call",))["tree"]
    assert tree is not None and not tree.get("ambiguous"), tree
    return {
        f"{c['path']}:{c['scope'] or ''}.{c['symbol']}".replace(":.", ":") for c in tree["children"]
    }


def test_multiline_decorators_do_not_make_a_definition_its_own_caller(root: Path) -> None:
    found = who(root, "src/app/decorators.py:run_command")
    assert found == {
        ("src/app/decorators.py", "run_command", "reference")
    }  # `run_command.cache = ...` only
    assert calls(root, "run_command") == {"src/app/decorators.py:pass_obj"}
    assert ("src/app/decorators.py", "run_command", "decorator") in who(
        root, "src/app/decorators.py:pass_obj"
    )


def test_super_on_the_line_after_def_and_self_resolve_along_bases_in_other_files(
    root: Path,
) -> None:
    assert who(root, "App.to_info_dict") == {("src/app/core.py", "Command.to_info_dict", "call")}
    assert who(root, "App._find_error_handler") == {
        ("src/app/core.py", "Command.handle_exception", "call")
    }
    assert who(root, "Other._find_error_handler") == set()  # same name, same file, unrelated class
    assert calls(root, "Command.handle_exception") == {"src/app/sansio.py:App._find_error_handler"}


def test_types_through_containers_tuples_and_returns(root: Path) -> None:
    assert who(root, "Option.process") == {
        ("src/app/parser.py", f"Parser.{m}", "call") for m in ("match", "each", "split")
    }
    assert ("src/app/parser.py", "Parser.split", "call") in who(root, "Command.handle_exception")


def test_definitions_under_module_level_if_try_else_are_recorded(root: Path) -> None:
    found = callers(root, "src/app/core.py:_console_stream")["definitions"]
    assert [d["start_line"] for d in found] == [7, 10]
    assert [d["symbol"] for d in callers(root, "src/app/core.py:lock")["definitions"]] == ["lock"]


def test_stdlib_imports_are_external_and_relative_ones_resolve(root: Path) -> None:
    assert who(root, "src/app/json/__init__.py:dumps") == {
        ("src/app/encode.py", "<module>", "import"),
        ("src/app/encode.py", "ours", "call"),
    }


def test_local_bindings_shadow_imports_and_function_local_imports_stay_local(root: Path) -> None:
    found = who(root, "src/app/core.py:command")
    assert ("src/app/core.py", "make", "call") not in found and (
        "src/app/core.py",
        "make",
        "reference",
    ) not in found
    assert ("src/app/decorators.py", "run_command", "decorator") in found
    assert who(root, "pass_obj", "call") == {
        ("src/app/core.py", "later", "call"),
        ("src/app/decorators.py", "run_command", "call"),
    }


def test_overload_stubs_fold_into_the_implementation(root: Path) -> None:
    found = callers(root, "src/app/core.py:command")["definitions"]
    implementation = FILES["src/app/core.py"].splitlines().index("def command(name=None):") + 1
    assert [(d["start_line"], d["end_line"]) for d in found] == [
        (implementation, implementation + 1)
    ]


def test_edge_kinds_trace_follows_calls_and_edges_select_others(root: Path) -> None:
    found = who(root, "src/app/core.py:Command")
    assert {
        ("src/app/decorators.py", "Group", "inherit"),
        ("src/app/core.py", "make", "annotation"),
        ("src/app/core.py", "command", "call"),
        ("src/app/decorators.py", "run_command", "annotation"),
        ("src/app/__init__.py", "<module>", "import"),
        ("src/app/decorators.py", "<module>", "import"),
    } <= found
    assert calls(root, "make") == {
        "src/app/core.py:Command.to_info_dict"
    }  # the annotations are no calls
    assert "src/app/core.py:Command" in calls(root, "make", "annotation")
    assert who(root, "src/app/core.py:Command", "inherit") == {
        ("src/app/decorators.py", "Group", "inherit")
    }


def test_reexports_and_import_statements_are_callers_of_kind_import(root: Path) -> None:
    entry = next(
        c
        for c in callers(root, "src/app/core.py:command")["callers"]
        if c["path"] == "src/app/__init__.py"
    )
    assert (entry["symbol"], entry["edge"], entry["edges"], entry["kind"]) == (
        "",
        "import",
        ["import"],
        "module",
    )


def test_cli_edges_flag_and_json_fields(
    repo: Path, zg: Callable[..., subprocess.CompletedProcess[str]]
) -> None:
    for rel, text in FILES.items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(text)
    assert zg("index", "--mode", "direct", cwd=repo).returncode == 0
    out = zg("callers", "App._find_error_handler", "--json", "--mode", "direct", cwd=repo)
    result: dict[str, Any] = json.loads(out.stdout)
    assert [(c["symbol"], c["kind"], c["edge"], c["edges"]) for c in result["callers"]] == [
        ("handle_exception", "function", "call", ["call"])
    ]
    only = zg(
        "callers", "Command", "--edges", "inherit,import", "--json", "--mode", "direct", cwd=repo
    )
    assert {c["edge"] for c in json.loads(only.stdout)["callers"]} == {"inherit", "import"}
    traced = json.loads(
        zg(
            "trace",
            "make",
            "--direction",
            "forward",
            "--edges",
            "annotation",
            "--json",
            "--mode",
            "direct",
            cwd=repo,
        ).stdout
    )
    assert traced["edges"] == ["annotation"] and {
        c["edge"] for c in traced["tree"]["children"]
    } == {"annotation"}
    bad = zg("callers", "Command", "--edges", "calls", "--mode", "direct", cwd=repo)
    assert (
        bad.returncode == 2
        and bad.stderr.count("\n") == 1
        and "--edges" in bad.stderr
        and "call," in bad.stderr
    )


def test_deeply_nested_expressions_keep_the_files_relations() -> None:
    text = (
        "def f(x):\n    return " + " + ".join(["g(x)"] * 3000) + "\n\n\ndef g(x):\n    return x\n"
    )
    found = extract("deep.py", text)
    assert [d.name for d in found.defs] == ["f", "g"]
    assert [(r.name, r.kind, r.caller.name if r.caller else None) for r in found.refs] == [
        ("g", "call", "f")
    ]


def test_a_deep_chain_of_base_classes_is_cut_off_not_a_crash(tmp_path: Path) -> None:
    """A workspace file is untrusted: 1,500 classes each inheriting the one before must not blow the stack."""
    text = (
        "class C0:\n    def m(self):\n        return 0\n\n\n"
        + "".join(f"class C{i}(C{i - 1}):\n    pass\n\n\n" for i in range(1, 1500))
        + (
            "class Leaf(C1499):\n    def go(self):\n        return self.m()\n\n\n"
            "class Near(C5):\n    def go(self):\n        return self.m()\n"
        )
    )
    (tmp_path / ".zgrep").mkdir()
    store = RelationsStore(tmp_path / ".zgrep" / RELATIONS_DB)
    store.replace_files([extract("deep.py", text)])
    store.close()
    found = {(c["scope"], c["symbol"]) for c in callers(tmp_path, "C0.m")["callers"]}
    assert found == {
        ("Near", "go")
    }  # six bases up is resolved; 1,500 is past the bound, not a RecursionError
    assert calls(tmp_path, "Near.go") == {"deep.py:C0.m"}
    assert trace(tmp_path, "Leaf.go", "forward", 1)["tree"] is not None


def test_relations_of_an_older_schema_are_rebuilt_not_misread(tmp_path: Path) -> None:
    import sqlite3

    from zgrep.relations.query import RelationsError
    from zgrep.relations.store import is_ready

    path = tmp_path / ".zgrep" / RELATIONS_DB
    path.parent.mkdir()
    old = sqlite3.connect(path)
    old.executescript(
        "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);"
        "INSERT INTO meta VALUES ('schema', '1');"
        "CREATE TABLE refs (path TEXT, name TEXT, qualifier TEXT, line INTEGER);"
    )
    old.close()
    assert not is_ready(path)
    with pytest.raises(RelationsError, match="older zgrep; run: zg index"):
        callers(tmp_path, "f")
    store = RelationsStore(path)
    store.replace_files([extract("a.py", "def f():\n    return g()\n\n\ndef g():\n    return 1\n")])
    store.close()
    assert is_ready(path)
    assert [c["symbol"] for c in callers(tmp_path, "g")["callers"]] == ["f"]


CACHE_FILES = {
    "pkg/__init__.py": "",
    "pkg/cache.py": (
        "from typing import Self\n\n\n"
        "class Cache:\n"
        "    @classmethod\n    def read(cls, mode) -> Self:\n        return cls()\n\n"
        "    @classmethod\n    def load(cls, path):\n        if path:\n            return cls(path)\n        return cls()\n\n"
        "    def is_changed(self, source) -> bool:\n        return True\n\n"
        "    def write(self, sources) -> None:\n        pass\n"
    ),
    "pkg/run.py": (
        "from pkg.cache import Cache\n\n\n"
        "def reformat_one(src, mode):\n    cache = Cache.read(mode)\n    if not cache.is_changed(src):\n"
        "        return\n    cache.write([src])\n\n\n"
        "def reload(path):\n    cache = Cache.load(path)\n    cache.write([path])\n\n\n"
        "def dump(handle, text):\n    handle.write(text)\n"
    ),
}


def test_a_classmethod_returning_self_or_cls_types_the_variable_and_unknown_receivers_are_listed(
    tmp_path: Path,
) -> None:
    """black's `cache = Cache.read(mode); cache.write(...)` (issue 24): `-> Self` and an unannotated `return cls(...)`
    give a Cache; a `.write()` on an object of unknown type is listed too, resolved: false, so exit 1 never means
    "no caller" while such uses exist."""
    stored(tmp_path, CACHE_FILES)
    found = {
        (c["symbol"], c["resolved"], c["via"]) for c in callers(tmp_path, "Cache.write")["callers"]
    }
    assert found == {
        ("reformat_one", True, "class"),
        ("reload", True, "class"),
        ("dump", False, "unknown_receiver"),
    }
    assert {c["symbol"] for c in callers(tmp_path, "Cache.is_changed")["callers"]} == {
        "reformat_one"
    }
    impact_free = trace(tmp_path, "pkg/cache.py:Cache.write", "backward", 1)["tree"]
    assert impact_free is not None
    assert {c["symbol"] for c in impact_free["children"]} == {
        "reformat_one",
        "reload",
    }  # trace claims no guesses
