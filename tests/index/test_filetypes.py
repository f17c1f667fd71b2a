"""ripgrep-style type names and glob filters."""

from __future__ import annotations

import pytest

from zgrep.filetypes import (
    TYPES,
    GlobFilter,
    TypeFilter,
    is_test,
    path_has_type,
    type_globs,
    type_list,
)

REQUIRED = (
    "py",
    "js",
    "ts",
    "go",
    "rust",
    "java",
    "c",
    "cpp",
    "cs",
    "scala",
    "php",
    "ruby",
    "kotlin",
    "swift",
    "sh",
    "lua",
    "md",
    "markdown",
    "json",
    "yaml",
    "toml",
    "html",
    "css",
    "sql",
    "txt",
)


def test_required_types_exist():
    assert set(REQUIRED) <= TYPES.keys()


@pytest.mark.parametrize(
    "path, name",
    [
        ("pkg/mod.py", "py"),
        ("stubs/mod.pyi", "py"),
        ("a/b.tsx", "ts"),
        ("x.mts", "ts"),
        ("app.vue", "js"),
        ("lib.mjs", "js"),
        ("x.H", "c"),
        ("x.hpp", "cpp"),
        ("Gemfile", "ruby"),
        ("deploy.sh", "sh"),
        ("README.markdown", "md"),
        ("c.yml", "yaml"),
        ("Makefile", "make"),
    ],
)
def test_path_has_type(path, name):
    assert path_has_type(path, name)


@pytest.mark.parametrize(
    "path, name",
    [
        ("mod.pyc", "py"),
        ("py/readme.txt", "py"),
        ("a.js", "ts"),
        ("x.cpp", "c"),
        ("dir.py/file.txt", "py"),
    ],
)
def test_path_lacks_type(path, name):
    assert not path_has_type(path, name)


def test_unknown_type_message():
    with pytest.raises(ValueError) as err:
        type_globs("pyhton")
    assert str(err.value) == "unknown file type 'pyhton'; see zg search --type-list"
    with pytest.raises(ValueError):
        TypeFilter(types=["nope"])


def test_type_list_is_sorted_name_colon_globs():
    lines = type_list().splitlines()
    assert "py: *.py, *.pyi" in lines
    assert [line.split(":")[0] for line in lines] == sorted(TYPES)


def test_type_filter_include_and_exclude():
    only_code = TypeFilter(types=["py", "ts"], types_not=[])
    assert only_code.matches("a/b.py") and only_code.matches("c.tsx")
    assert not only_code.matches("notes.md")
    no_md = TypeFilter(types_not=["md"])
    assert no_md.matches("a.py") and not no_md.matches("docs/x.md")
    assert TypeFilter().matches("anything")


def test_glob_without_slash_matches_basename_anywhere():
    f = GlobFilter(["*.py"], [])
    assert f.matches("a.py") and f.matches("deep/er/b.py")
    assert not f.matches("a.pyc") and not f.matches("py/x.txt")


def test_glob_with_slash_is_anchored_to_the_root():
    f = GlobFilter(["src/*.py"], [])
    assert f.matches("src/a.py")
    assert not f.matches("lib/src/a.py") and not f.matches("src/sub/a.py")
    assert GlobFilter(["src/**"], []).matches("src/sub/a.py")
    assert GlobFilter(["**/test_*.py"], []).matches("a/b/test_x.py")


def test_only_negated_globs_admit_everything_else():
    f = GlobFilter(["!*.md", "!vendor"], [])
    assert f.matches("main.py")
    assert not f.matches("README.md")
    assert not f.matches("vendor/lib.py") and not f.matches("a/vendor/x.py")


def test_whitelist_excludes_non_matching_and_later_glob_wins():
    f = GlobFilter(["*.py", "!test_*.py"], [])
    assert f.matches("app.py")
    assert not f.matches("test_app.py")
    assert not f.matches("notes.txt")
    g = GlobFilter(["!test_*.py", "*.py"], [])
    assert g.matches("test_app.py")


def test_iglob_is_case_insensitive_and_glob_is_not():
    assert not GlobFilter(["*.PY"], []).matches("a.py")
    assert GlobFilter([], ["*.PY"]).matches("a.py")
    assert not GlobFilter([], ["!readme*"]).matches("docs/README.md")


def test_braces_classes_and_dir_only_globs():
    assert GlobFilter(["*.{js,ts}"], []).matches("a/b.ts")
    assert GlobFilter(["[ab]?.py"], []).matches("bz.py")
    assert not GlobFilter(["[!ab]?.py"], []).matches("bz.py")
    dir_only = GlobFilter(["!build/"], [])
    assert not dir_only.matches("build/x.py")
    assert dir_only.matches("build")  # a file named build is not a directory


@pytest.mark.parametrize(
    "path, test",
    [
        ("tests/test_app.py", True),
        ("pkg/test_app.py", True),
        ("server_test.go", True),
        ("src/app.spec.ts", True),
        ("src/test/java/FooTest.java", True),
        ("FooTests.cs", True),
        ("spec/models/user_spec.rb", True),
        ("conftest.py", True),
        ("src/testing/util.c", True),
        ("src/attestation.py", False),
        ("lib/contest.rb", False),
        ("src/latest.py", False),
        ("docs/testing.md", False),
    ],
)
def test_one_rule_says_what_is_test_code_for_search_and_impact(path: str, test: bool) -> None:
    # search demotes these and zg impact marks them `test`: one rule, so the two never disagree
    assert is_test(path) is test


@pytest.mark.parametrize(
    ("glob", "name", "matched"),
    [
        ("*" * 14 + "a", "request_handler_module_1.py", False),
        ("*" * 14 + "a", "x" * 60 + "a", True),
        ("*a" * 12 + "b", "a" * 60, False),
        ("*a" * 12 + "b", "a" * 60 + "b", True),
        ("a**b", "axxb", True),
        ("{*a*a*a,*b}x", "a" * 50 + "x", True),
        ("{*a*a*a,*b}x", "c" * 50 + "y", False),
    ],
)
def test_star_runs_in_a_glob_cannot_backtrack_exponentially(
    glob: str, name: str, matched: bool
) -> None:
    """An agent's `glob` reaches the daemon: `'*'*14+'a'` used to pin a worker thread."""
    assert GlobFilter([glob], []).matches(name) is matched
