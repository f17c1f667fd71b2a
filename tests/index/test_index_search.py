"""`zg index` and `zg search` on a real git repository with a real Milvus Lite index.

The read-only tests share one indexed workspace (module scope); the incremental tests each
build their own small repository because they change it.
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from conftest import git
from corpus import (
    FILES,
    assert_one_line_error,
    engine_index,
    json_out,
    make_repo,
    run_zg,
    state_files,
    store_rows,
    user_env,
    write_files,
)
from zgrep.workspace import FORMAT_VERSION, SCHEMA_VERSION

HIT_FIELDS = {
    "path",
    "start_line",
    "end_line",
    "score",
    "symbol",
    "symbol_kind",
    "scope",
    "language",
    "matched_by",
    "preview",
    "preview_start_line",
}
ANSI = re.compile(r"\x1b\[[0-9;]*m")

PARAPHRASES = {
    "how are retries with exponential backoff done": ("src/net/retry.py", "retry_with_backoff"),
    "read the yaml configuration file": ("src/config/loader.go", "ParseConfig"),
    "fill an html template with escaped values": ("web/render.js", "renderTemplate"),
    "cyclic redundancy check of bytes": ("src/checksum.rs", "crc32_checksum"),
    "sign the session cookie": ("src/auth/users.py", "SessionStore"),
    "why is startup slow": ("docs/guide.md", "Troubleshooting slow startup"),
}


@pytest.fixture(scope="module")
def ws(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The corpus repository, indexed once by `zg index --json`."""
    base = tmp_path_factory.mktemp("indexed")
    root = make_repo(base / "repo")
    env = user_env(base / "user")
    proc = run_zg("index", "--json", cwd=root, env=env)
    assert proc.returncode == 0, proc.stderr
    return {"root": root, "env": env, "report": json.loads(proc.stdout)}


def zg_ws(ws: dict[str, Any], *args: str) -> Any:
    return run_zg(*args, cwd=ws["root"], env=ws["env"])


def engine_search(root: Path, query: str | list[str], **args: Any) -> dict[str, Any]:
    """One search through the Engine in this process (what `zg search` sends), index not refreshed."""
    from zgrep.dispatch import handle
    from zgrep.engine import Engine

    engine = Engine(root)
    try:
        queries = [query] if isinstance(query, str) else query
        return handle(engine, "search", {"queries": queries, "refresh": "off", **args})
    finally:
        engine.close()


def paths_of(result: dict[str, Any]) -> list[str]:
    return [h["path"] for h in result["hits"]]


# --- indexing the corpus -------------------------------------------------------------------------------------


def test_index_reports_what_it_did(ws):
    report = ws["report"]
    assert report["changed"] == len(FILES)
    assert report["files"] == len(FILES)
    assert report["deleted"] == 0 and report["unchanged"] == 0 and report["skipped"] == {}
    assert report["chunks"] >= len(FILES)
    assert (
        report["embedded"] == report["chunks"]
    )  # nothing cached yet, every chunk content distinct
    assert report["mode"] == "direct"


def test_human_index_report_is_one_summary_line(ws):
    proc = zg_ws(ws, "index")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith(
        f"indexed 0 changed files, removed 0, {len(FILES)} unchanged; skipped: none;"
    )
    assert f"{len(FILES)} files in the index" in proc.stdout


# --- ranking -------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def paraphrase_result(ws) -> dict[str, Any]:
    args = [a for q in PARAPHRASES for a in ("-q", q)]
    return json_out(zg_ws(ws, "search", *args, "--json"))


@pytest.mark.parametrize("query", list(PARAPHRASES))
def test_paraphrase_finds_the_right_definition_first(paraphrase_result, query):
    group = next(g for g in paraphrase_result["groups"] if g["query"] == query)
    top = group["hits"][0]
    assert (top["path"], top["symbol"]) == PARAPHRASES[query], group["hits"][:3]


def test_small_definitions_merged_into_one_chunk_stay_findable_by_name(tmp_path):
    """Tiny sibling functions share a chunk, but each name still finds it and labels the hit."""
    users = "".join(
        f"function {n}(u) {{ return u.{n}; }}\n"
        for n in ("parseUrl", "getUserName", "getUserEmail")
    )
    root = make_repo(
        tmp_path / "repo",
        {"users.js": users, "other.py": "def name_of(user):\n    return user.name\n"},
    )
    env = user_env(tmp_path / "user")
    assert run_zg("index", cwd=root, env=env).returncode == 0
    top = json_out(run_zg("search", "getUserEmail", "--json", cwd=root, env=env))["hits"][0]
    assert (top["path"], top["symbol"], top["start_line"], top["end_line"]) == (
        "users.js",
        "getUserEmail",
        1,
        3,
    )
    assert "symbol" in top["matched_by"]


def test_a_partial_index_does_not_claim_a_head_it_did_not_cover(tmp_path):
    """A run over some paths (a hook) moves the indexed commit to HEAD only when it covered every change."""
    root = make_repo(tmp_path / "repo", {"a.py": "def a():\n    return 1\n"})
    env = user_env(tmp_path / "user")
    assert run_zg("index", cwd=root, env=env).returncode == 0
    start = git(root, "rev-parse", "HEAD").strip()
    for name in ("x.py", "y.py"):
        (root / name).write_text(f"def {name[0]}_func():\n    return 2\n")
        git(root, "add", name)
        git(root, "commit", "-q", "-m", name)
    head = git(root, "rev-parse", "HEAD").strip()
    assert run_zg("index", "--paths-from", "-", cwd=root, env=env, input="y.py\n").returncode == 0
    status = json_out(run_zg("status", "--json", cwd=root, env=env))
    assert (status["indexed_commit"], status["changed_files"], status["fresh"]) == (start, 1, False)
    assert run_zg("index", "--changed", f"{start}..HEAD", cwd=root, env=env).returncode == 0
    status = json_out(run_zg("status", "--json", cwd=root, env=env))
    assert (status["indexed_commit"], status["changed_files"], status["fresh"]) == (head, 0, True)


def test_partial_runs_that_together_cover_head_record_it(tmp_path):
    """Commits arriving during a hook pass: once a later pass leaves every changed path indexed at its
    current content, the recorded commit advances to HEAD (it used to stay behind for good)."""
    root = make_repo(tmp_path / "repo", {"a.py": "def a():\n    return 1\n"})
    env = user_env(tmp_path / "user")
    assert run_zg("index", cwd=root, env=env).returncode == 0
    start = git(root, "rev-parse", "HEAD").strip()
    for name in ("x.py", "y.py", "z.py"):
        (root / name).write_text(f"def {name[0]}_func():\n    return 2\n")
        git(root, "add", name)
        git(root, "commit", "-q", "-m", name)
    head = git(root, "rev-parse", "HEAD").strip()
    assert (
        run_zg("index", "--paths-from", "-", cwd=root, env=env, input="x.py\ny.py\n").returncode
        == 0
    )
    assert json_out(run_zg("status", "--json", cwd=root, env=env))["indexed_commit"] == start
    assert run_zg("index", "--paths-from", "-", cwd=root, env=env, input="z.py\n").returncode == 0
    status = json_out(run_zg("status", "--json", cwd=root, env=env))
    assert (status["indexed_commit"], status["stale_vs_head"], status["fresh"]) == (
        head,
        False,
        True,
    )


def test_identifier_parts_match_by_keyword(ws):
    """`getUserName` is found by "user name" through BM25 alone (identifiers are split)."""
    result = json_out(zg_ws(ws, "search", "user name", "--mode-search", "lexical", "--json"))
    top = result["hits"][0]
    assert (top["path"], top["symbol"]) == ("src/auth/users.py", "getUserName")
    assert "lexical" in top["matched_by"] and "symbol" not in top["matched_by"]


# --- JSON contract -------------------------------------------------------------------------------------------


def test_single_query_json_contract(ws):
    proc = zg_ws(ws, "search", "retry", "with", "backoff", "--json")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert list(doc) == ["query", "root", "mode", "took_ms", "hits"]
    assert doc["query"] == "retry with backoff"  # positional words form one query
    assert doc["root"] == str(ws["root"])
    assert doc["mode"] == "direct"
    assert isinstance(doc["took_ms"], (int, float)) and doc["took_ms"] >= 0
    assert 0 < len(doc["hits"]) <= 10
    scores = [h["score"] for h in doc["hits"]]
    assert scores == sorted(scores, reverse=True)
    for hit in doc["hits"]:
        assert set(hit) == HIT_FIELDS
        assert hit["path"] in FILES  # relative, `/`-separated
        assert 1 <= hit["start_line"] <= hit["end_line"] <= FILES[hit["path"]].count("\n")
        assert 0 <= hit["score"] <= 1
        assert hit["symbol_kind"] in (
            "module",
            "class",
            "interface",
            "function",
            "value",
            "alias",
            "section",
        )
        assert hit["language"] in ("python", "go", "javascript", "rust", "markdown")
        assert hit["matched_by"] and set(hit["matched_by"]) <= {
            "lexical",
            "semantic",
            "symbol",
            "path",
        }
        assert isinstance(hit["preview"], str)


def test_multi_query_json_groups_and_distinct_locations(paraphrase_result, ws):
    doc = paraphrase_result
    assert list(doc) == ["root", "mode", "took_ms", "groups", "distinct_locations"]
    assert doc["root"] == str(ws["root"]) and doc["mode"] == "direct"
    assert [g["query"] for g in doc["groups"]] == list(PARAPHRASES)
    for group in doc["groups"]:
        assert list(group) == ["query", "hits"]
        assert all(set(h) == HIT_FIELDS for h in group["hits"])
    locations = {
        (h["path"], h["start_line"], h["end_line"]) for g in doc["groups"] for h in g["hits"]
    }
    total = sum(len(g["hits"]) for g in doc["groups"])
    assert (
        doc["distinct_locations"] == len(locations) < total
    )  # the groups overlap; duplicates counted once


def test_jsonl_is_one_hit_per_line_with_its_query(ws):
    proc = zg_ws(
        ws,
        "search",
        "-q",
        "user name",
        "-q",
        "yaml config",
        "-n",
        "3",
        "--jsonl",
        "--preview",
        "none",
        "-g",
        "!*.go",
    )
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert len(lines) == 6
    hits = [json.loads(line) for line in lines]
    assert [h["query"] for h in hits] == ["user name"] * 3 + ["yaml config"] * 3
    assert all(set(h) == HIT_FIELDS | {"query"} for h in hits)
    assert all(h["preview"] == "" and not h["path"].endswith(".go") for h in hits)


# --- human output --------------------------------------------------------------------------------------------


def test_human_output_has_grep_headers_and_no_colour_when_piped(ws):
    proc = zg_ws(ws, "search", "crc32 checksum", "-n", "2")
    assert proc.returncode == 0, proc.stderr
    assert not ANSI.search(proc.stdout)
    first = proc.stdout.splitlines()[0]
    # the file's header comment (lines 1-2) adjoins the function across a blank line: one span
    assert re.match(r"^src/checksum\.rs:1-14  crc32_checksum \(function\)  \d\.\d{3}$", first), (
        first
    )
    # preview lines are numbered from the span's first line
    assert "    3: pub fn crc32_checksum(data: &[u8]) -> u32 {" in proc.stdout.splitlines()


def test_colour_only_when_asked_or_on_a_tty(ws):
    proc = zg_ws(ws, "search", "crc32 checksum", "-n", "1", "--color", "always")
    assert proc.returncode == 0, proc.stderr
    assert ANSI.search(proc.stdout)
    assert (
        ANSI.sub("", proc.stdout).splitlines()[0].startswith("src/checksum.rs:1-14")
    )  # the file's head comment joins


# --- exit codes ----------------------------------------------------------------------------------------------


def test_exit_1_when_a_filter_admits_nothing(ws):
    proc = zg_ws(ws, "search", "retry", "-g", "*.nothing", "--json")
    assert proc.returncode == 1, proc.stderr
    assert json.loads(proc.stdout)["hits"] == []
    assert proc.stderr == ""


def test_exit_2_on_an_unknown_file_type(ws):
    assert_one_line_error(
        zg_ws(ws, "search", "retry", "-t", "nosuchtype"), "unknown file type 'nosuchtype'"
    )


# --- previews, filters and routes (through the Engine, as `zg search` calls it) -----------------------------


def test_preview_none_short_full(ws):
    root = ws["root"]
    full = engine_search(root, "retry with backoff", preview="full", limit=1)["hits"][0]
    short = engine_search(root, "retry with backoff", preview="short", limit=1)["hits"][0]
    none = engine_search(root, "retry with backoff", preview="none", limit=1)["hits"][0]
    assert full["path"] == short["path"] == none["path"] == "src/net/retry.py"
    lines = FILES["src/net/retry.py"].splitlines()
    assert full["preview"].splitlines() == lines[full["start_line"] - 1 : full["end_line"]]
    first = short["preview_start_line"]  # the definition the hit is labelled with, inside its range
    assert (
        lines[first - 1].startswith("def retry_with_backoff(")
        and full["preview_start_line"] == full["start_line"]
    )
    assert short["preview"].splitlines() == lines[first - 1 : first + 3]
    assert none["preview"] == ""


def test_glob_negation_excludes_tests(ws):
    root = ws["root"]
    assert "tests/test_retry.py" in paths_of(engine_search(root, "retry attempts"))
    hits = paths_of(engine_search(root, "retry attempts", globs=["!tests/**"]))
    assert hits and "tests/test_retry.py" not in hits


def test_glob_without_slash_matches_file_names_anywhere(ws):
    hits = paths_of(engine_search(ws["root"], "retry", globs=["*.py"]))
    assert hits and all(p.endswith(".py") for p in hits)
    assert {"src/net/retry.py", "tests/test_retry.py"} <= set(hits)


def test_iglob_is_case_insensitive(ws):
    root = ws["root"]
    assert engine_search(root, "render template", globs=["*.JS"])["hits"] == []
    assert set(paths_of(engine_search(root, "render template", iglobs=["*.JS"]))) == {
        "web/render.js"
    }


def test_type_and_type_not(ws):
    root = ws["root"]
    assert set(paths_of(engine_search(root, "configuration", types=["go"]))) == {
        "src/config/loader.go"
    }
    hits = paths_of(engine_search(root, "configuration", types_not=["go", "md"]))
    assert hits and not any(p.endswith((".go", ".md")) for p in hits)


def test_symbol_type_filter(ws):
    result = engine_search(ws["root"], "session cookie user", symbol_types=["class"])
    assert result["hits"] and {h["symbol_kind"] for h in result["hits"]} == {"class"}
    assert result["hits"][0]["symbol"] == "SessionStore"


def test_path_scope(ws):
    hits = paths_of(engine_search(ws["root"], "retry", paths=["src/net"]))
    assert hits == ["src/net/retry.py"] * len(hits) and hits


def test_limit(ws):
    root = ws["root"]
    assert len(engine_search(root, "the", limit=2)["hits"]) == 2
    many = engine_search(root, "function data value", limit=50)[
        "hits"
    ]  # adjoining chunks merge: fewer spans
    assert len(engine_search(root, "function data value", limit=3)["hits"]) == 3 < len(many)


def test_min_score_and_min_score_diff(ws):
    root = ws["root"]
    everything = engine_search(root, "retry with exponential backoff")["hits"]
    assert len(everything) > 3
    best = everything[0]["score"]
    floor = everything[2]["score"]
    kept = engine_search(root, "retry with exponential backoff", min_score=floor)["hits"]
    assert kept and all(h["score"] >= floor for h in kept) and len(kept) < len(everything)
    near = engine_search(root, "retry with exponential backoff", min_score_diff=0.01)["hits"]
    assert near and all(best - h["score"] <= 0.01 for h in near) and len(near) < len(everything)
    from zgrep.service import ZgError

    with pytest.raises(ZgError, match="between 0 and 1"):
        engine_search(root, "retry with exponential backoff", min_score=1.01)


def test_path_filters_past_the_expression_limit_apply_to_candidates(ws, monkeypatch):
    root = ws["root"]
    unfiltered = {
        h["path"] for h in engine_search(root, "retry with exponential backoff", limit=50)["hits"]
    }
    excluded = "src/net/retry.py"
    assert excluded in unfiltered
    monkeypatch.setattr("zgrep.search.filters.MAX_PATHS_IN_EXPR", 1)
    hits = engine_search(root, "retry with exponential backoff", globs=[f"!{excluded}"], limit=50)[
        "hits"
    ]
    assert hits and excluded not in {h["path"] for h in hits}
    only_py = engine_search(root, "retry with exponential backoff", types=["py"], limit=50)["hits"]
    assert only_py and all(h["path"].endswith(".py") for h in only_py)


def test_modified_after_filters_by_file_mtime(ws):
    root = ws["root"]
    assert engine_search(root, "retry", modified_after=4_000_000_000)["hits"] == []
    assert engine_search(root, "retry", modified_before=4_000_000_000)["hits"]


def test_search_modes_select_routes(ws):
    root = ws["root"]
    lexical = engine_search(root, "exponentially longer", search_mode="lexical")["hits"]
    semantic = engine_search(root, "exponentially longer", search_mode="semantic")["hits"]
    hybrid = engine_search(root, "exponentially longer", search_mode="hybrid")["hits"]
    assert lexical and all(set(h["matched_by"]) <= {"lexical", "symbol", "path"} for h in lexical)
    assert semantic and all(h["matched_by"] == ["semantic"] for h in semantic)
    assert any(set(h["matched_by"]) >= {"lexical", "semantic"} for h in hybrid)
    # lexical mode returns only chunks containing a query term; semantic mode ranks every chunk
    assert {h["path"] for h in lexical} == {"src/net/retry.py"}
    assert len(semantic) > len(lexical)


def test_store_holds_exactly_the_recorded_chunks(ws):
    rows = store_rows(ws["root"])
    state = state_files(ws["root"])
    assert len(rows) == sum(rec[4] for rec in state.values()) == ws["report"]["chunks"]
    assert len({r["id"] for r in rows}) == len(rows)
    assert {r["path"] for r in rows} == set(FILES)


# --- incremental indexing (each test changes its own repository) -------------------------------------------

SMALL = {
    rel: FILES[rel] for rel in ("src/net/retry.py", "src/config/loader.go", "src/auth/users.py")
}


@pytest.fixture
def small(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """A three-file repository, indexed."""
    root = make_repo(tmp_path / "small", SMALL)
    env = user_env(tmp_path / "user")
    engine_index(root)  # in this process: faster than a `zg index`, and the same Engine call
    return root, env


def index_json(
    root: Path, env: dict[str, str], *args: str, input: str | None = None
) -> dict[str, Any]:
    proc = run_zg("index", "--json", *args, cwd=root, env=env, input=input)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def search_json(root: Path, env: dict[str, str], *args: str) -> dict[str, Any]:
    return json_out(run_zg("search", *args, "--json", cwd=root, env=env))


def test_editing_one_file_rechunks_and_reembeds_only_it(small):
    root, env = small
    before = state_files(root)
    path = root / "src/net/retry.py"
    path.write_text(
        path.read_text().replace("on failure wait", "on failure (say a flaky modem) wait")
    )
    report = index_json(root, env)
    assert (report["changed"], report["deleted"], report["unchanged"]) == (1, 0, 2)
    after = state_files(root)
    assert after["src/net/retry.py"][0] != before["src/net/retry.py"][0]
    # only the edited chunk is new: its unchanged neighbours come from the vector cache
    assert report["chunks"] == after["src/net/retry.py"][4]
    assert report["embedded"] == 1
    hits = search_json(root, env, "flaky modem", "--mode-search", "lexical")["hits"]
    assert hits[0]["path"] == "src/net/retry.py" and "flaky modem" in hits[0]["preview"]


def test_unchanged_tree_does_nothing(small):
    root, env = small
    report = index_json(root, env)
    assert (report["changed"], report["deleted"], report["unchanged"], report["embedded"]) == (
        0,
        0,
        3,
        0,
    )


def test_deleting_a_file_removes_its_hits(small):
    root, env = small
    assert search_json(root, env, "yaml unmarshal", "--mode-search", "lexical")["hits"]
    (root / "src/config/loader.go").unlink()
    report = index_json(root, env)
    assert (report["changed"], report["deleted"], report["files"]) == (0, 1, 2)
    proc = run_zg(
        "search", "yaml unmarshal", "--mode-search", "lexical", "--json", cwd=root, env=env
    )
    assert proc.returncode == 1 and json.loads(proc.stdout)["hits"] == []
    assert "src/config/loader.go" not in state_files(root)


def test_renaming_a_file_reembeds_nothing(small):
    root, env = small
    git(root, "mv", "src/net/retry.py", "src/net/backoff.py")
    report = index_json(root, env)
    assert (report["changed"], report["deleted"]) == (1, 1)
    assert report["embedded"] == 0
    hits = search_json(root, env, "exponential backoff retry")["hits"]
    assert hits[0]["path"] == "src/net/backoff.py"
    assert all(h["path"] != "src/net/retry.py" for h in hits)


def test_dry_run_lists_changes_and_writes_nothing(small):
    root, env = small
    (root / "src/net/retry.py").write_text(SMALL["src/net/retry.py"] + "\n# retry budget\n")
    (root / "src/config/loader.go").unlink()
    (root / "NEW.md").write_text("# New\n\nA brand new page about zebras.\n")
    state = root / ".zgrep"
    snapshot = {p.name: p.read_bytes() for p in (state / "files.json", state / "manifest.json")}
    proc = run_zg("index", "--dry-run", cwd=root, env=env)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert "index   NEW.md" in lines and "index   src/net/retry.py" in lines
    assert "remove  src/config/loader.go" in lines
    assert lines[-1].startswith("would index 2 changed files, removed 1, 1 unchanged")
    assert {
        p.name: p.read_bytes() for p in (state / "files.json", state / "manifest.json")
    } == snapshot
    proc = run_zg(
        "search", "zebras", "--refresh", "off", "--mode-search", "lexical", cwd=root, env=env
    )
    assert proc.returncode == 1  # nothing was indexed


def test_full_rebuild_reuses_cached_vectors(small):
    root, env = small
    first = state_files(root)
    report = index_json(root, env, "--full")
    assert (report["changed"], report["unchanged"], report["embedded"]) == (3, 0, 0)
    assert report["chunks"] == sum(rec[4] for rec in first.values())
    assert len(store_rows(root)) == report["chunks"]


@pytest.mark.parametrize("damage", ["garbage", "cut short", "older format"])
def test_a_damaged_vector_cache_is_rebuilt_not_read(small, damage):
    root, env = small
    cache = root / ".zgrep" / "vectors.sqlite"
    query = ("retry with exponential backoff", "--refresh", "off", "--mode-search", "semantic")
    before = [(h["path"], h["start_line"]) for h in search_json(root, env, *query)["hits"]]
    data = cache.read_bytes()
    if damage == "garbage":
        cache.write_bytes(data[:100] + b"\xa5" * (len(data) - 100))
    elif damage == "cut short":
        cache.write_bytes(data[: len(data) // 2])
    else:  # zgrep's first format, its rows under other keys: none of them may be read
        cache.unlink()
        db = sqlite3.connect(cache)
        db.execute(
            "CREATE TABLE vectors (model TEXT NOT NULL, hash TEXT NOT NULL, dim INTEGER NOT NULL,"
            " vec BLOB NOT NULL, PRIMARY KEY (model, hash)) WITHOUT ROWID"
        )
        db.commit()
        db.close()
    report = index_json(root, env, "--full")
    assert report["embedded"] == report["chunks"] > 0
    assert [(h["path"], h["start_line"]) for h in search_json(root, env, *query)["hits"]] == before
    assert index_json(root, env, "--full")["embedded"] == 0  # cached again


def test_paths_from_stdin_indexes_just_those(small):
    root, env = small
    for rel in ("src/net/retry.py", "src/config/loader.go"):
        (root / rel).write_text(SMALL[rel] + "\n// marker zanzibar\n")
    report = index_json(root, env, "--paths-from", "-", input="src/net/retry.py\n")
    assert (report["changed"], report["unchanged"], report["deleted"]) == (1, 0, 0)
    hits = search_json(root, env, "zanzibar", "--refresh", "off", "--mode-search", "lexical")[
        "hits"
    ]
    assert {h["path"] for h in hits} == {"src/net/retry.py"}


def test_changed_range_indexes_the_commits_paths(small):
    root, env = small
    write_files(
        root,
        {
            "src/extra.py": "def quokka_count():\n    return 7\n",
            "src/auth/users.py": SMALL["src/auth/users.py"] + "\n# wombat\n",
        },
    )
    (root / "src/config/loader.go").write_text(
        SMALL["src/config/loader.go"] + "// not committed: ocelot\n"
    )
    git(root, "add", "src/extra.py", "src/auth/users.py")
    git(root, "commit", "-q", "-m", "second")
    report = index_json(root, env, "--changed", "HEAD~1..HEAD")
    assert (report["changed"], report["unchanged"]) == (2, 0)
    assert report["files"] == 4
    assert search_json(root, env, "quokka", "--refresh", "off")["hits"][0]["path"] == "src/extra.py"
    proc = run_zg(
        "search", "ocelot", "--refresh", "off", "--mode-search", "lexical", cwd=root, env=env
    )
    assert proc.returncode == 1
    bad = run_zg("index", "--changed", "nosuchrev..HEAD", cwd=root, env=env)
    assert_one_line_error(bad, "--changed nosuchrev..HEAD")


def test_search_builds_a_missing_index_unless_no_index(tmp_path):
    root = make_repo(tmp_path / "fresh", SMALL)
    env = user_env(tmp_path / "user")
    refused = run_zg("search", "retry", "--no-index", cwd=root, env=env)
    assert_one_line_error(refused, "not indexed", "zg index")
    assert not (root / ".zgrep" / "manifest.json").exists()
    proc = run_zg("search", "retry with backoff", "--json", cwd=root / "src" / "net", env=env)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["hits"][0]["path"] == "src/net/retry.py"
    assert proc.stderr == ""  # no progress noise when stderr is not a terminal
    # the state dir ignores itself: git sees nothing new
    assert (root / ".zgrep" / ".gitignore").read_text() == "*\n"
    assert git(root, "status", "--porcelain") == ""
    manifest = json.loads((root / ".zgrep" / "manifest.json").read_text())
    assert (manifest["format_version"], manifest["schema_version"]) == (
        FORMAT_VERSION,
        SCHEMA_VERSION,
    )
    assert manifest["root"] == str(root)
    assert manifest["model_id"] == "zgrep/minilm-l6-code-int8-256" and manifest["dim"] == 256
    assert manifest["milvus_uri"] == str(root / ".zgrep" / "milvus.db")
    assert manifest["complete"] is True


@pytest.mark.parametrize(
    "field,value", [("model_id", "someone/else-768"), ("format_version", 99), ("schema_version", 0)]
)
def test_incompatible_manifest_names_the_fix(small, field, value):
    root, env = small
    path = root / ".zgrep" / "manifest.json"
    manifest = json.loads(path.read_text())
    manifest[field] = value
    path.write_text(json.dumps(manifest))
    assert_one_line_error(
        run_zg("search", "retry", cwd=root, env=env), "zg index --full", str(value)
    )


def test_incompatible_index_is_refused_until_rebuilt_with_full(small):
    root, env = small
    path = root / ".zgrep" / "manifest.json"
    path.write_text(path.read_text().replace("zgrep/minilm-l6-code-int8-256", "someone/else-768"))
    assert_one_line_error(run_zg("index", cwd=root, env=env), "someone/else-768", "zg index --full")
    report = index_json(root, env, "--full")
    assert (report["changed"], report["files"]) == (3, 3)
    assert json.loads(path.read_text())["model_id"] == "zgrep/minilm-l6-code-int8-256"
    assert run_zg("search", "retry", "--refresh", "off", cwd=root, env=env).returncode == 0


def test_damaged_state_names_the_fix(small):
    root, env = small
    (root / ".zgrep" / "manifest.json").write_text("{not json")
    assert_one_line_error(
        run_zg("search", "retry", cwd=root, env=env), "damaged", "zg index --full"
    )
    assert_one_line_error(run_zg("status", cwd=root, env=env), "damaged", "zg index --full")
    assert index_json(root, env, "--full")["files"] == 3
    assert json.loads((root / ".zgrep" / "manifest.json").read_text())["complete"] is True


@pytest.mark.e2e
def test_on_a_terminal_search_shows_index_progress_and_colour(tmp_path):
    """stdout and stderr on a real pseudo-terminal: progress while the first index builds, coloured hits."""
    import pty
    import subprocess

    from conftest import ZG

    root = make_repo(tmp_path / "tty", SMALL)
    env = user_env(tmp_path / "user")
    master, slave = pty.openpty()
    try:
        proc = subprocess.Popen(
            [ZG, "search", "retry with backoff", "-n", "1"],
            cwd=root,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=slave,
            stderr=slave,
        )
        os.close(slave)
        chunks = []
        while True:
            try:
                data = os.read(master, 65536)
            except OSError:  # EIO: the child closed the terminal
                break
            if not data:
                break
            chunks.append(data)
        assert proc.wait(timeout=120) == 0
    finally:
        os.close(master)
    out = b"".join(chunks).decode("utf-8", "replace")
    assert re.search(r"indexing 3/3 files, \d+ chunks, \d+ chunks/s, ETA 0s", out), out
    assert (
        "\x1b[35msrc/net/retry.py:1-16\x1b[0m" in out
    )  # the module's head joins (only blank lines part them)


@pytest.mark.parametrize(
    "args,flag",
    [
        (("-n", "99999999999999999999999"), "--limit"),
        (("-n", "5000"), "--limit"),
        (("--modified-after", "1e308"), "--modified-after"),
        (("--modified-before", "-1e300"), "--modified-before"),
    ],
)
def test_out_of_range_numbers_are_one_line_not_a_store_error(ws, args, flag):
    proc = zg_ws(ws, "search", "retry", *args)
    assert_one_line_error(proc, flag)
    assert "Milvus" not in proc.stderr
