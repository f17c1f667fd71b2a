"""Code above the prose that describes it: a guide in docs/ spells an English query's words better than
the code it documents (gin's docs/doc.md against routergroup.go), yet the code is the answer, unless
the query asks for documentation."""

from __future__ import annotations

import pytest

from corpus import rank_candidates

from zgrep.search.rank import Candidate, RerankSettings, rerank


def _chunks() -> list[Candidate]:
    return rank_candidates(
        "routes are grouped and registered",
        [
            ("docs/doc.md", "markdown", "", 0.050),
            ("CHANGELOG.md", "markdown", "", 0.044),
            ("routergroup.go", "go", "Group", 0.042),
            ("docs/routing.rst", "rst", "", 0.041),
            ("gin.go", "go", "addRoute", 0.035),
        ],
    )


def test_code_outranks_the_documentation_that_describes_it():
    ranked = [c.fields["path"] for c in rerank("how routes are grouped and registered", _chunks())]
    assert ranked[0] == "routergroup.go"
    assert ranked.index("gin.go") < ranked.index("docs/routing.rst")


@pytest.mark.parametrize(
    "query", ["where do the docs explain route groups", "routing guide", "README for routes"]
)
def test_a_query_for_documentation_still_gets_it_first(query):
    assert rerank(query, _chunks())[0].fields["language"] in ("markdown", "rst")


def test_a_search_holding_only_prose_keeps_its_scores():
    """Scoped to docs (or to ADRs, as `zg adr check --suggest` searches), nothing is demoted: the scores
    keep the meaning a --min-score or a suggestion threshold relies on."""
    prose = [c for c in _chunks() if c.fields["language"] != "go"]
    plain = rerank(
        "how routes are grouped and registered",
        _chunks_like(prose),
        RerankSettings(prose_penalty=1.0),
    )
    ranked = rerank("how routes are grouped and registered", _chunks_like(prose))
    assert [(c.id, c.score) for c in ranked] == [(c.id, c.score) for c in plain]


def _chunks_like(chunks: list[Candidate]) -> list[Candidate]:
    return [Candidate(id=c.id, fields=dict(c.fields), fused=c.fused) for c in chunks]


def test_code_the_language_table_does_not_know_is_not_prose():
    """An extensionless script or a language without a grammar is code, not documentation."""
    script = Candidate(
        id="bin/deploy",
        fused=0.050,
        fields={
            "path": "bin/deploy",
            "start_line": 1,
            "end_line": 30,
            "symbol": "",
            "names": [],
            "symbol_kind": "",
            "scope": "",
            "language": "text",
            "content": "routes are grouped and registered",
        },
    )
    ranked = rerank("how routes are grouped and registered", [script, *_chunks()])
    assert ranked[0].id == "bin/deploy"
