"""Config values are checked, not coerced: a wrong type names the key, a typo'd section or key is
one clear line with a suggestion, and environment/flag strings still parse."""

from __future__ import annotations

from pathlib import Path

import pytest

from zgrep.config import Config, ConfigError


def load(root: Path, toml: str) -> Config:
    (root / ".zgrep.toml").write_text(toml)
    return Config.load(root)


@pytest.mark.parametrize(
    "toml,message",
    [
        ("[search]\nlimit = 3.7\n", "search.limit = 3.7 is not a valid int"),
        ("[search]\nlimit = true\n", "search.limit = True is not a valid int"),
        ('[search]\nlimit = "5"\n', "search.limit = '5' is not a valid int"),
        ("[search]\ndense_weight = true\n", "search.dense_weight = True is not a valid float"),
        ("[index]\ninclude_hidden = 1\n", "index.include_hidden = 1 is not a valid bool"),
        ('[index]\ninclude_hidden = "yes"\n', "index.include_hidden = 'yes' is not a valid bool"),
        ("mode = 3\n", "mode = 3 is not a valid str"),
        (
            '[adr]\ndoc_dirs = "docs/specs"\n',
            "adr.doc_dirs = 'docs/specs' is not a valid list of strings",
        ),
        (
            '[adr]\ndoc_dirs = ["docs", 3]\n',
            "adr.doc_dirs = ['docs', 3] is not a valid list of strings",
        ),
        ("[serch]\nlimit = 5\n", "unknown section [serch]; did you mean [search]?"),
        ("[search]\nlimt = 5\n", "unknown setting 'search.limt'; did you mean search.limit?"),
        ("limit = 5\n", "unknown setting 'limit'; did you mean search.limit?"),
        ("[frobnicate]\nx = 1\n", "unknown section [frobnicate]"),
    ],
)
def test_wrong_values_are_refused_naming_the_key(tmp_path: Path, toml: str, message: str) -> None:
    with pytest.raises(ConfigError) as err:
        load(tmp_path, toml)
    assert message in str(err.value) and str(tmp_path / ".zgrep.toml") in str(err.value)
    assert "\n" not in str(err.value)


def test_right_types_load(tmp_path: Path) -> None:
    cfg = load(
        tmp_path,
        "[search]\nlimit = 5\ndense_weight = 1\n[index]\ninclude_hidden = true\n"
        '[adr]\ndoc_dirs = ["a", "b"]\n',
    )
    assert (cfg.search.limit, cfg.search.dense_weight, cfg.index.include_hidden) == (5, 1.0, True)
    assert isinstance(cfg.search.dense_weight, float) and cfg.adr.doc_dirs == ["a", "b"]


def test_environment_strings_parse_and_bad_ones_name_the_variable(
    tmp_path: Path, monkeypatch
) -> None:
    monkeypatch.setenv("ZG_SEARCH_LIMIT", "7")
    monkeypatch.setenv("ZG_INDEX_INCLUDE_HIDDEN", "yes")
    monkeypatch.setenv("ZG_ADR_DOC_DIRS", "a, b")
    cfg = Config.load(tmp_path)
    assert (cfg.search.limit, cfg.index.include_hidden, cfg.adr.doc_dirs) == (7, True, ["a", "b"])
    monkeypatch.setenv("ZG_SEARCH_LIMIT", "3.7")
    with pytest.raises(
        ConfigError, match="ZG_SEARCH_LIMIT: search.limit = '3.7' is not a valid int"
    ):
        Config.load(tmp_path)


def test_user_file_may_set_the_daemons_settings(tmp_path: Path, monkeypatch) -> None:
    user = tmp_path / "xdg" / "zgrep" / "config.toml"
    user.parent.mkdir(parents=True)
    user.write_text("[server]\nidle_timeout = 60\n")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    assert Config.load(None).server.idle_timeout == 60.0


@pytest.mark.parametrize("args", [("config", "show"), ("search", "x"), ("index",)])
def test_commands_say_it_in_one_line(tmp_path: Path, zg, args: tuple[str, ...]) -> None:
    (tmp_path / ".zgrep.toml").write_text("[serch]\nlimit = 3.7\n")
    proc = zg(*args, cwd=tmp_path)
    assert proc.returncode == 2 and proc.stdout == ""
    assert (
        proc.stderr.count("\n") == 1
        and "unknown section [serch]; did you mean [search]?" in proc.stderr
    )


def test_candidate_pool_is_bounded_so_search_stays_under_milvus_top_k(
    tmp_path: Path, monkeypatch
) -> None:
    """search.candidates is 1 to 3000 (x5 for path filters = 15,000, the widest pool --limit 1000 makes)."""
    assert (
        load(tmp_path, "[search]\ncandidates = 3000\n").search.candidates == 80
    )  # untrusted: capped
    monkeypatch.setenv("ZG_SEARCH_CANDIDATES", "3000")
    assert Config.load(tmp_path).search.candidates == 3000
    monkeypatch.delenv("ZG_SEARCH_CANDIDATES")
    for toml, message in (
        ("[search]\ncandidates = 3001\n", "search.candidates = 3001 must be 1 to 3000"),
        ("[search]\ncandidates = 0\n", "search.candidates = 0 must be 1 to 3000"),
    ):
        with pytest.raises(ConfigError, match=message) as err:
            load(tmp_path, toml)
        assert "\n" not in str(err.value)
    (tmp_path / ".zgrep.toml").unlink()
    monkeypatch.setenv("ZG_SEARCH_CANDIDATES", "1000000")
    with pytest.raises(
        ConfigError, match="ZG_SEARCH_CANDIDATES: search.candidates = 1000000 must be 1 to 3000"
    ):
        Config.load(tmp_path)


def test_default_limit_is_bounded_like_the_flag(tmp_path: Path) -> None:
    """search.limit above --limit's 1000 is refused when the config loads, naming the setting (it used to
    fail only at search time, naming a --limit flag the user never passed)."""
    assert load(tmp_path, "[search]\nlimit = 1000\n").search.limit == 1000
    with pytest.raises(ConfigError, match="search.limit = 1001 must be 1 to 1000"):
        load(tmp_path, "[search]\nlimit = 1001\n")


def test_an_untrusted_workspace_cannot_keep_an_autostarted_daemon_longer(tmp_path: Path) -> None:
    assert (
        load(tmp_path, "[server]\nautostart_idle_timeout = 1e9\n").server.autostart_idle_timeout
        == 300.0
    )
    assert (
        load(tmp_path, "[server]\nautostart_idle_timeout = 60\n").server.autostart_idle_timeout
        == 60.0
    )
