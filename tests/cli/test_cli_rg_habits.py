"""`zg search` and `zg read` with a ripgrep user's habits (issue 24): trailing paths, `--`, the cwd as the
default scope, cwd-relative human paths, rg's -l/-c/-A/-B/-C/-e/-i/-F, one line for rg flags zg lacks,
`--format markdown`, and "did you mean" for a mistyped command. A real repo, real Milvus Lite, the real `zg`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from corpus import assert_one_line_error, indexed_repo, run_zg

CACHE = '''\
"""Where zg keeps its files."""

import os


def get_cache_dir():
    """The directory of cached vectors under XDG_CACHE_HOME."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache")
    return os.path.join(base, "zgrep")
'''

TEST_CACHE = """\
from src.cache import get_cache_dir


def test_get_cache_dir_is_under_xdg(monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", "/tmp/x")
    assert get_cache_dir() == "/tmp/x/zgrep"
"""


def _home(name: str, var: str) -> str:
    body = "".join(f"    part_{n} = os.environ.get({var!r}, '~/{n}')\n" for n in range(9))
    return f"def {name}():\n{body}    return part_0\n"


PATHS = (
    "import os\n\n\n"
    + _home("data_home", "XDG_DATA_HOME")
    + "\n\n"
    + _home("config_home", "XDG_CONFIG_HOME")
)

FILES: dict[str, str | bytes] = {
    "src/cache.py": CACHE,
    "src/paths.py": PATHS,
    "tests/test_cache.py": TEST_CACHE,
    "docs/usage.md": "# Usage\n\n## Cache directory\n\nVectors are cached under XDG_CACHE_HOME/zgrep.\n",
}


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    return indexed_repo(tmp_path_factory.mktemp("rg"), FILES)


def search(repo: tuple[Path, dict[str, str]], *args: str, cwd: Path | None = None) -> dict:
    root, env = repo
    proc = run_zg("search", "--json", "--refresh", "off", *args, cwd=cwd or root, env=env)
    assert proc.returncode in (0, 1), proc.stderr
    return json.loads(proc.stdout)


def human(repo: tuple[Path, dict[str, str]], *args: str, cwd: Path | None = None):
    root, env = repo
    return run_zg("search", "--refresh", "off", *args, cwd=cwd or root, env=env)


def test_a_trailing_argument_naming_a_path_is_a_search_path_and_double_dash_forces_a_query(repo):
    found = search(repo, "get_cache_dir", "tests")
    assert found["query"] == "get_cache_dir"
    assert found["hits"] and {h["path"] for h in found["hits"]} == {"tests/test_cache.py"}
    forced = search(repo, "get_cache_dir", "--", "tests")
    assert forced["query"] == "get_cache_dir tests"
    assert "src/cache.py" in {h["path"] for h in forced["hits"]}


def test_from_a_subdirectory_search_covers_it_and_prints_paths_relative_to_it(repo):
    root, _ = repo
    sub = search(repo, "cache directory", cwd=root / "src")
    assert "src/cache.py" in {h["path"] for h in sub["hits"]}  # JSON: root-relative, beside root
    assert all(h["path"].startswith("src/") for h in sub["hits"])
    assert sub["root"] == str(root)
    whole = search(repo, "cache directory", "--workspace", cwd=root / "src")
    assert {"src/cache.py", "docs/usage.md"} <= {h["path"] for h in whole["hits"]}
    text = human(repo, "cache directory", "--workspace", cwd=root / "src").stdout
    headers = [line.split()[0] for line in text.splitlines() if line and not line[0].isspace()]
    assert any(h.startswith("cache.py:") for h in headers), text
    assert any(h.startswith("../docs/usage.md:") for h in headers), text
    files = human(repo, "get_cache_dir", "../tests", "-l", cwd=root / "src")
    assert files.returncode == 0 and files.stdout == "../tests/test_cache.py\n", files.stderr


def test_read_resolves_a_path_against_the_cwd(repo):
    root, env = repo
    proc = run_zg("read", "cache.py:6-7", cwd=root / "src", env=env)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == [
        "     6: def get_cache_dir():",
        '     7:     """The directory of cached vectors under XDG_CACHE_HOME."""',
    ]
    assert (
        run_zg("read", "src/cache.py:6", cwd=root / "src", env=env).returncode == 0
    )  # a JSON path still reads


def test_files_with_matches_and_count(repo):
    listed = human(repo, "get_cache_dir", "--preview", "none")
    files = human(repo, "get_cache_dir", "-l")
    paths = files.stdout.splitlines()
    assert files.returncode == 0 and paths[0] == "src/cache.py" and len(paths) == len(set(paths))
    counted = human(repo, "get_cache_dir", "-c").stdout.splitlines()
    assert [line.rsplit(":", 1)[0] for line in counted] == paths
    assert sum(int(line.rsplit(":", 1)[1]) for line in counted) == listed.stdout.count(
        " ("
    )  # one per hit


def test_context_lines_around_the_preview_are_marked_as_rg_marks_them(repo):
    hit = search(repo, "get_cache_dir", "-n", "1", "-B", "2", "-A", "1")["hits"][0]
    assert (hit["path"], hit["preview_start_line"]) == (
        "src/cache.py",
        4,
    )  # two lines above the definition
    assert (
        hit["preview"].split("\n") == CACHE.split("\n")[3:9]
    )  # two above, its four (6-9); the file ends there
    full = search(repo, "get_cache_dir", "-n", "1", "-C", "1", "--preview", "full")["hits"][0]
    assert full["preview_start_line"] == full["start_line"] - 1 or full["start_line"] == 1
    # the line above config_home's chunk is outside the hit (a span of the best chunks: --min-score): `N-` as rg
    line = PATHS.split("\n").index("def config_home():") + 1
    lines = human(
        repo, "config_home", "-n", "1", "-B", "1", "--min-score", "0.9"
    ).stdout.splitlines()
    assert lines[0].startswith(f"src/paths.py:{line}-") and lines[1:3] == [
        f"{line - 1:>5}- ",
        f"{line:>5}: def config_home():",
    ], lines


def test_e_is_a_repeatable_query_and_makes_every_argument_a_path(repo):
    grouped = search(repo, "-e", "get_cache_dir", "-e", "cache directory", "tests")
    assert [g["query"] for g in grouped["groups"]] == ["get_cache_dir", "cache directory"]
    assert {h["path"] for g in grouped["groups"] for h in g["hits"]} == {"tests/test_cache.py"}


def test_ignore_case_and_fixed_strings_are_what_zg_does_anyway(repo):
    plain = search(repo, "get_cache_dir")["hits"]
    assert search(repo, "-i", "-F", "get_cache_dir")["hits"] == plain


@pytest.mark.parametrize(
    "flag, advice",
    [
        (("-v",), "-g '!GLOB'"),
        (("-w",), "--mode-search lexical"),
        (("-m", "3"), "-n/--limit"),
        (("-s",), "exact name"),
    ],
)
def test_an_rg_flag_zg_lacks_gets_one_line_naming_what_to_use(repo, flag, advice):
    proc = human(repo, *flag, "get_cache_dir")
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.splitlines() == [
        f"zg has no {flag[0]}: use " + proc.stderr.split(": use ", 1)[1].rstrip("\n")
    ]
    assert advice in proc.stderr


def test_a_mistyped_command_names_the_one_meant(repo):
    root, env = repo
    assert_one_line_error(
        run_zg("serch", "get_cache_dir", cwd=root, env=env), "did you mean search?"
    )


def test_markdown_format_prints_a_heading_and_a_fenced_block_per_hit(repo):
    proc = human(repo, "get_cache_dir", "-n", "1", "--md")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == ("## src/cache.py:1-9 get_cache_dir\n\n```python\n" + CACHE + "```\n\n")
    assert human(repo, "get_cache_dir", "-n", "1", "--format", "markdown").stdout == proc.stdout
    assert_one_line_error(human(repo, "get_cache_dir", "--md", "--json"), "cannot be combined")
