"""Code above data files that spell a query's words: a JSON test case or a fuzzing dictionary holds the
words of a behaviour (cJSON's json-patch tests against cJSON_Utils.c), not the behaviour, unless the
query asks for tests or names such a file."""

from __future__ import annotations

import pytest

from corpus import rank_candidates

from zgrep.filetypes import is_data
from zgrep.search.rank import Candidate, rerank


def _chunks() -> list[Candidate]:
    return rank_candidates(
        "escape tilde and slash in a pointer",
        [
            ("cases/patch-tests.json", "json", "", 0.050),
            ("fuzzing/json.dict", "", "", 0.046),
            ("cJSON_Utils.c", "c", "encode_string_as_pointer", 0.042),
            ("settings/tsconfig.json", "json", "", 0.040),
            ("cJSON.c", "c", "print_string", 0.035),
        ],
    )


def test_code_outranks_data_that_spells_the_query():
    ranked = [c.fields["path"] for c in rerank("escape tilde and slash in a pointer", _chunks())]
    assert ranked[:2] == ["cJSON_Utils.c", "cJSON.c"]


@pytest.mark.parametrize(
    ("query", "first"),
    [
        ("which test cases escape tilde and slash in a pointer", "cases/patch-tests.json"),
        ("tsconfig.json escape tilde and slash", "settings/tsconfig.json"),
    ],
)
def test_a_query_for_tests_or_a_named_data_file_still_gets_it(query, first):
    ranked = [c.fields["path"] for c in rerank(query, _chunks())]
    assert ranked.index(first) < ranked.index("cJSON.c")


@pytest.mark.parametrize(
    ("path", "data"),
    [
        ("a/b.json", True),
        ("DATA.CSV", True),
        ("x.tsv", True),
        ("events.jsonl", True),
        ("fuzz/tokens.dict", True),
        ("pkg/json.go", False),
        ("cJSON.c", False),
        ("config.yaml", False),
    ],
)
def test_data_files_are_known_by_their_names(path, data):
    assert is_data(path) is data
