"""The path route's file choice: query words share a 3+ character prefix with a file's stem or
directory (either way round), a code-like name must spell a stem whole; most shared words first,
then the shorter path."""

from __future__ import annotations

from zgrep.search.rank import Candidate, path_matches, rerank

PATHS = [
    "django/db/migrations/executor.py",
    "django/db/migrations/migration.py",
    "django/contrib/auth/hashers.py",
    "django/contrib/auth/password_validation.py",
    "django/middleware/csrf.py",
    "django/utils/crypto.py",
    "rich/force_color.py",
    "rich/color.py",
    "docs/ref/csrf.txt",
    "django/template/base.py",
    "django/template/context.py",
    "tests/migrations/test_executor.py",
]


def test_words_match_stems_and_directories_by_shared_prefix():
    assert path_matches("how are database migrations applied", PATHS, 3) == [
        "django/db/migrations/executor.py",
        "django/db/migrations/migration.py",
        "tests/migrations/test_executor.py",
    ]
    # `password` names a stem part, `authentication` starts with the directory `auth`; `hashing` and
    # `hashers` only share `hash`, which is neither word whole
    assert path_matches("password hashing for authentication", PATHS, 2) == [
        "django/contrib/auth/password_validation.py",
        "django/contrib/auth/hashers.py",
    ]
    assert path_matches("hash passwords", PATHS, 2) == [
        "django/contrib/auth/hashers.py",
        "django/contrib/auth/password_validation.py",
    ]
    assert path_matches("csrf token check", PATHS, 5) == [
        "docs/ref/csrf.txt",
        "django/middleware/csrf.py",
    ]


def test_code_names_must_spell_a_stem_whole():
    assert path_matches("FORCE_COLOR", PATHS, 5) == ["rich/force_color.py"]
    assert path_matches("ab", PATHS, 5) == []  # no word of three characters


def test_same_answer_every_time_for_the_same_files():
    first = path_matches("template context", PATHS, 5)
    assert (
        first
        == path_matches("template context", list(PATHS), 5)
        == ["django/template/context.py", "django/template/base.py"]
    )


def _named(path: str, fused: float) -> Candidate:
    fields = {
        "path": path,
        "start_line": 1,
        "end_line": 30,
        "symbol": "",
        "names": [],
        "symbol_kind": "module",
        "scope": "",
        "language": "typescript",
        "content": "export const x = 1\n",
    }
    return Candidate(id=path, fields=fields, fused=fused)


def test_a_file_the_query_names_whole_outranks_one_whose_name_says_more() -> None:
    # trpc: "procedures" names procedure.ts; procedureBuilder.ts only half of it (and BM25 liked it more)
    chunks = [_named("src/core/procedureBuilder.ts", 0.050), _named("src/core/procedure.ts", 0.048)]
    ranked = [c.fields["path"] for c in rerank("how procedures are defined and chained", chunks)]
    assert ranked[0] == "src/core/procedure.ts"


def test_a_directory_index_file_is_named_by_its_directory() -> None:
    # axum: routing/mod.rs is the routing module; path_router.rs only sits in its folder
    chunks = [
        _named("axum/src/routing/path_router.rs", 0.050),
        _named("axum/src/routing/mod.rs", 0.045),
    ]
    ranked = [c.fields["path"] for c in rerank("how routing merges nested routes", chunks)]
    assert ranked[0] == "axum/src/routing/mod.rs"


def test_a_name_that_abbreviates_a_query_word_matches_it() -> None:
    # flask's ctx.py for "request context handling", zig-clap's args.zig for "process arguments"
    paths = [
        "src/flask/ctx.py",
        "src/flask/app.py",
        "src/flask/config.py",
        "clap/args.zig",
        "clap/parsers.zig",
        "lib/cfg.rs",
        "lib/message.rs",
    ]
    assert path_matches("request context handling", paths, 5) == ["src/flask/ctx.py"]
    assert path_matches("iterates over process arguments", paths, 5) == ["clap/args.zig"]
    assert path_matches("configuration loading", paths, 5) == ["lib/cfg.rs", "src/flask/config.py"]
    ranked = [
        c.fields["path"]
        for c in rerank(
            "request context handling",
            [_named("src/flask/app.py", 0.05), _named("src/flask/ctx.py", 0.04)],
        )
    ]
    assert ranked[0] == "src/flask/ctx.py"


def test_a_short_word_with_vowels_is_not_taken_for_an_abbreviation() -> None:
    # `set` is spelt inside "selected", `core` inside "coverage", `chi` inside "chains": words, not abbreviations
    paths = ["lua/telescope/set.lua", "packages/vitest/src/core.ts", "chi.go", "lib/ctx.rb"]
    assert path_matches("render a selected entry", paths, 5) == []
    assert path_matches("coverage provider", paths, 5) == []
    assert path_matches("how middleware chains are composed", paths, 5) == []
    assert path_matches("cx", paths, 5) == []
