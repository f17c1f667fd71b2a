"""The path route's file choice: query words share a 3+ character prefix with a file's stem or
directory (either way round), a code-like name must spell a stem whole; most shared words first,
then the shorter path."""

from __future__ import annotations

from zgrep.search.rank import path_matches

PATHS = ["django/db/migrations/executor.py", "django/db/migrations/migration.py", "django/contrib/auth/hashers.py",
         "django/contrib/auth/password_validation.py", "django/middleware/csrf.py", "django/utils/crypto.py",
         "rich/force_color.py", "rich/color.py", "docs/ref/csrf.txt", "django/template/base.py",
         "django/template/context.py", "tests/migrations/test_executor.py"]


def test_words_match_stems_and_directories_by_shared_prefix():
    assert path_matches("how are database migrations applied", PATHS, 3) == [
        "django/db/migrations/executor.py", "django/db/migrations/migration.py", "tests/migrations/test_executor.py"]
    # `password` names a stem part, `authentication` starts with the directory `auth`; `hashing` and
    # `hashers` only share `hash`, which is neither word whole
    assert path_matches("password hashing for authentication", PATHS, 2) == [
        "django/contrib/auth/password_validation.py", "django/contrib/auth/hashers.py"]
    assert path_matches("hash passwords", PATHS, 2) == ["django/contrib/auth/hashers.py",
                                                        "django/contrib/auth/password_validation.py"]
    assert path_matches("csrf token check", PATHS, 5) == ["docs/ref/csrf.txt", "django/middleware/csrf.py"]


def test_code_names_must_spell_a_stem_whole():
    assert path_matches("FORCE_COLOR", PATHS, 5) == ["rich/force_color.py"]
    assert path_matches("ab", PATHS, 5) == []  # no word of three characters


def test_same_answer_every_time_for_the_same_files():
    first = path_matches("template context", PATHS, 5)
    assert first == path_matches("template context", list(PATHS), 5) == [
        "django/template/context.py", "django/template/base.py"]
