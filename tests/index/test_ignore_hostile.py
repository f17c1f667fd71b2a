"""Ignore files are untrusted input: git's answers for every line, in bounded time, bad lines skipped with one
warning; built-in defaults never hide tracked code; deep trees and undecodable names do not break listing."""

from __future__ import annotations

import json
import os
import random
import subprocess
from pathlib import Path

import pytest

from zgrep.index.discovery import Tally, list_files
from zgrep.index.ignore import IgnoreRules

PATHS = [
    "ab",
    "ba",
    "aab",
    "a.b",
    "x/a",
    "x/b",
    "x/ab",
    "a/b",
    "a/x/b",
    "a/x/y/b",
    "b/a/x",
    "x/y/z",
    "xa/by",
    "[a]",
    "a*b",
    "a?",
    "foo bar",
    "foo\\",
    "-",
    "]",
    "a/a/c/d",
    "abc/abc",
]
ALPHABET = [
    "a",
    "b",
    "x",
    "/",
    "*",
    "**",
    "?",
    "[ab]",
    "[!a]",
    "[a-b]",
    "[]a]",
    "[[:alpha:]]",
    "\\*",
    " ",
    "!",
]


def _git(root: Path, *args: str, input: bytes | None = None) -> bytes:
    return subprocess.run(
        ["git", "-C", str(root), *args], check=True, capture_output=True, input=input
    ).stdout


def _tree(root: Path) -> None:
    for rel in PATHS:
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if not path.is_dir():
            path.write_text("x = 1\n")


def _random_line(rng: random.Random) -> str:
    line = "".join(rng.choice(ALPHABET) for _ in range(rng.randint(1, 6)))
    return line if line.strip() else "a"


@pytest.fixture
def tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", os.devnull)
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    root = tmp_path / "t"
    root.mkdir()
    _git(root, "init", "-q")
    # files whose first component git would treat as a repository of their own are avoided; all are untracked
    _tree(root)
    return root


def _git_admits(root: Path) -> set[str]:
    out = _git(root, "ls-files", "-z", "--others", "--exclude-standard")
    return {n for n in out.decode().split("\0") if n and n != ".gitignore"}


def _ours(root: Path) -> set[str]:
    rules = IgnoreRules.for_root(
        root, global_ignore_file=root / "no-such-file", include_hidden=True
    )
    return {rel for rel in PATHS if (root / rel).is_file() and rules.admits(rel)}


def test_every_random_ignore_file_agrees_with_git(tree: Path) -> None:
    rng = random.Random(23)
    disagreements = []
    for _ in range(150):
        lines = [_random_line(rng) for _ in range(rng.randint(1, 3))]
        (tree / ".gitignore").write_text("\n".join(lines) + "\n")
        if _git_admits(tree) != _ours(tree):
            disagreements.append((lines, sorted(_git_admits(tree) ^ _ours(tree))))
    assert disagreements == []


STAR_CASES = [  # (line, path, ignored?); git's own wildmatch takes > 20 s on the second line and a long name
    ("*" * 14 + "a", "request_handler_module_1.py", False),
    ("*" * 14 + "a", "x" * 60 + "a", True),
    ("*a" * 12 + "b", "a" * 60, False),
    ("*a" * 12 + "b", "a" * 60 + "b", True),
    ("*a" * 12 + "b", "a" * 11 + "b", False),
    ("**/a/" * 8 + "b", "a/" * 40 + "c", False),
    ("**/a/" * 8 + "b", "a/" * 40 + "b", True),
    ("a**/**b/**/**/**c*d*e*f", "a1/2b/" + "q/" * 30 + "c" + "de" * 30 + "f", True),
    ("a**/**b/**/**/**c*d*e*f", "a1/2b/" + "q/" * 30 + "c" + "de" * 30 + "g", False),
]


@pytest.mark.parametrize(("line", "rel", "ignored"), STAR_CASES)
def test_star_runs_are_answered_without_backtracking(
    tmp_path: Path, line: str, rel: str, ignored: bool
) -> None:
    (tmp_path / ".gitignore").write_text(line + "\n")
    rules = IgnoreRules.for_root(
        tmp_path, global_ignore_file=tmp_path / "none", include_hidden=True
    )
    assert rules.admits(rel) is not ignored


def test_the_star_run_line_indexes(repo: Path, zg) -> None:
    for i in range(1, 21):
        (repo / f"request_handler_module_{i}.py").write_text(f"x={i}\n")
    (repo / ".gitignore").write_text("*" * 14 + "a\n")
    done = zg("--mode", "direct", "index", "--json", cwd=repo, timeout=60)  # pathspec: > 60 s
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["changed"] == 20


def test_lines_git_cannot_use_are_skipped_with_one_warning_each(repo: Path, zg) -> None:
    (repo / "a.py").write_text("def f(): pass\n")
    (repo / "build").mkdir()
    (repo / "build" / "b.py").write_text("def g(): pass\n")
    (repo / ".gitignore").write_text("build\\\n!\n[abc\n")
    done = zg("--mode", "direct", "index", cwd=repo)
    assert done.returncode == 0, done.stderr
    warnings = [line for line in done.stderr.splitlines() if "warning" in line]
    assert len(warnings) == 3
    assert warnings[0].startswith("zg: warning: .gitignore:1: skipped 'build\\\\'")
    assert ".gitignore:2:" in warnings[1] and ".gitignore:3:" in warnings[2]
    listed = json.loads(zg("--mode", "direct", "index", "--json", cwd=repo).stdout)
    assert len(listed["warnings"]) == 3


def test_defaults_never_hide_tracked_code_and_the_report_counts_each_layer(repo: Path, zg) -> None:
    """yargs ships its implementation in build/: tracked, it is indexed; an untracked build/ stays out."""
    (repo / "build" / "lib").mkdir(parents=True)
    (repo / "build" / "lib" / "yargs-factory.js").write_text(
        "export function YargsFactory() { return 1 }\n"
    )
    (repo / "index.mjs").write_text("import { YargsFactory } from './build/lib/yargs-factory.js'\n")
    subprocess.run(["git", "-C", str(repo), "add", "-A"], check=True)
    (repo / "sub" / "dist").mkdir(parents=True)
    (repo / "sub" / "dist" / "out.js").write_text("var generated = 1\n")
    (repo / "sub" / "keep.py").write_text("x = 1\n")
    (repo / ".zgignore").write_text("sub/keep.py\n")
    report = json.loads(zg("--mode", "direct", "index", "--json", cwd=repo).stdout)
    assert report["changed"] == 2
    assert report["ignored"] == {"defaults": 1, ".zgignore": 1}
    hits = json.loads(zg("--mode", "direct", "search", "YargsFactory", "--json", cwd=repo).stdout)[
        "hits"
    ]
    assert hits[0]["path"] == "build/lib/yargs-factory.js"


def test_a_thousand_nested_directories_outside_git(tmp_path: Path, zg) -> None:
    root = tmp_path / "deep"
    path = root
    root.mkdir()
    for _ in range(1000):
        path = path / "d"
        path.mkdir()  # (pathlib's parents=True recurses itself)
    (path / "bottom.py").write_text("def bottom(): pass\n")
    (root / "top.py").write_text("def top(): pass\n")
    (root / ".zgrep").mkdir()  # a workspace root without git
    try:
        rules = IgnoreRules.for_root(root, global_ignore_file=root / "none")
        assert len(list_files(root, rules)) == 2
    finally:
        subprocess.run(
            ["rm", "-rf", str(root)], check=True
        )  # shutil.rmtree (pytest's cleanup) recurses too


@pytest.mark.parametrize("in_git", [True, False])
def test_undecodable_file_names_are_skipped_and_counted(tmp_path: Path, in_git: bool) -> None:
    root = tmp_path / "names"
    root.mkdir()
    if in_git:
        _git(root, "init", "-q")
    (root / "good.py").write_text("x = 1\n")
    with open(os.path.join(os.fsencode(root), b"bad_\xff.py"), "w") as fh:
        fh.write("y = 2\n")
    if in_git:
        _git(root, "add", "-A")
    tally = Tally()
    assert list_files(
        root, IgnoreRules.for_root(root, global_ignore_file=root / "none"), tally
    ) == ["good.py"]
    assert tally.skipped["undecodable_name"] >= 1


def test_status_warns_when_most_tracked_code_is_not_indexed(repo: Path, zg) -> None:
    for i in range(12):
        (repo / "src" / f"m{i}.py").parent.mkdir(exist_ok=True)
        (repo / "src" / f"m{i}.py").write_text(f"def f{i}(): pass\n")
    (repo / "main.py").write_text("def main(): pass\n")
    subprocess.run(["git", "-C", str(repo), "add", "-A"], check=True)
    assert zg("--mode", "direct", "index", cwd=repo).returncode == 0
    healthy = zg("--mode", "direct", "status", cwd=repo)
    assert "WARNING" not in healthy.stdout
    (repo / ".zgignore").write_text("src/\n")
    assert zg("--mode", "direct", "index", cwd=repo).returncode == 0
    status = zg("--mode", "direct", "status", cwd=repo)
    assert "WARNING: only 1 of the 13 code files git tracks are indexed" in status.stdout
    doc = json.loads(zg("--mode", "direct", "status", "--json", cwd=repo).stdout)
    assert doc["code_files"] == {"tracked": 13, "indexed": 1}
