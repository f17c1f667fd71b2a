"""The rerank's limits: the lexical route's best chunk keeps a place in the first three unless chunks with a
stronger signal (the query's own names or phrase) take them; a file's many weak chunks do not fill the top."""

from __future__ import annotations

from zgrep.search.rank import Candidate, rerank


def _chunk(
    path: str,
    fused: float,
    start: int = 1,
    content: str = "pass\n",
    symbol: str = "",
    lexical_rank: int | None = None,
) -> Candidate:
    fields = {
        "path": path,
        "start_line": start,
        "end_line": start + 9,
        "symbol": symbol,
        "names": [symbol],
        "symbol_kind": "function",
        "scope": "",
        "language": "python",
        "content": content,
    }
    ranks = {} if lexical_rank is None else {"lexical": lexical_rank}
    return Candidate(id=f"{path}:{start}", fields=fields, fused=fused, ranks=ranks)


def test_the_lexical_top_hit_stays_in_the_first_three_when_file_names_outrank_it() -> None:
    # every chunk of the files the query's words name gains the path boost; BM25's best chunk gains nothing
    named = [_chunk(f"src/cache/store_{i}.py", 0.5) for i in range(5)]
    best = _chunk("src/core.py", 0.45, lexical_rank=0)
    ranked = [c.id for c in rerank("cache store eviction policy", [*named, best])]
    assert ranked.index("src/core.py:1") == 2


def test_chunks_holding_the_query_phrase_may_pass_the_lexical_top_hit() -> None:
    quoted = [
        _chunk(f"src/doc_{i}.py", 0.5, content="# evict the least recently used entry first\n")
        for i in range(3)
    ]
    others = [_chunk(f"src/cache/store_{i}.py", 0.5) for i in range(3)]
    best = _chunk("src/core.py", 0.45, lexical_rank=0)
    ranked = [c.id for c in rerank("evict the least recently used entry", [*quoted, *others, best])]
    assert ranked[:3] == [c.id for c in quoted] and ranked.index("src/core.py:1") < 6


def test_a_query_spelt_verbatim_ranks_its_chunk_first() -> None:
    hub = [
        _chunk(
            "src/widgets.py",
            0.9 - i / 100,
            start=10 * i,
            symbol=f"widget_step_{i}",
            content="blend widgets into the gizmo\n",
        )
        for i in range(4)
    ]
    feature = _chunk(
        "src/feature_mod.py",
        0.4,
        content='def f(a, b):\n    """Blend two widgets into a gizmo."""\n',
    )
    assert rerank("Blend two widgets into a gizmo.", [*hub, feature])[0] is feature


def test_a_hub_files_many_weak_chunks_do_not_outrank_a_file_one_strong_chunk_supports() -> None:
    # the runner matches the query's words weakly in eight places; the small module does exactly what is asked
    hub = [
        _chunk("src/runner.py", 0.30 - i / 1000, start=20 * i, symbol=f"step_{i}") for i in range(8)
    ]
    module = _chunk("src/envpatch.py", 0.42, symbol="patched_environ")
    ranked = rerank("context manager that patches environment variables", [*hub, module])
    assert ranked[0] is module
    assert [c.fields["path"] for c in ranked[:3]].count("src/runner.py") <= 2
