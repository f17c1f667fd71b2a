"""Usage errors: exit 2 (never 1, which means "none found") with one `zg: ...` line naming the fix."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

from conftest import ZG, git
from corpus import assert_one_line_error, make_repo, run_zg, user_env

FILES = {
    "a.py": "def helper(x):\n    return x + 1\n\n\ndef run(v):\n    return helper(v)\n",
    "b.py": "from a import helper\n\n\ndef twice(v):\n    return helper(helper(v))\n",
}


@pytest.fixture(scope="module")
def ws(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A two-commit repository, indexed."""
    base = tmp_path_factory.mktemp("usage")
    root = make_repo(base / "repo", FILES)
    (root / "c.py").write_text("def other():\n    return 3\n")
    git(root, "add", "c.py")
    git(root, "commit", "-q", "-m", "c")
    env = user_env(base / "user")
    assert run_zg("index", "--mode", "direct", cwd=root, env=env).returncode == 0
    return {"root": root, "env": env}


def zg_ws(ws: dict[str, Any], *args: str) -> subprocess.CompletedProcess[str]:
    return run_zg(*args, "--mode", "direct", cwd=ws["root"], env=ws["env"])


@pytest.mark.parametrize(
    "args,needles",
    [
        (("callers", "helper", "-n", "0"), ("--limit", "at least 1")),
        (("callers", "helper", "-n", "-1"), ("--limit", "at least 1")),
        (
            ("callers", "helper", "--limit", "x"),
            ("--limit", "not a valid integer", "zg callers -h"),
        ),
        (("trace", "helper", "--depth", "0"), ("--depth", "1<=x<=10")),
        (("trace", "helper", "--depth", "11"), ("--depth", "1<=x<=10")),
        (("callers", ""), ("empty symbol",)),
        (("callers", "  "), ("empty symbol",)),
        (("trace", ""), ("empty symbol",)),
        (("index", "--changed", "HEAD"), ("--changed HEAD", "A..B")),
        (("index", "--changed", ".."), ("--changed ..", "A..B")),
        (("index", "--changed", "..HEAD"), ("--changed ..HEAD", "A..B")),
        (("index", "--changed", "..."), ("--changed ...", "A..B")),
        (("index", "--changed", "nosuch..HEAD"), ("--changed nosuch..HEAD", "nosuch")),
        (("index", "--nosuch"), ("No such option", "--nosuch", "zg index -h")),
        (("nosuch",), ("No such command", "nosuch", "zg -h")),
        (("read",), ("Missing argument", "LOCATION", "zg read -h")),
        (("search", "x", "--preview", "long"), ("--preview", "long", "zg search -h")),
        (("adr", "update"), ("Missing argument", "ID", "zg adr update -h")),
        (("index", "--paths-from", "/nonexistent/list"), ("--paths-from", "/nonexistent/list")),
        (
            ("search", "x", "--modified-after", "5", "--modified-before", "1"),
            ("--modified-after", "--modified-before"),
        ),
        (
            ("search", "x", "--modified-after", "5", "--modified-before", "5"),
            ("--modified-after", "--modified-before"),
        ),
        (("search", "x", "-g", "["), ("bad glob", "unclosed character class")),
        (("search", "x", "--iglob", "src/{a,b"), ("bad glob", "unclosed alternate group")),
    ],
)
def test_usage_errors_exit_2_with_one_line(ws, args, needles):
    assert_one_line_error(zg_ws(ws, *args), *needles)


def test_valid_ranges_still_work(ws):
    ok = zg_ws(ws, "index", "--changed", "HEAD~1..HEAD", "--json")
    assert ok.returncode == 0, ok.stderr
    assert zg_ws(ws, "index", "--changed", "HEAD~1..", "--dry-run").returncode == 0
    assert zg_ws(ws, "index", "--changed", "HEAD~1...HEAD", "--dry-run").returncode == 0
    assert zg_ws(ws, "callers", "helper", "-n", "1").returncode == 0
    assert zg_ws(ws, "trace", "helper", "--depth", "1").returncode == 0


def test_engine_rejects_the_same_arguments(ws):
    """Other front ends (daemon requests) get the same checks as the command line."""
    from zgrep.dispatch import handle
    from zgrep.engine import Engine
    from zgrep.service import ZgError

    engine = Engine(ws["root"])
    try:
        for op, args, needle in [
            ("callers", {"symbol": "helper", "limit": 0}, "--limit must be at least 1"),
            ("callers", {"symbol": " "}, "empty symbol"),
            ("trace", {"entry": "helper", "depth": 0}, "--depth must be 1 to 10"),
            ("trace", {"entry": "helper", "depth": "deep"}, "--depth must be 1 to 10"),
            ("trace", {"entry": ""}, "empty symbol"),
        ]:
            with pytest.raises(ZgError, match=needle) as caught:
                handle(engine, op, args)
            assert caught.value.code == "bad_request"
    finally:
        engine.close()


def test_help_and_no_arguments_still_print_usage(ws):
    bare = run_zg(cwd=ws["root"], env=ws["env"])
    assert bare.returncode == 2 and "Commands:" in bare.stdout + bare.stderr
    helped = run_zg("callers", "-h", cwd=ws["root"], env=ws["env"])
    assert helped.returncode == 0 and "--source-file" in helped.stdout


def test_a_closed_pipe_is_not_no_hits(ws):
    """`zg read big | head -1`: the reader went away; exit 141 like grep (SIGPIPE), no traceback."""
    big = Path(ws["root"]) / "big.txt"
    big.write_text("line\n" * 200_000)
    proc = subprocess.run(
        f"set -o pipefail; '{ZG}' read big.txt | head -1",
        shell=True,
        executable="/bin/bash",
        cwd=ws["root"],
        env=ws["env"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.stdout == "     1: line\n"
    assert proc.returncode == 141, (proc.returncode, proc.stderr)
    assert proc.stderr == "", proc.stderr
