"""The `zg` command's other faces: read, status, config show, doctor, and argument errors."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from conftest import git
from corpus import FILES, assert_one_line_error, make_repo, run_zg, user_env
from zgrep.languages.registry import samples


@pytest.fixture(scope="module")
def ws(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The corpus repository, indexed, with a file outside it and symlinks pointing out and in."""
    base = tmp_path_factory.mktemp("cli")
    root = make_repo(base / "repo")
    (base / "outside.txt").write_text("secret outside the workspace\n")
    os.symlink(base / "outside.txt", root / "escape.txt")
    os.symlink("src/net/retry.py", root / "inside-link.py")
    env = user_env(base / "user")
    proc = run_zg("index", cwd=root, env=env)
    assert proc.returncode == 0, proc.stderr
    return {"root": root, "env": env, "base": base}


def zg_ws(ws: dict[str, Any], *args: str, cwd: Path | None = None, **env: str) -> Any:
    return run_zg(*args, cwd=cwd or ws["root"], env={**ws["env"], **env})


# --- zg read -------------------------------------------------------------------------------------------------


def test_read_prints_the_numbered_slice(ws):
    proc = zg_ws(ws, "read", "src/net/retry.py:6-8")
    assert proc.returncode == 0, proc.stderr
    lines = FILES["src/net/retry.py"].splitlines()
    assert proc.stdout.splitlines() == [f"{n:>6}: {lines[n - 1]}" for n in (6, 7, 8)]


def test_read_forms_of_the_range(ws):
    whole = zg_ws(ws, "read", "src/net/retry.py").stdout.splitlines()
    assert len(whole) == FILES["src/net/retry.py"].count("\n")
    assert zg_ws(ws, "read", "src/net/retry.py:3").stdout == "     3: import time\n"
    assert zg_ws(ws, "read", "src/net/retry.py:15-").stdout.splitlines() == whole[14:]
    # from a subdirectory the path is still workspace-relative
    sub = zg_ws(ws, "read", "src/net/retry.py:3", cwd=ws["root"] / "src")
    assert sub.stdout == "     3: import time\n"


def test_read_follows_a_symlink_that_stays_inside(ws):
    proc = zg_ws(ws, "read", "inside-link.py:3")
    assert proc.returncode == 0 and proc.stdout == "     3: import time\n"


@pytest.mark.parametrize(
    "location", ["../outside.txt", "src/../../outside.txt", "escape.txt:1", "/etc/passwd"]
)
def test_read_refuses_paths_outside_the_workspace(ws, location):
    proc = zg_ws(ws, "read", location)
    assert_one_line_error(proc, "refusing a path outside the workspace")
    assert "secret" not in proc.stdout and proc.stdout == ""


@pytest.mark.parametrize(
    "location,message",
    [
        ("src/net/retry.py:x-y", "bad line range"),
        ("src/net/retry.py:90-95", "outside src/net/retry.py"),
        ("src/nope.py:1-2", "cannot read src/nope.py"),
    ],
)
def test_read_bad_locations(ws, location, message):
    assert_one_line_error(zg_ws(ws, "read", location), message)


# --- zg status -----------------------------------------------------------------------------------------------


def test_status_json_fields(ws):
    proc = zg_ws(ws, "status", "--json")
    assert proc.returncode == 0, proc.stderr
    st = json.loads(proc.stdout)
    assert st["root"] == str(ws["root"]) and st["indexed"] is True
    assert st["files"] == len(FILES) + 1  # inside-link.py points inside the workspace: indexed
    assert st["chunks"] >= len(FILES)
    assert st["languages"] == {"python": 4, "go": 1, "javascript": 1, "rust": 1, "markdown": 1}
    assert st["model"] == "zgrep/minilm-l6-code-int8-256" and st["dim"] == 256
    assert st["milvus_uri"] == str(ws["root"] / ".zgrep" / "milvus.db")
    assert isinstance(st["last_indexed"], float)
    assert st["head_commit"] == git(ws["root"], "rev-parse", "HEAD").strip()
    assert st["stale_vs_head"] is False
    assert st["mode"] == "direct"
    assert st["daemon"]["running"] is False


def test_status_human_and_staleness(tmp_path):
    root = make_repo(tmp_path / "repo", {"a.py": FILES["src/net/retry.py"]})
    env = user_env(tmp_path / "user")
    proc = run_zg("status", cwd=root, env=env)
    assert (proc.returncode, proc.stdout) == (0, f"{root}: not indexed (run: zg index)\n")
    not_indexed = json.loads(run_zg("status", "--json", cwd=root, env=env).stdout)
    assert (not_indexed["indexed"], not_indexed["files"], not_indexed["chunks"]) == (False, 0, 0)
    assert run_zg("index", cwd=root, env=env).returncode == 0
    (root / "b.md").write_text("# B\n")
    git(root, "add", "b.md")
    git(root, "commit", "-q", "-m", "b")
    stale = run_zg("status", cwd=root, env=env).stdout
    assert "freshness: 1 files differ from the index (run: zg index)" in stale
    assert "files: 1" in stale and "model: zgrep/minilm-l6-code-int8-256 (256-d)" in stale
    assert "daemon: not running" in stale
    assert run_zg("index", cwd=root, env=env).returncode == 0
    fresh = run_zg("status", cwd=root, env=env).stdout
    assert "freshness: up to date with the working tree at HEAD" in fresh and "files: 2" in fresh
    # a commit of a file the index already holds moves HEAD but leaves nothing to index
    git(root, "commit", "-q", "--allow-empty", "-m", "empty")
    moved = json.loads(run_zg("status", "--json", cwd=root, env=env).stdout)
    assert (moved["fresh"], moved["changed_files"], moved["stale_vs_head"]) == (True, 0, True)


def test_status_reports_an_incompatible_index(tmp_path):
    root = make_repo(tmp_path / "repo", {"a.py": FILES["src/net/retry.py"]})
    env = user_env(tmp_path / "user")
    assert run_zg("index", cwd=root, env=env).returncode == 0
    manifest = root / ".zgrep" / "manifest.json"
    manifest.write_text(manifest.read_text().replace('"format_version": 1', '"format_version": 99'))
    proc = run_zg("status", cwd=root, env=env)
    assert proc.returncode == 1 and "PROBLEM" in proc.stdout and "zg index --full" in proc.stdout
    data = json.loads(run_zg("status", "--json", cwd=root, env=env).stdout)
    assert "zg index --full" in data["problem"] and data["fresh"] is False
    doctor = run_zg("doctor", cwd=root, env=env)
    assert doctor.returncode == 1 and "[FAIL] index" in doctor.stdout


def test_json_documents_keep_their_shape(tmp_path):
    """Where each document names its `mode`, and which escape non-ASCII text (byte-compatible output)."""
    root = make_repo(
        tmp_path / "répo",
        {"café.py": "def naïve(x):\n    return x\n\n\ndef run(v):\n    return naïve(v)\n"},
    )
    env = user_env(tmp_path / "user")
    index = run_zg("index", "--json", cwd=root, env=env)
    assert index.returncode == 0, index.stderr
    assert list(json.loads(index.stdout))[-1] == "mode" and "\\u00e9" in index.stdout
    status = run_zg("status", "--json", cwd=root, env=env).stdout
    assert list(json.loads(status))[-3:] == ["mode", "daemon", "hooks"] and "\\u00e9" in status
    callers = run_zg("callers", "naïve", "--json", cwd=root, env=env).stdout
    assert list(json.loads(callers))[:3] == ["root", "mode", "symbol"] and "répo" in callers
    trace = run_zg("trace", "naïve", "--json", cwd=root, env=env).stdout
    assert list(json.loads(trace))[:3] == ["root", "mode", "entry"] and "répo" in trace
    search = run_zg("search", "naïve", "--json", cwd=root, env=env).stdout
    assert list(json.loads(search))[:3] == ["query", "root", "mode"] and "répo" in search


# --- zg config show ------------------------------------------------------------------------------------------


def test_config_show_names_every_source(tmp_path):
    root = tmp_path / "ws"
    root.mkdir()
    env = user_env(tmp_path / "user")
    user_file = Path(env["XDG_CONFIG_HOME"]) / "zgrep" / "config.toml"
    user_file.parent.mkdir(parents=True)
    user_file.write_text('[search]\nfusion = "weighted"\nrrf_k = 10\n')
    (root / ".zgrep.toml").write_text(
        "[search]\nrrf_k = 42\nlimit = 5\n[index]\nmax_file_bytes = 2048\n"
    )
    env["ZG_SEARCH_LIMIT"] = "7"
    proc = run_zg(
        "config",
        "show",
        "--json",
        "--milvus-uri",
        "http://127.0.0.1:1",
        "--root",
        str(root),
        cwd=tmp_path,
        env=env,
    )
    assert proc.returncode == 0, proc.stderr
    shown = json.loads(proc.stdout)
    assert shown["search.fusion"] == {"value": "weighted", "source": str(user_file)}
    assert shown["search.rrf_k"] == {"value": 42, "source": str(root / ".zgrep.toml")}
    assert shown["index.max_file_bytes"] == {"value": 2048, "source": str(root / ".zgrep.toml")}
    assert shown["search.limit"] == {"value": 7, "source": "env ZG_SEARCH_LIMIT"}
    assert shown["milvus.uri"] == {"value": "http://127.0.0.1:1", "source": "flag"}
    assert shown["search.dense_weight"] == {"value": 0.6, "source": "default"}
    human = run_zg("config", "show", cwd=root, env=env).stdout.splitlines()
    assert "search.rrf_k = 42    # " + str(root / ".zgrep.toml") in human
    assert "search.limit = 7    # env ZG_SEARCH_LIMIT" in human


@pytest.mark.parametrize(
    "model,provider,name",
    [
        ("ollama:nomic-embed-text:latest", "ollama", "nomic-embed-text:latest"),
        ("openai", "openai", ""),
        ("local", "local", ""),
        ("minishlab/potion-code-16M", "local", "minishlab/potion-code-16M"),
    ],
)
def test_model_flag_is_read_as_the_embedding_factory_reads_it(tmp_path, model, provider, name):
    proc = run_zg(
        "config", "show", "--json", "--model", model, cwd=tmp_path, env=user_env(tmp_path / "user")
    )
    assert proc.returncode == 0, proc.stderr
    shown = json.loads(proc.stdout)
    assert shown["embedding.provider"] == {"value": provider, "source": "flag"}
    assert shown["embedding.model"] == {"value": name, "source": "flag"}


@pytest.mark.parametrize("model", ["cohere:embed-v3", ""])
def test_a_bad_model_flag_is_one_line(tmp_path, model):
    env = user_env(tmp_path / "user")
    for args in (("config", "show"), ("search", "x"), ("index",), ("status",)):
        assert_one_line_error(
            run_zg(*args, "--model", model, cwd=tmp_path, env=env), "--model", "local"
        )


@pytest.mark.parametrize(
    "toml,message",
    [
        ('[search]\nrrf_k = "many"\n', "search.rrf_k = 'many' is not a valid int"),
        ("[search]\nnosuch = 1\n", "unknown setting 'search.nosuch'"),
        ("[search\n", ".zgrep.toml"),
    ],
)
def test_bad_workspace_config_is_one_line(tmp_path, toml, message):
    root = tmp_path / "ws"
    root.mkdir()
    (root / ".zgrep.toml").write_text(toml)
    env = user_env(tmp_path / "user")
    for args in (("config", "show"), ("search", "x"), ("index",)):
        assert_one_line_error(run_zg(*args, cwd=root, env=env), message)


# --- zg doctor -----------------------------------------------------------------------------------------------


def test_doctor_lists_every_check_and_passes_here(ws):
    proc = zg_ws(ws, "doctor")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    assert [line.split(":")[0] for line in lines] == [
        "[ok  ] model",
        "[ok  ] milvus",
        "[ok  ] grammars",
        "[ok  ] ignore files",
        "[ok  ] index",
        "[ok  ] daemon",
        "[ok  ] hooks",
    ]
    assert (
        "BM25" in lines[1]
        and f"{len(samples())} grammars parse" in lines[2]
        and "files listed" in lines[3]
    )
    assert (
        "files indexed" in lines[4] and "not running" in lines[5] and "not installed" in lines[6]
    )  # each one


def test_doctor_checks_the_chunk_side_of_the_model_too(ws, tmp_path):
    """A query goes through the default pair's transformer alone: the doctor embeds a chunk as well, so
    a broken static table fails the model check."""
    import shutil

    import numpy as np

    from zgrep.embedding.folder import default_model_dir

    folder = tmp_path / "minilm-l6-code"
    shutil.copytree(default_model_dir(), folder)
    np.save(folder / "embeddings.npy", np.load(folder / "embeddings.npy").astype(np.float32))
    proc = zg_ws(ws, "doctor", "--json", ZG_EMBEDDING_MODEL=str(folder))
    checks = {c["name"]: c for c in json.loads(proc.stdout)}
    assert proc.returncode == 1 and checks["milvus"]["ok"], proc.stdout
    assert checks["model"]["ok"] is False and "not int8" in checks["model"]["detail"]


def test_doctor_names_the_fix_for_an_unreachable_milvus(ws):
    proc = zg_ws(ws, "doctor", "--json", ZG_MILVUS_URI="http://127.0.0.1:9")
    assert proc.returncode == 1
    checks = {c["name"]: c for c in json.loads(proc.stdout)}
    assert checks["milvus"]["ok"] is False
    assert "127.0.0.1:9" in checks["milvus"]["detail"]
    assert "ZG_MILVUS_URI" in checks["milvus"]["fix"]
    assert checks["model"]["ok"] and checks["grammars"]["ok"]


# --- argument errors -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "args,message",
    [
        (("search", "x", "--json", "--jsonl"), "--json and --jsonl cannot be combined"),
        (("search", "x", "--limit", "0"), "--limit must be at least 1"),
        (("search", "x", "--refresh", "background", "--mode", "direct"), "needs the daemon"),
        (("index", "--paths-from", "-", "--changed", "HEAD"), "cannot be combined"),
        (("index", "--paths-from", "-"), "outside the workspace"),
    ],
)
def test_bad_arguments_are_one_line_exit_2(ws, args, message):
    proc = run_zg(*args, cwd=ws["root"], env=ws["env"], input="../elsewhere.py\n")
    assert_one_line_error(proc, message)


def test_type_list_and_version(ws):
    types = zg_ws(ws, "search", "--type-list")
    assert types.returncode == 0 and "py: *.py, *.pyi" in types.stdout
    version = zg_ws(ws, "--version")
    assert version.returncode == 0 and version.stdout.startswith("zg, version ")


def test_every_command_accepts_mode():
    from click.testing import CliRunner

    from zgrep.cli.main import main

    runner = CliRunner()
    paths = []
    for name in main.list_commands(None):
        command = main.get_command(None, name)
        subs = getattr(command, "commands", None)
        paths.extend([[name, sub] for sub in subs] if subs else [[name]])
    assert len(paths) > 20
    for path in paths:
        result = runner.invoke(main, [*path, "--mode", "direct", "--help"])
        assert result.exit_code == 0, (path, result.output)
        assert "--mode" in result.output, path


@pytest.mark.parametrize(
    "args",
    [("search", "--root", "loop1", "retry"), ("status", "loop1"), ("index", "loop1")],
    ids=" ".join,
)
def test_a_symlink_loop_as_the_root_is_one_error_line(ws, tmp_path, args):
    """A root that loops back on itself (`loop1 -> loop1`) is named in one line with the system's
    reason, exit 2, whichever command (the thin client's served search included) meets it."""
    os.symlink("loop1", tmp_path / "loop1")
    proc = zg_ws(ws, *args, cwd=tmp_path)
    assert_one_line_error(proc, "loop1", "symbolic links")
