"""Adding a language is one registry record: a toy language (Gleam's grammar from tree-sitter-language-pack,
which zg does not list, under the extension `.toy`) registered by a fixture is chunked and indexed by
`zg index` (and counted by `zg status`), found by `zg search`, filtered by `-t toy`, resolved by `zg callers` and checked by `zg doctor`,
with no other change. The commands run in this process (direct mode), where the fixture registered it."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from corpus import make_repo
from zgrep.chunking import extract_symbols
from zgrep.cli.main import main
from zgrep.languages.registry import (
    LANGUAGES,
    TYPES,
    detect_language,
    register,
    samples,
    unregister,
)
from zgrep.languages.spec import ChunkSpec, Language
from zgrep.types import Definition

TOY = Language(
    "toy",
    extensions=(".toy",),
    types={"toy": ("*.toy",)},
    chunking=ChunkSpec("gleam", defs={"function": "function"}),
    sample="fn f() { 1 }\n",
)

RETRY = """\
import net/clock

/// Retries a flaky call, waiting twice as long after every failure.
pub fn retry_with_backoff(attempts: Int) -> Int {
  let delay = backoff_delay(attempts)
  clock.sleep(delay)
  delay * 2
}

fn backoff_delay(attempts: Int) -> Int {
  attempts * attempts + 100
}
"""

SHAPES = """\
pub fn area_of_circle(radius: Int) -> Int {
  3 * radius * radius
}
"""

PYTHON = '''\
def retry_with_backoff_py(attempts):
    """Retry with exponential backoff (the Python twin)."""
    return [2 ** n for n in range(attempts)]
'''


@pytest.fixture
def toy() -> Iterator[Language]:
    """The toy language, registered for one test."""
    register(TOY)
    try:
        yield TOY
    finally:
        unregister(TOY.name)


@pytest.fixture
def toy_repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, toy: Language) -> Path:
    root = make_repo(
        tmp_path / "repo",
        {"src/retry.toy": RETRY, "src/shapes.toy": SHAPES, "src/retry.py": PYTHON},
    )
    monkeypatch.chdir(root)
    monkeypatch.setenv("ZG_MODE", "direct")
    return root


def zg(*args: str, code: int = 0) -> Any:
    """`zg ARGS` in this process; its parsed `--json` output (the text without --json)."""
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    assert result.exit_code == code, (args, result.output)
    return json.loads(result.stdout) if "--json" in args else result.stdout


def test_a_registered_language_is_indexed_searched_filtered_and_related(toy_repo: Path) -> None:
    report = zg("index", "--json")
    assert report["files"] == 3 and report["skipped"] == {}
    assert zg("status", "--json")["languages"] == {"toy": 2, "python": 1}

    hits = zg("search", "--json", "retry a flaky call, waiting longer after every failure")["hits"]
    assert hits[0]["path"] == "src/retry.toy" and hits[0]["symbol"] == "retry_with_backoff", hits[0]
    assert hits[0]["language"] == "toy" and hits[0]["symbol_kind"] == "function"
    assert extract_symbols(RETRY, "toy") == [
        Definition("retry_with_backoff", "function", 4, 8),
        Definition("backoff_delay", "function", 10, 12),
    ]

    typed = zg("search", "--json", "-t", "toy", "retry with backoff")["hits"]
    assert typed and {h["path"] for h in typed} <= {"src/retry.toy", "src/shapes.toy"}
    untyped = zg("search", "--json", "-T", "toy", "retry with backoff")["hits"]
    assert untyped and {h["path"] for h in untyped} == {"src/retry.py"}
    assert "toy: *.toy" in zg("search", "--type-list").splitlines()

    circle = zg("search", "--json", "area of a circle")["hits"]
    assert (circle[0]["path"], circle[0]["symbol"], circle[0]["start_line"]) == (
        "src/shapes.toy",
        "area_of_circle",
        1,
    )

    callers = zg("callers", "--json", "backoff_delay")["callers"]
    assert [(c["path"], c["symbol"], c["edge"]) for c in callers] == [
        ("src/retry.toy", "retry_with_backoff", "call")
    ]


def test_zg_doctor_checks_the_records_sample(toy_repo: Path) -> None:
    checks = {c["name"]: c for c in zg("doctor", "--json")}
    assert (
        checks["grammars"]["ok"]
        and checks["grammars"]["detail"] == f"{len(samples())} grammars parse"
    )
    assert "toy" in samples()
    unregister("toy")
    register(
        Language(
            "toy",
            extensions=(".toy",),
            types={"toy": ("*.toy",)},
            chunking=TOY.chunking,
            sample="let x = 1\n",
        )
    )  # a sample without a definition: the grammar check names it
    checks = {c["name"]: c for c in zg("doctor", "--json", code=1)}
    assert not checks["grammars"]["ok"] and checks["grammars"]["detail"].endswith(
        "grammars for: toy"
    )


def test_a_record_may_not_claim_what_another_has(toy: Language) -> None:
    assert detect_language("a/b.TOY") == "toy" and TYPES["toy"] == ("*.toy",) and "toy" in LANGUAGES
    for clash, named in (
        (Language("toy"), "language 'toy'"),
        (Language("gleam", extensions=(".py",)), "'.py'"),
        (Language("gleam", filenames=("makefile",)), "'makefile'"),
        (Language("gleam", types={"py": ("*.gleam",)}), "type 'py'"),
    ):
        with pytest.raises(ValueError, match=re.escape(named)):
            register(clash)
    with pytest.raises(ValueError, match="needs a doctor sample"):
        register(Language("gleam", chunking=TOY.chunking))
    assert "gleam" not in LANGUAGES
