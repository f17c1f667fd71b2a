"""The symbol route's exact lookup (`MilvusStore.symbol_rows`) finds every chunk whose symbol is one of
the names asked, and only those, however the names are put to the engine: one name, a few (each an
`==`), or more than SYMBOL_EQUALS (one `in` list); with a filter too."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from corpus import opened_index
from zgrep.store.milvus import SYMBOL_EQUALS


def _definition(keyword: str, name: str) -> str:
    """A definition long enough to be a chunk of its own."""
    body = "\n".join(f"    step_{i} = {i} * 2  # {name} works through step {i}" for i in range(30))
    return f"{keyword} {name}{'' if keyword == 'class' else '()'}:\n{body}\n\n\n"


FILES = {
    "geo/shapes.py": "".join(
        _definition(keyword, name)
        for keyword, name in [
            ("class", "Circle"),
            ("def", "area"),
            ("class", "Square"),
            ("def", "perimeter"),
        ]
    ),
    "geo/solids.py": _definition("def", "volume") + _definition("class", "Cube"),
    "web/greet.py": _definition("def", "say_hi"),
}


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    for _, opened in opened_index(tmp_path_factory.mktemp("symbols"), FILES):
        yield opened


@pytest.mark.parametrize(
    "names",
    [
        ["Circle"],
        ["area", "Cube"],
        ["volume", "perimeter", "no_such_name"],
        ["Circle", "Square", "area", "perimeter", "volume", "Cube", "say_hi"],
        ['say "hi"', "say_hi"],
    ],
)
def test_symbol_rows_are_the_chunks_defining_one_of_the_names(store: Any, names: list[str]) -> None:
    every = store.rows(["id", "symbol", "path"])
    expected = {row["id"] for row in every if row["symbol"] in names}
    assert expected, "the corpus defines some of the names"
    assert {row["id"] for row in store.symbol_rows(names, 100)} == expected
    in_shapes = {
        row["id"] for row in every if row["symbol"] in names and row["path"] == "geo/shapes.py"
    }
    found = store.symbol_rows(names, 100, 'path == "geo/shapes.py"')
    assert {row["id"] for row in found} == in_shapes


def test_more_names_than_the_equals_limit_are_asked_as_one_list(store: Any) -> None:
    names = [f"name_{i}" for i in range(SYMBOL_EQUALS)] + ["Cube"]
    rows = store.symbol_rows(names, 100)
    assert [row["symbol"] for row in rows] == ["Cube"]
