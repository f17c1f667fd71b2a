"""A hit's range, label and preview (issue 24): the range is its chunk or merged span whatever -n is, the label
names a definition inside it, the preview starts at the matched definition; markdown headings are sections;
`scope` is null for a top-level definition in search and callers JSON alike. Real repo, Milvus Lite, `zg`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from corpus import indexed_repo, run_zg, search_hits

HOOKS = '"""Hooks."""\n\n' + "".join(
    f"def hooks_helper_{i}(x):\n    return x + {i}\n\n\n" for i in range(1, 9)
)


def _function(name: str, doc: str) -> str:
    body = "".join(f"    step_{n} = os.path.join(base, {name!r}, 'part{n}')\n" for n in range(8))
    return f'def {name}(base):\n    """{doc}"""\n{body}    return base\n\n\n'


CACHE = (
    "import os\n\n\n"
    + _function("cache_dir_root", "The cache dir root under XDG.")
    + _function("cache_dir_for", "The cache dir for one model.")
    + _function("clear_cache_dir", "Remove everything in the cache dir.")
    + _function("cache_dir_size", "Bytes used by the cache dir.")
)

FILES: dict[str, str | bytes] = {
    "newcode_hooks.py": HOOKS,
    "store/cache.py": CACHE,
    "docs/guide.md": "# Guide\n\n## Cache dir\n\nThe cache dir holds vectors.\n\n## Hooks\n\nGit hooks refresh it.\n",
    "app.py": "from store.cache import cache_dir_for\n\n\ndef warm(base):\n    return cache_dir_for(base)\n",
}


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    return indexed_repo(tmp_path_factory.mktemp("ranges"), FILES)


def test_the_preview_of_merged_siblings_starts_at_the_definition_named(repo):
    hit = search_hits(repo, "hooks_helper_7", "-n", "1")[0]
    line = HOOKS.split("\n").index("def hooks_helper_7(x):") + 1
    assert (hit["path"], hit["symbol"]) == ("newcode_hooks.py", "hooks_helper_7")
    assert (
        hit["start_line"] <= line <= hit["end_line"]
    )  # the label names a definition inside the range
    assert hit["preview_start_line"] == line and hit["preview"].startswith("def hooks_helper_7(x):")
    root, env = repo
    text = run_zg(
        "search", "hooks_helper_7", "-n", "1", "--refresh", "off", cwd=root, env=env
    ).stdout
    assert text.splitlines()[1] == f"{line:>5}: def hooks_helper_7(x):", text


def test_a_hits_range_and_label_are_the_same_whatever_the_limit(repo):
    by_limit = {
        n: [
            (h["path"], h["start_line"], h["end_line"], h["symbol"])
            for h in search_hits(repo, "cache dir", "-n", str(n), "--preview", "none")
        ]
        for n in (1, 2, 3, 6)
    }
    assert any(
        start < end - 20 for _, start, end, _ in by_limit[6]
    )  # some chunks of cache.py were merged
    for n in (1, 2, 3):
        assert by_limit[n] == by_limit[6][:n], (n, by_limit)


def test_markdown_headings_are_sections(repo):
    hits = [h for h in search_hits(repo, "cache dir holds vectors") if h["path"] == "docs/guide.md"]
    assert hits and hits[0]["symbol_kind"] == "section"
    root, env = repo
    text = run_zg(
        "search", "cache dir holds vectors", "-g", "*.md", "--refresh", "off", cwd=root, env=env
    ).stdout
    assert "(section)" in text and "(module)" not in text
    sections = search_hits(repo, "cache dir", "--symbol-type", "section")
    assert sections and {h["path"] for h in sections} == {"docs/guide.md"}
    assert "docs/guide.md" not in {
        h["path"] for h in search_hits(repo, "cache dir", "--symbol-type", "module")
    }


def test_scope_of_a_top_level_definition_is_null_in_search_and_callers_alike(repo):
    hit = search_hits(repo, "cache_dir_for", "-n", "1")[0]
    assert hit["symbol"] == "cache_dir_for" and hit["scope"] is None
    root, env = repo
    proc = run_zg("callers", "cache_dir_for", "--json", cwd=root, env=env)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert [d["scope"] for d in result["definitions"]] == [None]
    assert ("warm", None) in [(c["symbol"], c["scope"]) for c in result["callers"]]
    assert {c["scope"] for c in result["callers"]} == {None}  # `warm`, and the module's own import
