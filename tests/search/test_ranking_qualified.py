"""A qualified name asks for its last part: `Rack::Response` is the class Response, not one of the many
`module Rack` wrappers around it (rack's lib/rack/response.rb is split into `module Rack` with its doc
comment, lines 10-22, and `class Response`, 23-62, which is the answer)."""

from __future__ import annotations

import pytest

from zgrep.search.rank import Candidate, rerank
from zgrep.search.run import symbol_candidates


def _chunk(
    path: str, start: int, end: int, symbol: str, names: list[str], fused: float
) -> Candidate:
    fields = {
        "path": path,
        "start_line": start,
        "end_line": end,
        "symbol": symbol,
        "names": names,
        "symbol_kind": "class" if symbol != "Rack" else "module",
        "scope": "",
        "language": "ruby",
        "content": f"module Rack\n  # Rack::Response and Rack::Builder\n  class {symbol}\n",
    }
    return Candidate(id=f"{path}:{start}", fields=fields, fused=fused)


@pytest.mark.parametrize(
    "query, wanted", [("Rack::Response", "Response"), ("Rack::Builder", "Builder")]
)
def test_qualified_name_ranks_the_class_above_its_module_wrappers(query, wanted):
    # BM25 likes the module chunks best: their doc comments spell `Rack::Response` / `Rack::Builder`.
    chunks = [
        _chunk("lib/rack/response.rb", 10, 22, "Rack", ["Rack"], 0.050),
        _chunk("lib/rack/builder.rb", 8, 35, "Rack", ["Rack"], 0.049),
        _chunk("lib/rack/response.rb", 23, 62, "Response", ["Response"], 0.040),
        _chunk("lib/rack/builder.rb", 36, 80, "Builder", ["Builder"], 0.039),
        _chunk("lib/rack/lint.rb", 8, 9, "Rack", ["Rack"], 0.045),
    ]
    top = rerank(query, chunks)[0]
    assert top.fields["symbol"] == wanted


def test_symbol_route_asks_for_the_last_part_first():
    assert symbol_candidates("Rack::Response")[0] == "Response"
    assert symbol_candidates("Flask.run")[0] == "run"
    assert symbol_candidates("how does Flask.run start the server")[:2] == ["run", "Flask.run"]
