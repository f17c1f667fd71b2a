"""A one-symbol query names a definition: the file whose stem spells it (phoenix's lib/phoenix/channel.ex for
`Channel`) outranks files that merely sit in a folder of that name (lib/phoenix/channel/server.ex), and the
chunk labelled with the name outranks one that only merged a slice of that definition (rails' engine.rb:
`class Engine < Railtie` at 348, not the `find` method chunk that took in a few lines of the class body, nor a
line of its body). In a sentence, an identifier is looked for in the code (FORCE_COLOR), an acronym (HTTP) is not."""

from __future__ import annotations

from test_chunking import RACK_RESPONSE
from zgrep.chunking import chunk_file
from zgrep.search.rank import Candidate, rerank


def _chunk(
    path: str, start: int, symbol: str, names: list[str], fused: float, kind: str = "class"
) -> Candidate:
    fields = {
        "path": path,
        "start_line": start,
        "end_line": start + 20,
        "symbol": symbol,
        "names": names,
        "symbol_kind": kind,
        "scope": "",
        "language": "elixir",
        "content": f"{symbol} body\n",
    }
    return Candidate(id=f"{path}:{start}", fields=fields, fused=fused)


def test_one_symbol_query_prefers_the_file_named_after_it_over_a_folder_named_after_it() -> None:
    # BM25 likes the server: it spells `channel` more often
    chunks = [
        _chunk("lib/phoenix/channel/server.ex", 375, "", [], 0.050, "module"),
        _chunk("lib/phoenix/channel.ex", 1, "", [], 0.040, "module"),
        _chunk("lib/phoenix/socket.ex", 781, "", [], 0.045, "module"),
    ]
    ranked = [c.fields["path"] for c in rerank("Channel", chunks)]
    assert ranked[0] == "lib/phoenix/channel.ex"


def test_a_folder_still_counts_for_a_natural_language_query() -> None:
    chunks = [
        _chunk("lib/phoenix/channel/server.ex", 375, "", [], 0.050, "module"),
        _chunk("lib/phoenix/router.ex", 1, "", [], 0.050, "module"),
    ]
    ranked = [c.fields["path"] for c in rerank("how a channel server joins topics", chunks)]
    assert ranked[0] == "lib/phoenix/channel/server.ex"


def test_the_chunk_labelled_with_the_name_outranks_one_that_merged_a_slice_of_it() -> None:
    chunks = [
        _chunk("railties/lib/rails/engine.rb", 422, "find", ["find", "Engine"], 0.050, "function"),
        _chunk("railties/lib/rails/engine.rb", 348, "Engine", ["Engine"], 0.040),
        _chunk("railties/lib/rails/engine/updater.rb", 6, "Rails", ["Rails"], 0.048, "module"),
    ]
    top = rerank("Rails::Engine", chunks)[0]
    assert (top.fields["start_line"], top.fields["symbol"]) == (348, "Engine")


def test_a_qualified_class_name_finds_the_class_header_not_a_line_of_its_body() -> None:
    # rack's `Rack::Response`: the one-line `include Helpers` chunk at the end of the class scored higher
    # with BM25 (short) and took the exact-name boost of the class
    chunks = chunk_file("lib/rack/response.rb", RACK_RESPONSE)
    candidates = [
        Candidate(
            id=str(c.start_line),
            fused=0.05 if "include Helpers" in c.content else 0.03,
            fields={
                "path": c.path,
                "start_line": c.start_line,
                "end_line": c.end_line,
                "symbol": c.symbol,
                "names": list(c.names),
                "symbol_kind": c.symbol_kind,
                "scope": c.scope,
                "content": c.content,
            },
        )
        for c in chunks
    ]
    top = rerank("Rack::Response", candidates)[0]
    assert top.fields["symbol"] == "Response" and "class Response" in top.fields["content"]


def test_an_acronym_in_a_sentence_is_not_an_identifier_to_look_for() -> None:
    # aiohttp: "HTTP exception types" lifted every chunk that spells HTTP (client_exceptions.py) over
    # web_exceptions.py, whose classes spell HTTPException; FORCE_COLOR, with its underscore, is still looked for
    def chunk(path: str, content: str, fused: float) -> Candidate:
        return Candidate(
            id=path,
            fused=fused,
            fields={
                "path": path,
                "start_line": 1,
                "end_line": 20,
                "symbol": "",
                "names": [],
                "symbol_kind": "module",
                "scope": "",
                "language": "python",
                "content": content,
            },
        )

    chunks = [
        chunk(
            "aiohttp/client_exceptions.py",
            "class ClientResponseError:\n    # an HTTP error\n",
            0.040,
        ),
        chunk(
            "aiohttp/web_exceptions.py",
            "class HTTPNotFound(HTTPClientError):\n    status_code = 404\n",
            0.045,
        ),
    ]
    assert (
        rerank("HTTP exception types and error responses", chunks)[0].id
        == "aiohttp/web_exceptions.py"
    )
    chunks = [
        chunk("rich/color.py", "class Color:\n    force color\n", 0.050),
        chunk("rich/console.py", "def is_terminal(self):\n    if FORCE_COLOR in environ:\n", 0.045),
    ]
    assert rerank("where is FORCE_COLOR read", chunks)[0].id == "rich/console.py"
